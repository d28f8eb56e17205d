// Which engine, scheduler and chunked-prefill setting a started server actually runs, read from
// its own start-up log and `/version`, and whether that is what the recipe asked for. vLLM prints
// `Initializing a V0 LLM engine (v0.8.5) with config: ..., chunked_prefill_enabled=False, ...` (V1:
// `Initializing a V1 LLM engine`), and `Chunked prefill is enabled with max_num_batched_tokens=N.`
// when it chunks; the simulated engine prints the same lines. Pure: text in, facts out.
import type { EngineBasis } from './containerSpec.ts';

export interface EngineRuntime {
  /** vLLM's engine generation as it named itself; null when no such line was seen. */
  generation: 'V0' | 'V1' | null;
  /** What the engine printed in the parentheses of that line (its version). */
  engineVersion: string | null;
  /** `/version`'s answer, when the server has the route. */
  versionRoute: string | null;
  chunkedPrefill: boolean | null;
  maxNumBatchedTokens: number | null;
}

const INIT = /Initializing an? (V0|V1) LLM engine \(([^)]*)\) with config: (.*)$/m;

export function readEngineRuntime(log: string, versionBody: string | null): EngineRuntime {
  const init = INIT.exec(log);
  const config = init?.[3] ?? '';
  const chunkedInConfig = /\bchunked_prefill_enabled=(True|False)\b/.exec(config);
  const chunkedLine = /Chunked prefill is enabled with max_num_batched_tokens=(\d+)/.exec(log);
  const budget = chunkedLine ?? /\bmax_num_batched_tokens=(\d+)\b/.exec(config);
  let versionRoute: string | null = null;
  try {
    const v = versionBody === null ? null : (JSON.parse(versionBody) as { version?: unknown }).version;
    versionRoute = typeof v === 'string' ? v : null;
  } catch {
    versionRoute = null;
  }
  return {
    generation: (init?.[1] as 'V0' | 'V1' | undefined) ?? null,
    engineVersion: init?.[2].replace(/^v(?=\d)/, '') ?? null,
    versionRoute,
    chunkedPrefill: chunkedInConfig ? chunkedInConfig[1] === 'True' : chunkedLine ? true : null,
    maxNumBatchedTokens: budget ? Number(budget[1]) : null,
  };
}

/**
 * Why what runs is not what the recipe asked for, or null. Only what the server said is judged:
 * an engine that prints nothing of the kind is recorded as unknown, not refused.
 */
export function runtimeMismatch(basis: EngineBasis, rt: EngineRuntime): string | null {
  if (basis.scheduler === null) return null;
  if (basis.scheduler === 'prefill-first') {
    if (rt.chunkedPrefill === true || rt.generation === 'V1') {
      return `the recipe asks for vLLM's prefill-first scheduler (V0, whole prompts), but the engine started ${rt.generation ?? 'an engine'}` +
        `${rt.chunkedPrefill === true ? ` with chunked prefill${rt.maxNumBatchedTokens !== null ? ` (max_num_batched_tokens=${rt.maxNumBatchedTokens})` : ''}` : ''}` +
        ' (its start-up log says so); its measurements would be of another scheduler';
    }
    return null;
  }
  if (rt.chunkedPrefill === false) {
    return `the recipe asks for chunked prefill, but the engine started ${rt.generation ?? 'an engine'} without it (its start-up log says chunked_prefill_enabled=False)`;
  }
  return null;
}

/** One line for logs and reports: `V0, chunked prefill off (vLLM 0.8.5)`. */
export function describeRuntime(rt: EngineRuntime): string {
  const parts = [
    rt.generation ?? 'engine generation not printed',
    rt.chunkedPrefill === null ? 'chunked prefill not printed' : rt.chunkedPrefill ? `chunked prefill on${rt.maxNumBatchedTokens !== null ? ` (${rt.maxNumBatchedTokens} tokens per iteration)` : ''}` : 'chunked prefill off',
  ];
  const version = rt.versionRoute ?? rt.engineVersion;
  return `${parts.join(', ')}${version ? ` (version ${version})` : ''}`;
}
