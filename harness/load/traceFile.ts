// Reads a workload's trace CSV from disk, relative to the recipe's directory, and reports a bad or
// missing file as a UserError naming `workload.lengths.trace` and the value.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UserError, describeValue } from '../util/errors.ts';
import { parseTraceCsv, type TraceTable } from './traceCsv.ts';
import type { WorkloadSpec } from './workloadSpec.ts';

/** Loads the trace the workload names (undefined when it names none); `baseDir` is the recipe's folder. */
export function loadWorkloadTrace(workload: WorkloadSpec, baseDir: string, label = 'recipe'): TraceTable | undefined {
  if (workload.lengths.kind !== 'trace') return undefined;
  const file = resolve(baseDir, workload.lengths.trace);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(
      `${label}: workload.lengths.trace must be a readable CSV file relative to the recipe (${code === 'ENOENT' ? 'no such file' : code}), got ${describeValue(workload.lengths.trace)}`,
    );
  }
  const table = parseTraceCsv(text, workload.lengths.maxTotalTokens);
  if ('error' in table) throw new UserError(`${label}: workload.lengths.trace ${table.error}, got ${describeValue(workload.lengths.trace)}`);
  if (workload.arrivals.process === 'trace' && !table.arrivedS) {
    throw new UserError(`${label}: workload.arrivals.process "trace" needs an arrived_at column in ${describeValue(workload.lengths.trace)}`);
  }
  return table;
}
