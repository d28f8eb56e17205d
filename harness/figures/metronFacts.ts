// Our side of the Metron figures' setup entries in paperNumbers.json (the trace, the deadlines,
// the SLO, how the rates are defined), so each figure's README sets them beside the paper's.
import { PRESETS } from '../load/lengths.ts';
import type { OurValues } from './paperNumbers.ts';

/**
 * The paper recipe (recipes/papers/<name>.yaml) a Metron figure runs for one system: metron-fig6 on
 * the full Arxiv-Summarization trace, past 8192 tokens (the paper's §5.2 setup, whose 0.6 QPS
 * capacities it can then be held against); the others on the 4K-capped trace at the rates they use.
 */
export function metronRecipe(figure: string, recipe: string, onHosts: boolean): string {
  return `${recipe}${figure === 'metron-fig6' ? '-arxiv' : ''}${onHosts ? '' : '-sim'}`;
}

/** The prefill profile's prompt lengths of a figure run: the paper recipe's own (the full Arxiv trace's reach past 8192 tokens), else the 4K trace's. */
export function profileLengths(base: { profile?: unknown }): number[] {
  const own = (base.profile as { promptLengths?: unknown } | undefined)?.promptLengths;
  return Array.isArray(own) && own.every((n) => typeof n === 'number') ? own : [512, 1024, 2048, 3072, 3584];
}

/**
 * The spread of a figure run's profile repeats ignored as noise: 20 ms where prefills last a few
 * milliseconds (the 4K trace), 40 ms where they reach half a second (prompts to 32768 tokens): on a
 * machine shared with the load generator, a longer prefill is preempted more often.
 */
export function profileNoiseFloorMs(lengths: readonly number[]): number {
  return Math.max(...lengths) > 4096 ? 40 : 20;
}

/** The workload in a few words, for a figure's setup notes. */
export function workloadWords(trace: string): string {
  return trace === 'arxiv-summarization'
    ? 'the full Arxiv-Summarization trace’s lengths (prompt median 7827, p90 18549 tokens, up to 61440; output median 228, p90 475: Vidur’s Table 1), the engine told of a 65536-token context (rope scaling, factor 8) so that no request is cut'
    : 'Arxiv-4K-like prompts and outputs';
}

/** Said beside an absolute value judged on the simulated engine: what stands in for the paper's GPU. */
export const SIM_HARDWARE_NOTE =
  'Absolute capacities (M-01, M-02: 0.6 QPS) are judged on the simulated engine, which models an H100 SXM 80 GB by a roofline of its profile (gpu-profiles/h100-sxm-80gb.yaml), not a measured GPU; they are held within the figure’s band (ours ÷ paper within [0.8, 1.25]) and say as much about the roofline as about the schedulers.';

/** The TBT deadline of every Metron figure, in the paper's time: the paper's 25 ms. */
export const PAPER_TBT_DEADLINE_S = 0.025;

/** Our side of the Metron figures' setup entries, for a workload on length preset `trace`. */
export function metronFacts(trace: string): OurValues {
  const preset = (PRESETS as Record<string, { output: { median: number } }>)[trace];
  return {
    trace,
    'workload.outputMedianTokens': preset?.output.median ?? null,
    tpotRate: '1 ÷ mean TPOT over all requests',
    fluidRate: '1 ÷ smallest D_d at which 99% of requests reach fluidity >= 0.9',
    tbtDeadlineMs: PAPER_TBT_DEADLINE_S * 1000,
    baselineThresholdMs: PAPER_TBT_DEADLINE_S * 1000,
    tpotPercentile: 'P50 and P99 (two SLOs: fluidcap’s split)',
    fluiditySlo: '99% of requests at fluidity >= 0.9',
    prefillFitRequests: 15,
    readAtMissRate: 0.1,
    systems: 'vLLM, Sarathi-Serve (fluidcap’s engines)',
  };
}

