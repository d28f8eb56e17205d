// Our side of the Metron figures' setup entries in paperNumbers.json (the trace, the deadlines,
// the SLO, how the rates are defined), so each figure's README sets them beside the paper's.
import { PRESETS } from '../load/lengths.ts';
import type { OurValues } from './paperNumbers.ts';

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

