// Small zod building blocks shared by every recipe section, so durations, rates and percentiles
// read and fail the same way everywhere.
import { z } from 'zod';
import { checkDurationS, formatDurationS, parseDurationS } from './duration.ts';

const DURATION_HINT = 'a duration such as 25ms, 2s or 10m';

/**
 * A duration written `25ms`, `2s`, `10m` or as a number of seconds; parsed to seconds. `maxS` is
 * a field's own ceiling below the timer limit every duration has (util/duration.ts).
 */
export const durationS = (opts: { min?: number; allowZero?: boolean; maxS?: number } = {}) =>
  z
    .union([z.number(), z.string()], { error: `must be ${DURATION_HINT}` })
    .transform((v, ctx) => {
      const checked = checkDurationS(v);
      if ('problem' in checked) {
        ctx.addIssue({ code: 'custom', message: checked.problem });
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
