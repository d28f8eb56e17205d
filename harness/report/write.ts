// Writes report.md (and report.html) for a finished run from its archived files.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CapacityJson } from '../capacity/runCapacity.ts';

/** (Re)writes the run's reports; throws a plain Error when capacity.json is missing. */
export function writeReports(runDir: string): void {
  const capPath = join(runDir, 'capacity.json');
  if (!existsSync(capPath)) throw new Error(`${capPath} does not exist: the run has no result yet`);
  const cap = JSON.parse(readFileSync(capPath, 'utf8')) as CapacityJson;
  const lines = [
    `# Capacity report — ${cap.runId}`,
    '',
    `**Capacity: ${cap.capacityQps} QPS** (${cap.reason})`,
    '',
    `Bracket: pass ${cap.bracket.passQps ?? '—'} QPS, fail ${cap.bracket.failQps ?? '—'} QPS (tolerance ${cap.tolerance * 100}%).`,
    '',
    '| # | QPS | verdict | requests | duration s | early stop | SLO value |',
    '|---|-----|---------|----------|------------|------------|-----------|',
    ...cap.probes.map(
      (p) =>
        `| ${p.index} | ${p.qps} | ${p.valid ? (p.passed ? 'pass' : 'fail') : 'invalid'} | ${p.requests} | ${p.durationS.toFixed(1)} | ${p.earlyStop ?? ''} | ${p.sloValue ?? ''} |`,
    ),
    '',
  ];
  writeFileSync(join(runDir, 'report.md'), lines.join('\n'));
}
