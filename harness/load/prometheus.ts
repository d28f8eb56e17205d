// Reads the few engine gauges a capacity run wants from Prometheus text (vLLM names and common
// alternatives; SPEC §8: names differ between engines), and summarizes a probe's scrapes. Pure.

/** One scrape's gauges; null where the engine exposes no such metric. */
export interface EngineGauges {
  running: number | null;
  waiting: number | null;
  kvUsage: number | null;
  preemptions: number | null;
  /** Counter: prompt tokens the engine computed (llama.cpp counts only those not served from its cache). */
  promptTokens: number | null;
  /** Counter: tokens generated. */
  generationTokens: number | null;
  /** Counter: prompt tokens served from a cache; growth during a cache-off run means prompts were reused. */
  cachedPromptTokens: number | null;
}

// First match wins; sums over label sets (several models or engines on one server). The llamacpp:
// names are those of llama.cpp's server (tools/server, `--metrics`); its current builds have no
// KV-cache usage gauge, older ones had kv_cache_usage_ratio.
const NAMES: Record<keyof EngineGauges, string[]> = {
  running: ['vllm:num_requests_running', 'sglang:num_running_reqs', 'tgi_batch_current_size', 'llamacpp:requests_processing'],
  waiting: ['vllm:num_requests_waiting', 'sglang:num_queue_reqs', 'tgi_queue_size', 'llamacpp:requests_deferred'],
  kvUsage: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc', 'sglang:token_usage', 'llamacpp:kv_cache_usage_ratio'],
  preemptions: ['vllm:num_preemptions_total', 'vllm:num_preemptions'],
  promptTokens: ['vllm:prompt_tokens_total', 'sglang:prompt_tokens_total', 'llamacpp:prompt_tokens_total'],
  generationTokens: ['vllm:generation_tokens_total', 'sglang:generation_tokens_total', 'llamacpp:tokens_predicted_total'],
  cachedPromptTokens: ['llamacpp:prompt_tokens_cached_total', 'vllm:prefix_cache_hits_total'],
};

/** Parses exposition text into metric name → summed value (comments and histograms' series kept by full name). */
export function parsePrometheusText(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace >= 0 && (space < 0 || brace < space) ? brace : space;
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    const rest = brace >= 0 && brace === nameEnd ? line.slice(line.indexOf('}', brace) + 1) : line.slice(nameEnd);
    const value = Number(rest.trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    out.set(name, (out.get(name) ?? 0) + value);
  }
  return out;
}

/** Picks the gauges a probe archives from parsed metrics. */
export function engineGauges(metrics: Map<string, number>): EngineGauges {
  const pick = (names: string[]) => {
    for (const n of names) if (metrics.has(n)) return metrics.get(n)!;
    return null;
  };
  const out = {} as EngineGauges;
  for (const key of Object.keys(NAMES) as (keyof EngineGauges)[]) out[key] = pick(NAMES[key]);
  return out;
}

