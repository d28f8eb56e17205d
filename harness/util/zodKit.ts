// Small zod building blocks shared by every recipe section, so durations, rates and percentiles
// read and fail the same way everywhere.
import { z } from 'zod';
import { checkDurationS, formatDurationS, parseDurationS } from './duration.ts';

const DURATION_HINT = 'a duration such as 25ms, 2s or 10m';

/**
 * A duration written `25ms`, `2s` or `10m` (a number needs its unit, util/duration.ts); parsed to
 * seconds. `maxS` is a field's own ceiling below the timer limit every duration has.
 */
export const durationS = (opts: { min?: number; allowZero?: boolean; maxS?: number } = {}) =>
  z
    .union([z.number(), z.string()], { error: `must be ${DURATION_HINT}` })
    .transform((v, ctx) => {
      const checked = checkDurationS(v);
      if ('problem' in checked) {
        durationIssue(ctx, checked);
        return z.NEVER;
      }
      const s = checked.s;
      const min = opts.min ?? 0;
      if (s < min || (!opts.allowZero && s === 0 && min === 0)) {
        ctx.addIssue({ code: 'custom', message: `must be a duration > ${min === 0 ? '0' : min + 's'}` });
        return z.NEVER;
      }
      if (opts.maxS !== undefined && s > opts.maxS) {
        ctx.addIssue({ code: 'custom', message: `must be a duration of at most ${formatDurationS(opts.maxS)}` });
        return z.NEVER;
      }
      return s;
    });

/**
 * Reports a duration problem; a missing unit carries `bareSeconds` (the number read as seconds),
 * which parseAcceptingBareSeconds uses for files the tool wrote before units were required.
 */
export function durationIssue(ctx: z.RefinementCtx, checked: { problem: string; bare?: number }): void {
  ctx.addIssue({ code: 'custom', message: checked.problem, ...(checked.bare === undefined ? {} : { params: { bareSeconds: checked.bare } }) });
}

/**
 * Parses what the tool itself wrote (a run's manifest, a resumed run's recipe), where a duration
 * without a unit was once read as seconds: each such value is given its `s` and parsed again, so
 * old runs stay readable while a person's recipe is held to units. Other problems are returned as
 * they are.
 */
export function parseAcceptingBareSeconds<S extends z.ZodType>(schema: S, raw: unknown): ReturnType<S['safeParse']> {
  const first = schema.safeParse(raw) as ReturnType<S['safeParse']>;
  if (first.success) return first;
  const bare = first.error.issues.flatMap((i) => (i.code === 'custom' && typeof i.params?.bareSeconds === 'number' ? [i] : []));
  if (bare.length === 0) return first;
  const copy = structuredClone(raw);
  for (const issue of bare) {
    const path = issue.path;
    let parent: unknown = copy;
    for (const key of path.slice(0, -1)) parent = (parent as Record<PropertyKey, unknown>)?.[key as string];
    if (parent === null || typeof parent !== 'object' || path.length === 0) return first;
    (parent as Record<PropertyKey, unknown>)[path[path.length - 1] as string] = `${issue.params!.bareSeconds as number}s`;
  }
  return schema.safeParse(copy) as ReturnType<S['safeParse']>;
}

/** A fraction written `10%` or `0.1`; parsed to a number in [0, 1]. */
export const fraction = () =>
  z
    .union([z.number(), z.string()], { error: 'must be a fraction such as 0.1 or 10%' })
    .transform((v, ctx) => {
      const n = typeof v === 'number' ? v : /^\s*\d+(\.\d+)?\s*%\s*$/.test(v) ? parseFloat(v) / 100 : NaN;
      if (!(n >= 0 && n <= 1)) {
        ctx.addIssue({ code: 'custom', message: 'must be a fraction between 0 and 1 (or 0%–100%)' });
        return z.NEVER;
      }
      return n;
    });

export const positiveInt = () => z.number().int().positive();
