// Turns a capacity into money: what the GPUs cost per hour, how many QPS a dollar-per-hour buys,
// what a million output tokens cost at capacity, and what the run itself cost. The report shows
// these next to the capacity so runs on different GPUs compare by price, not only by speed.
import type { CapacityCost } from '../runDir/schema.ts';

/** Price and throughput at capacity; a null price (profile without one) leaves money fields null. */
export interface CapacityCostInput {
  /** GPU profile's `price.usdPerGpuHour`, or null when the profile has no price. */
  usdPerGpuHour: number | null;
  /** null when the GPUs are unknown (an endpoint fluidcap did not start): no money figures. */
  gpuCount: number | null;
  capacityQps: number;
  /** Mean output tokens per request of the workload (e.g. from the probe at capacity). */
  meanOutputTokens: number;
}


/** Cost figures at the found capacity. */
export function capacityCost(input: CapacityCostInput): CapacityCost {
  if (input.gpuCount !== null) checkGpuCount(input.gpuCount);
  checkNonNegative('capacityQps', input.capacityQps);
  checkNonNegative('meanOutputTokens', input.meanOutputTokens);
  if (input.usdPerGpuHour !== null) checkNonNegative('usdPerGpuHour', input.usdPerGpuHour);

  const outputTokensPerS = input.capacityQps * input.meanOutputTokens;
  if (input.usdPerGpuHour === null || input.gpuCount === null) {
    return { usdPerHour: null, qpsPerUsdPerHour: null, outputTokensPerS, usdPerMillionOutputTokens: null };
  }
  const usdPerHour = input.usdPerGpuHour * input.gpuCount;
  return {
    usdPerHour,
    qpsPerUsdPerHour: usdPerHour > 0 ? input.capacityQps / usdPerHour : null,
    outputTokensPerS,
    // $/h ÷ (tokens/s × 3600 s/h) = $/token; × 1e6 for a million.
    usdPerMillionOutputTokens: outputTokensPerS > 0 ? (usdPerHour / (outputTokensPerS * 3600)) * 1e6 : null,
  };
}

/** What running the harness cost: GPU time held (engine up to engine released) and its price. */
export interface RunCost {
  /** null when the GPU count is unknown. */
  gpuSeconds: number | null;
  costUsd: number | null;
}

/** GPU-seconds and dollars of a run, for capacity.json's `gpuSeconds` and `costUsd`; unknown GPUs count nothing. */
export function runCost(input: { engineUpS: number; gpuCount: number | null; usdPerGpuHour: number | null }): RunCost {
  checkNonNegative('engineUpS', input.engineUpS);
  if (input.gpuCount === null) return { gpuSeconds: null, costUsd: null };
  checkGpuCount(input.gpuCount);
  const gpuSeconds = input.engineUpS * input.gpuCount;
  return { gpuSeconds, costUsd: input.usdPerGpuHour === null ? null : (gpuSeconds / 3600) * input.usdPerGpuHour };
}

// Bad numbers here are harness faults (the recipe and profile were validated upstream), so they
// throw with the field and value rather than producing NaN in a report.
function checkGpuCount(gpuCount: number): void {
  if (!Number.isInteger(gpuCount) || gpuCount < 1) throw new RangeError(`cost: gpuCount must be a positive integer, got ${gpuCount}`);
}

function checkNonNegative(field: string, value: number): void {
  if (!(Number.isFinite(value) && value >= 0)) throw new RangeError(`cost: ${field} must be a finite number >= 0, got ${value}`);
}
