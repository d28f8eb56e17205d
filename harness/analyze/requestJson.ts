// The per-request object of `fluidcap analyze --json` (SPEC §2): the SPEC's named fields first,
// then the rest of what an operator filters on. Sample arrays are left out to keep lines small.
import type { RequestMetrics } from '../metrics/request.ts';

/** One element of the "requests" array. */
export function requestJson(m: RequestMetrics, probe: string, meetsSlo: boolean): Record<string, unknown> {
  return {
    id: m.id,
    ttftS: m.ttftS,
    tpotS: m.tpotS,
    e2eS: m.e2eS,
    normalizedLatencyS: m.normalizedLatencyS,
    fluidity: m.fluidity,
    deadlinesTotal: m.deadlinesTotal,
    deadlinesMissed: m.deadlinesMissed,
    probe,
    status: m.status,
    meetsSlo,
    promptTokens: m.promptTokens,
    outputTokens: m.outputTokens,
    ttftFromSentS: m.ttftFromSentS,
    dispatchLagS: m.dispatchLagS,
    tbtMaxS: m.tbtMaxS,
    dpS: m.dpS,
    schedulingDelayS: m.schedulingDelayS,
    httpStatus: m.httpStatus,
    error: m.error,
  };
}
