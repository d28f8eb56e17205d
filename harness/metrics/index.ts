// One import for the pure metrics: `import { computeRequestMetrics, evaluateSlo } from '../metrics/index.ts'`.
export { percentile, percentiles, percentileFromTop, sortedPercentile, sortedPercentileFromTop, percentileAt, mean } from './percentile.ts';
export type { PercentileMethod } from './percentile.ts';
export { PERCENTILE_METHODS } from './percentile.ts';
export { floorDivide } from './floorDivide.ts';
export { DEFAULT_TIE_RULE, fluidityIndex, fluidityOfRange, type FluidityResult, type TieRule } from './fluidity.ts';
export { predictPrefillS, type PrefillFit } from './prefill.ts';
export { computeRequestMetrics, type RequestMetrics, type RequestMetricsOptions } from './request.ts';
export { columnsOf, MetricColumnsBuilder, GrowableF64, type MetricColumns } from './columns.ts';
export { fluidTokenRate, FLUID_RATE_STEPS_PER_S, type FluidRateResult, type FluidRateOptions } from './fluidRate.ts';
export {
  sloSchema,
  applySloOverrides,
  defaultFluiditySlo,
  fluiditySource,
  DEFAULT_FLUIDITY,
  SLO_NAMES,
  LATENCY_SLO_NAMES,
  fluidityDeadlines,
} from './slo.ts';
export type { Slo, FluiditySlo, PercentileSlo, SloName, LatencySloName, SloOverrides } from './slo.ts';
export { evaluateSlo, evaluateSloColumns, meetsSlo, type SloResult, type SloEvaluation, type SloReport } from './sloCheck.ts';
export { summarizeRequests, SummaryAccumulator, type RequestSummary, type SummaryOptions, type Distribution } from './summary.ts';
