// The recipe's `slo` section: Metron's fluidity SLO plus the baselines of the papers (TTFT, TBT,
// TPOT, E2E percentiles and scheduling delay = TTFT − predicted prefill). Parsed once into seconds
// with `S` names; every SLO keeps `source`, the text the user wrote (or canonical text such as
// `ttft p90 <= 2s`), so reports quote the SLO the user asked for, k6-threshold style.
import { z } from 'zod';
import { checkDurationS, formatDurationS } from '../util/duration.ts';
import { durationIssue } from '../util/zodKit.ts';
import { DEFAULT_TIE_RULE, type TieRule } from './fluidity.ts';

/** Fluidity SLO: at least `percentile`% of requests reach fluidity >= minFluidity. */
export interface FluiditySlo {
  tbtDeadlineS: number;
  ttftSlackS: number;
  minFluidity: number;
  percentile: number;
  /**
   * How a token exactly on its deadline counts (fluidity.ts): `met`, as Metron's code (the
   * default), or `missed`, as the paper's Algorithm 1 prints it. Absent in runs recorded before it
   * existed, which counted it met.
   */
  tieRule?: TieRule;
  source: string;
}

/** A latency baseline: the `percentile`-th percentile of the metric must be <= maxS. */
export interface PercentileSlo {
  percentile: number;
  maxS: number;
  source: string;
}

export type LatencySloName = 'ttft' | 'tbt' | 'tpot' | 'e2e' | 'schedulingDelay';
export type SloName = 'fluidity' | LatencySloName;
export const LATENCY_SLO_NAMES: readonly LatencySloName[] = ['ttft', 'tbt', 'tpot', 'e2e', 'schedulingDelay'];
export const SLO_NAMES: readonly SloName[] = ['fluidity', ...LATENCY_SLO_NAMES];

/** The resolved `slo` section (every SLO optional, at least one present). */
export interface Slo {
  fluidity?: FluiditySlo;
  ttft?: PercentileSlo;
  tbt?: PercentileSlo;
  tpot?: PercentileSlo;
  e2e?: PercentileSlo;
  schedulingDelay?: PercentileSlo;
}

/** Metron's defaults: 25 ms TBT deadline, 0.3 s TTFT slack, fluidity >= 0.9 for P99 of requests. */
export const DEFAULT_FLUIDITY: Omit<FluiditySlo, 'source'> = {
  tbtDeadlineS: 0.025,
  ttftSlackS: 0.3,
  minFluidity: 0.9,
  percentile: 99,
};

const DURATION_HINT = 'a duration such as 25ms, 2s or 10m';

interface Written {
  s: number;
  text: string;
}

// A duration field that remembers how it was written, so canonical source text quotes the user.
const duration = (positive: boolean) =>
  z.unknown().transform((v, ctx): Written => {
    const checked = checkDurationS(v);
    if ('problem' in checked && checked.bare !== undefined) {
      // A number without its unit: say so, whatever its sign (the unit is the first thing to fix).
      durationIssue(ctx, checked);
      return z.NEVER;
    }
    const s = 's' in checked ? checked.s : null;
    if (s === null || s < 0 || (positive && s === 0)) {
      const bound = positive ? ' > 0' : ' >= 0';
      const message = s === null ? `must be ${DURATION_HINT}` : `must be ${DURATION_HINT}${bound}`;
      ctx.addIssue({ code: 'custom', message, input: v });
      return z.NEVER;
    }
    return { s, text: typeof v === 'string' ? v.trim() : formatDurationS(s) };
  });

const percentileField = z
  .number({ error: 'must be a percentile: a number > 0 and <= 100' })
  .gt(0, { error: 'must be a percentile: a number > 0 and <= 100' })
  .lte(100, { error: 'must be a percentile: a number > 0 and <= 100' });

const sourceField = z.string({ error: 'must be text (the SLO as the user wrote it)' }).optional();

const fluiditySchema = z
  .strictObject({
    tbtDeadline: duration(true).optional(),
    ttftSlack: duration(false).optional(),
    minFluidity: z
      .number({ error: 'must be a number within 0..1' })
      .min(0, { error: 'must be a number within 0..1' })
      .max(1, { error: 'must be a number within 0..1' })
      .optional(),
    percentile: percentileField.optional(),
    tieRule: z.enum(['met', 'missed'], { error: 'must be met (a token exactly on its deadline is on time, as Metron\u2019s code) or missed (as Algorithm 1 of the paper prints it)' }).optional(),
    source: sourceField,
  })
  .transform((f): FluiditySlo => {
    const tbtDeadlineS = f.tbtDeadline?.s ?? DEFAULT_FLUIDITY.tbtDeadlineS;
    const ttftSlackS = f.ttftSlack?.s ?? DEFAULT_FLUIDITY.ttftSlackS;
    const minFluidity = f.minFluidity ?? DEFAULT_FLUIDITY.minFluidity;
    const percentile = f.percentile ?? DEFAULT_FLUIDITY.percentile;
    const tieRule = f.tieRule ?? DEFAULT_TIE_RULE;
    const source =
      f.source ??
      fluiditySource(
        { tbtDeadlineS, ttftSlackS, minFluidity, percentile, tieRule },
        f.tbtDeadline?.text,
        f.ttftSlack?.text,
      );
    return { tbtDeadlineS, ttftSlackS, minFluidity, percentile, tieRule, source };
  });

// Shorthand `ttft: "p90 <= 2s"`: the string itself is the source text.
const SHORTHAND_RE = /^\s*p(\d+(?:\.\d+)?)\s*<=\s*(\S+)\s*$/i;

const latencySchema = (name: LatencySloName) =>
  z.preprocess(
    (v, ctx) => {
      if (typeof v !== 'string') return v;
      const m = SHORTHAND_RE.exec(v);
      if (!m) {
        ctx.addIssue({ code: 'custom', message: `must be { percentile, max } or text such as "p99 <= 200ms"`, input: v });
        return z.NEVER;
      }
      return { percentile: Number(m[1]), max: m[2], source: `${name} ${v.trim()}` };
    },
    z
      .strictObject({
        percentile: percentileField.optional(),
        max: duration(false),
        source: sourceField,
      })
      .transform((o): PercentileSlo => {
        const percentile = o.percentile ?? 99;
        return { percentile, maxS: o.max.s, source: o.source ?? `${name} p${percentile} <= ${o.max.text}` };
      }),
  );

/** zod schema of the recipe's `slo` section; its output is the resolved Slo. */
export const sloSchema = z
  .strictObject({
    fluidity: fluiditySchema.optional(),
    ttft: latencySchema('ttft').optional(),
    tbt: latencySchema('tbt').optional(),
    tpot: latencySchema('tpot').optional(),
    e2e: latencySchema('e2e').optional(),
    schedulingDelay: latencySchema('schedulingDelay').optional(),
  })
  .refine((s) => SLO_NAMES.some((k) => s[k] !== undefined), {
    error: `must name at least one SLO (${SLO_NAMES.join(', ')})`,
  })
  .transform((s): Slo => {
    const out: Slo = {};
    for (const k of SLO_NAMES) if (s[k] !== undefined) (out as Record<string, unknown>)[k] = s[k];
    return out;
  });

/** Canonical text of a fluidity SLO, quoting durations as written when known. */
export function fluiditySource(
  f: Omit<FluiditySlo, 'source'>,
  tbtDeadlineText = formatDurationS(f.tbtDeadlineS),
  ttftSlackText = formatDurationS(f.ttftSlackS),
): string {
  // Only the rule that is not Metron's code is spelt out, so the usual SLO reads as it always has.
  return `fluidity p${f.percentile} >= ${f.minFluidity} (tbt deadline ${tbtDeadlineText}, ttft slack ${ttftSlackText}${f.tieRule === 'missed' ? ', a token on its deadline missed' : ''})`;
}

/** The fluidity SLO analyze uses when a run has none configured. */
export function defaultFluiditySlo(): FluiditySlo {
  return { ...DEFAULT_FLUIDITY, source: fluiditySource(DEFAULT_FLUIDITY) };
}

/** Command-line overrides of the fluidity SLO (already parsed to seconds). */
/** The fluidity deadlines and tie rule an SLO implies: its own, else Metron's defaults (25 ms TBT deadline, 0.3 s TTFT slack, ties met). */
export function fluidityDeadlines(slo: Slo): { tbtDeadlineS: number; ttftSlackS: number; tieRule: TieRule } {
  return {
    tbtDeadlineS: slo.fluidity?.tbtDeadlineS ?? DEFAULT_FLUIDITY.tbtDeadlineS,
    ttftSlackS: slo.fluidity?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS,
    tieRule: slo.fluidity?.tieRule ?? DEFAULT_TIE_RULE,
  };
}

export interface SloOverrides {
  tbtDeadlineS?: number;
  ttftSlackS?: number;
  percentile?: number;
  minFluidity?: number;
  tieRule?: TieRule;
}

/**
 * Applies --tbt-deadline / --ttft-slack / --percentile / --min-fluidity to a resolved Slo (a fresh
 * object; the input is not touched). The fluidity SLO is created from defaults when absent, and its
 * source says which flags changed it.
 */
export function applySloOverrides(slo: Slo, overrides: SloOverrides): Slo {
  const flags: string[] = [];
  if (overrides.tbtDeadlineS !== undefined) flags.push(`--tbt-deadline ${formatDurationS(overrides.tbtDeadlineS)}`);
  if (overrides.ttftSlackS !== undefined) flags.push(`--ttft-slack ${formatDurationS(overrides.ttftSlackS)}`);
  if (overrides.percentile !== undefined) flags.push(`--percentile ${overrides.percentile}`);
  if (overrides.minFluidity !== undefined) flags.push(`--min-fluidity ${overrides.minFluidity}`);
  if (overrides.tieRule !== undefined) flags.push(`--tie-rule ${overrides.tieRule}`);
  if (flags.length === 0) return { ...slo };
  const base = slo.fluidity ?? defaultFluiditySlo();
  const f = {
    tbtDeadlineS: overrides.tbtDeadlineS ?? base.tbtDeadlineS,
    ttftSlackS: overrides.ttftSlackS ?? base.ttftSlackS,
    minFluidity: overrides.minFluidity ?? base.minFluidity,
    percentile: overrides.percentile ?? base.percentile,
    tieRule: overrides.tieRule ?? base.tieRule ?? DEFAULT_TIE_RULE,
  };
  return { ...slo, fluidity: { ...f, source: `${fluiditySource(f)} [${flags.join(' ')}]` } };
}
