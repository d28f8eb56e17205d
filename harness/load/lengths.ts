// Token-length distributions for prompts and outputs: fixed, uniform, lognormal fitted to a median
// and p90, Zipf, the papers' named presets, and Vidur-format traces. Pure: samplers take an Rng.
import { standardNormal, type Rng } from '../util/rng.ts';

/** One length distribution as parsed from the recipe (see workloadSpec.ts). */
export type LengthDist =
  | { dist: 'fixed'; tokens: number }
  | { dist: 'uniform'; min: number; max: number }
  | { dist: 'quantiles'; median: number; p90: number; min: number; max: number }
  | { dist: 'zipf'; theta: number; min: number; max: number; scramble: boolean };

/** z of the standard normal at 0.9: ln(p90) = μ + Z90·σ for a lognormal. */
const Z90 = 1.2815515655446004;

/** One preset: lognormals through a median and p90, each drawn within `max` (redrawn above it, never cut). */
export interface Preset {
  prompt: { median: number; p90: number; max?: number };
  output: { median: number; p90: number; max?: number };
  /** The cap of the paper's trace: longer pairs are cut by Vidur's proportional rule. */
  maxTotalTokens: number | undefined;
  /** The context a run needs so that no request of the preset is cut (its longest prompt + output). */
  needsContextTokens?: number;
}

/**
 * Published request-length statistics of the workloads in the Sarathi-Serve / Metron / Vidur papers
 * (Vidur's Table 1). `arxiv-summarization` is the full trace Metron samples (no 4K cap; prompts past
 * Llama-3's 8192 tokens, which Metron reached by rope scaling): the trace file itself is not public
 * (Vidur ships only the 4K-filtered one), so like the others it is the lognormal through the printed
 * median and p90, its draws bounded so prompt + output fit a 65536-token context (Llama-3-8B's 8192
 * × rope factor 8). The bound redraws about 0.1% of prompts, which leaves the median and p90 as printed.
 */
export const PRESETS: Record<'chat-1m' | 'arxiv-4k' | 'bwb-4k' | 'arxiv-summarization', Preset> = {
  'chat-1m': { prompt: { median: 417, p90: 1678 }, output: { median: 141, p90: 491 }, maxTotalTokens: undefined },
  'arxiv-4k': { prompt: { median: 2730, p90: 3702 }, output: { median: 167, p90: 372 }, maxTotalTokens: 4096 },
  'bwb-4k': { prompt: { median: 1037, p90: 1453 }, output: { median: 1601, p90: 2149 }, maxTotalTokens: 4096 },
  'arxiv-summarization': {
    prompt: { median: 7827, p90: 18549, max: 61440 },
    output: { median: 228, p90: 475, max: 4096 },
    maxTotalTokens: undefined,
    needsContextTokens: 61440 + 4096,
  },
};

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

/** Lognormal parameters whose median and p90 are the given ones. */
export function lognormalFromQuantiles(median: number, p90: number): { mu: number; sigma: number } {
  const mu = Math.log(median);
  return { mu, sigma: (Math.log(p90) - mu) / Z90 };
}

/** A sampler returning integer token counts ≥ 1 from one distribution. */
export function lengthSampler(d: LengthDist, rng: Rng): () => number {
  switch (d.dist) {
    case 'fixed':
      return () => d.tokens;
    case 'uniform':
      return () => d.min + Math.floor(rng.next() * (d.max - d.min + 1));
    case 'quantiles': {
      const { mu, sigma } = lognormalFromQuantiles(d.median, d.p90);
      return () => {
        // Redraw outside [min, max] rather than clamp, so no spike builds up at the bounds.
        for (let i = 0; i < 100; i++) {
          const v = Math.round(Math.exp(mu + sigma * standardNormal(rng)));
          if (v >= d.min && v <= d.max) return v;
        }
        return Math.min(d.max, Math.max(d.min, Math.round(Math.exp(mu))));
      };
    }
    case 'zipf':
      return zipfSampler(d, rng);
  }
}

/** Zipf over the ranks 1..N (N = max−min+1): P(k) ∝ k^−θ, rank k maps to min+k−1 (or a scrambled value). */
function zipfSampler(d: { theta: number; min: number; max: number; scramble: boolean }, rng: Rng): () => number {
  const n = d.max - d.min + 1;
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += Math.pow(k, -d.theta);
    cdf[k - 1] = sum;
  }
  return () => {
    const u = rng.next() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    // Scrambling spreads the popular ranks over the range (a fixed bijection, as in YCSB/etalon).
    const rank = d.scramble ? Number((BigInt(lo) * 2654435761n) % BigInt(n)) : lo;
    return d.min + rank;
  };
}

/**
 * Vidur's truncation of a trace row to a maximum total length: the excess is removed from the
 * prompt and the output in proportion (each rounded up), then each is kept ≥ 1.
 */
export function truncateVidur(promptTokens: number, outputTokens: number, maxTotalTokens: number): [number, number] {
  const total = promptTokens + outputTokens;
  const excess = Math.max(0, total - maxTotalTokens);
  if (excess === 0) return [promptTokens, outputTokens];
  // Same float order as Vidur (excess × ratio) so boundary cases round identically.
  const p = promptTokens - Math.ceil(excess * (promptTokens / total));
  const o = outputTokens - Math.ceil(excess * (outputTokens / total));
  return [Math.max(1, p), Math.max(1, o)];
}

/** A preset's prompt and output distributions as the planner draws them. */
export function presetDists(p: Preset): { prompt: LengthDist; output: LengthDist } {
  return {
    prompt: { dist: 'quantiles', median: p.prompt.median, p90: p.prompt.p90, min: 1, max: p.prompt.max ?? 1 << 20 },
    output: { dist: 'quantiles', median: p.output.median, p90: p.output.p90, min: 1, max: p.output.max ?? 1 << 20 },
  };
}

/** The longest length a distribution can draw. */
export function longestOf(d: LengthDist): number {
  return d.dist === 'fixed' ? d.tokens : d.max;
}

/**
 * The share of requests whose prompt + output would exceed `capTokens`: 0 when no draw can,
 * else estimated from `draws` seeded draws of the samplers the load generator uses (so the
 * estimate is the same on every machine).
 */
export function shareOverCap(prompt: LengthDist, output: LengthDist, capTokens: number, rng: Rng, draws = 20_000): number {
  if (longestOf(prompt) + longestOf(output) <= capTokens) return 0;
  const drawPrompt = lengthSampler(prompt, rng);
  const drawOutput = lengthSampler(output, rng);
  let over = 0;
  for (let i = 0; i < draws; i++) if (drawPrompt() + drawOutput() > capTokens) over++;
  return over / draws;
}
