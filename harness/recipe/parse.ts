// Parse, then trust: a raw recipe (already YAML-decoded) becomes a resolved Recipe or the full list
// of problems, each naming the file, the field and the value. Nothing downstream re-checks it.
import { z } from 'zod';
import { targetSchema } from '../provision/targetSpec.ts';
import { workloadSchema } from '../load/workloadSpec.ts';
import { sloSchema } from '../metrics/slo.ts';
import { loadSchema, profileSchema, searchSchema } from './sections.ts';
import { formatIssues } from './problems.ts';
import { parseAcceptingBareSeconds } from '../util/zodKit.ts';

export const recipeSchema = z.strictObject({
  // It names the run directory and the engine container (with a timestamp), so it stays short.
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, ".", "_" or "-"')
    .max(64, 'must be at most 64 characters (it names the run directory and the container)'),
  description: z.string().optional(),
  target: targetSchema,
  workload: workloadSchema,
  profile: profileSchema.prefault({}),
  search: searchSchema.prefault({}),
  slo: sloSchema,
  load: loadSchema.optional(),
}).superRefine((r, ctx) => {
  // What an agent needs: an engine fluidcap starts in a container, whose host it can reach.
  const from = r.load?.from;
  if (from === 'agent' && r.target.engine === 'endpoint') {
    ctx.addIssue({ code: 'custom', path: ['load', 'from'], input: from, message: 'must be client for engine endpoint: an agent stands beside an engine fluidcap launches in a container' });
  } else if (from === 'agent' && r.target.engine === 'sim' && r.target.image === undefined) {
    ctx.addIssue({ code: 'custom', path: ['load', 'from'], input: from, message: 'must be client without target.image: the simulated engine then runs inside this process, with no container to stand beside' });
  }
  if ((r.load?.agents ?? 1) > 1 && from === 'client') {
    ctx.addIssue({ code: 'custom', path: ['load', 'agents'], input: r.load!.agents, message: 'must be 1 with load.from: client (this process is the only client)' });
  }
});

export type RecipeBody = z.output<typeof recipeSchema>;

/** Where a recipe came from: reports quote it and relative paths resolve against `dir`. */
export interface RecipeSource {
  file: string;
  dir: string;
  /** The text of each SLO as the user wrote it, keyed by SLO name (`ttft: { percentile: 90, max: 2s }`). */
  sloText: Record<string, string>;
}

export type Recipe = RecipeBody & { source: RecipeSource };

export type ParseResult = { ok: true; recipe: Recipe } | { ok: false; problems: string[] };

/**
 * Validates a decoded recipe; returns every problem at once. Pure: no file or network access.
 * `storedRun` reads a recipe a run already started with (resuming it): durations it gave without a
 * unit were seconds then and stay so, since the run must continue as it began.
 */
export function parseRecipe(raw: unknown, source: RecipeSource, opts: { storedRun?: boolean } = {}): ParseResult {
  const result = opts.storedRun ? parseAcceptingBareSeconds(recipeSchema, raw) : recipeSchema.safeParse(raw);
  if (!result.success) return { ok: false, problems: formatIssues(result.error.issues, raw, source.file) };
  return { ok: true, recipe: { ...result.data, source } };
}
