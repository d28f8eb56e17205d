// The sweep file (`fluidcap sweep <sweep.yaml>`): a base recipe and a matrix over its fields, each
// combination one capacity run. This module owns the format: its schema, its field aliases and
// the messages naming the file, field and value. Reading the file is `loadSweepFile`; the rest is pure.
//
// ```yaml
// name: batch-sweep                 # optional; default: the file's name
// recipe: base.yaml                 # relative to this file, inside its directory
// matrix:                           # field → values; every combination is one run
//   maxNumSeqs: [64, 128]           # alias of target.engineArgs.maxNumSeqs
//   target.sim.timeScale: [1, 2]    # or any dotted recipe path under target, workload, profile, search, slo
// exclude:                          # combinations to leave out (a partial match excludes)
//   - { maxNumSeqs: 64, target.sim.timeScale: 2 }
// include:                          # combinations run besides the matrix (each names its own fields)
//   - { maxNumSeqs: 256, target.sim.timeScale: 1 }
// gpusPerHost: 8                    # optional: each host's GPUs, cut into sets of each run's size
// parallel: 4                       # optional: most runs at once (default: one per GPU set)
// ports: { base: 8000 }             # optional: engine port of the first GPU set; each set its own
// ```
import { basename, dirname, extname, relative, resolve, sep, isAbsolute } from 'node:path';
import { z } from 'zod';
import { UserError, describeValue } from '../util/errors.ts';
import { readYamlFile } from '../recipe/load.ts';
import { formatIssues } from '../recipe/problems.ts';
import { resolveField } from './fields.ts';
import { SIZE_BOUNDS } from '../util/sizeBounds.ts';

export { FIELD_ALIASES, resolveField } from './fields.ts';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const matrixValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()])), z.record(z.string(), z.unknown())]);

export const sweepSchema = z
  .strictObject({
    name: z.string().regex(NAME_RE, 'must be letters, digits, ".", "_" or "-"').optional(),
    description: z.string().optional(),
    recipe: z.string().min(1),
    matrix: z.record(z.string(), z.array(matrixValue).min(1)).default({}),
    exclude: z.array(z.record(z.string(), matrixValue)).default([]),
    include: z.array(z.record(z.string(), matrixValue)).default([]),
    gpusPerHost: z.number().int().positive().max(SIZE_BOUNDS.gpus.max).optional(),
    parallel: z.number().int().positive().optional(),
    ports: z.strictObject({ base: z.number().int().min(1).max(65535) }).optional(),
  })
  .superRefine((s, ctx) => {
    const keys = new Map<string, string>();
    for (const key of Object.keys(s.matrix ?? {})) {
      const field = resolveField(key);
      if (!field.ok) {
        ctx.addIssue({ code: 'custom', path: ['matrix', key], input: key, message: field.message });
        continue;
      }
      const dotted = field.path.join('.');
      const twin = keys.get(dotted);
      if (twin !== undefined) ctx.addIssue({ code: 'custom', path: ['matrix', key], input: key, message: `sets the same field as ${twin} (${dotted})` });
      keys.set(dotted, key);
      const values = s.matrix[key];
      if (Array.isArray(values) && new Set(values.map((v) => JSON.stringify(v))).size !== values.length) {
        ctx.addIssue({ code: 'custom', path: ['matrix', key], input: values, message: 'must not repeat a value' });
      }
    }
    (s.include ?? []).forEach((combo, i) => {
      if (combo === null || typeof combo !== 'object') return;
      if (Object.keys(combo).length === 0) ctx.addIssue({ code: 'custom', path: ['include', i], input: combo, message: 'must name at least one field' });
      const dotted = new Map<string, string>();
      for (const key of Object.keys(combo)) {
        const field = resolveField(key);
        if (!field.ok) {
          ctx.addIssue({ code: 'custom', path: ['include', i, key], input: key, message: field.message });
          continue;
        }
        const twin = dotted.get(field.path.join('.'));
        if (twin !== undefined) ctx.addIssue({ code: 'custom', path: ['include', i, key], input: key, message: `sets the same field as ${twin} (${field.path.join('.')})` });
        dotted.set(field.path.join('.'), key);
      }
    });
    (s.exclude ?? []).forEach((combo, i) => {
      if (combo === null || typeof combo !== 'object') return;
      const entries = Object.entries(combo);
      if (entries.length === 0) ctx.addIssue({ code: 'custom', path: ['exclude', i], input: combo, message: 'must name at least one matrix field' });
      for (const [key, value] of entries) {
        const values = s.matrix?.[key];
        if (values === undefined) {
          ctx.addIssue({ code: 'custom', path: ['exclude', i, key], input: key, message: `must name a matrix field (${Object.keys(s.matrix ?? {}).join(', ') || 'the matrix is empty'})` });
        } else if (Array.isArray(values) && !values.some((v) => JSON.stringify(v) === JSON.stringify(value))) {
          ctx.addIssue({ code: 'custom', path: ['exclude', i, key], input: value, message: `must be one of matrix.${key}'s values (${values.map((v) => JSON.stringify(v)).join(', ')})` });
        }
      }
    });
  }, { when: (p) => typeof p.value === 'object' && p.value !== null });

export type SweepBody = z.output<typeof sweepSchema>;

/** A validated sweep: its name, where it came from, and the base recipe's resolved path. */
export interface SweepFile extends SweepBody {
  name: string;
  file: string;
  dir: string;
  recipeFile: string;
}

/** Validates a decoded sweep file; every problem as `file: field message, got value (type)`. Pure. */
export function parseSweep(raw: unknown, file: string): { ok: true; sweep: SweepFile } | { ok: false; problems: string[] } {
  const result = sweepSchema.safeParse(raw);
  if (!result.success) return { ok: false, problems: formatIssues(result.error.issues, raw, file) };
  const dir = dirname(resolve(file));
  const recipeFile = resolve(dir, result.data.recipe);
  const inside = relative(dir, recipeFile);
  // The sweep directory copies the sweep file; a recipe outside its directory would not travel with it.
  if (isAbsolute(result.data.recipe) || inside.startsWith('..') || inside.split(sep).includes('..')) {
    return { ok: false, problems: [`${file}: recipe must be a path inside the sweep file's directory (${dir}), got ${describeValue(result.data.recipe)}`] };
  }
  const name = result.data.name ?? basename(file, extname(file)).replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '') ?? 'sweep';
  return { ok: true, sweep: { ...result.data, name: name || 'sweep', file, dir, recipeFile } };
}

/** Reads and validates a sweep file; throws one UserError listing every problem. */
export async function loadSweepFile(file: string): Promise<SweepFile> {
  const { raw } = await readYamlFile(file);
  const result = parseSweep(raw, file);
  if (!result.ok) {
    const n = result.problems.length;
    throw new UserError(`${file} has ${n} problem${n === 1 ? '' : 's'}:\n  ${result.problems.join('\n  ')}`);
  }
  return result.sweep;
}
