// Which Prometheus sample names each engine version exports for the gauges a run reads. vLLM
// renamed its metrics between versions and its 0.8.5 V0 and V1 engines export different sets
// (../shared/engines/flags/vllm-*.json, `metrics`): 0.8.5 V1 counts prefix-cache hits as
// `vllm:gpu_prefix_cache_hits_total`, V0 has no such counter, newest dropped the `gpu_` prefixes.
// The scraper reads whichever of these names the server exports. Pure.

/** What one scrape reads; each is the summed value of one sample name. */
export type GaugeKey = 'running' | 'waiting' | 'kvUsage' | 'preemptions' | 'promptTokens' | 'generationTokens' | 'cachedPromptTokens' | 'prefixCacheQueries';

/** An engine version with its own metric names. */
export type MetricNaming = 'vllm-newest' | 'vllm-0.8.5-v1' | 'vllm-0.8.5-v0' | 'sglang' | 'tgi' | 'llamacpp';

/** Per naming, the sample name of each gauge; null where that version exports none. */
export const METRIC_NAMES: Record<MetricNaming, Record<GaugeKey, string | null>> = {
  'vllm-newest': {
    running: 'vllm:num_requests_running',
    waiting: 'vllm:num_requests_waiting',
    kvUsage: 'vllm:kv_cache_usage_perc',
    preemptions: 'vllm:num_preemptions_total',
    promptTokens: 'vllm:prompt_tokens_total',
    generationTokens: 'vllm:generation_tokens_total',
    cachedPromptTokens: 'vllm:prefix_cache_hits_total',
    prefixCacheQueries: 'vllm:prefix_cache_queries_total',
  },
  'vllm-0.8.5-v1': {
    running: 'vllm:num_requests_running',
    waiting: 'vllm:num_requests_waiting',
    kvUsage: 'vllm:gpu_cache_usage_perc',
    preemptions: 'vllm:num_preemptions_total',
    promptTokens: 'vllm:prompt_tokens_total',
    generationTokens: 'vllm:generation_tokens_total',
    cachedPromptTokens: 'vllm:gpu_prefix_cache_hits_total',
    prefixCacheQueries: 'vllm:gpu_prefix_cache_queries_total',
  },
  // V0 keeps only a hit-rate gauge, and only behind --show-hidden-metrics-for-version: no token count.
  'vllm-0.8.5-v0': {
    running: 'vllm:num_requests_running',
    waiting: 'vllm:num_requests_waiting',
    kvUsage: 'vllm:gpu_cache_usage_perc',
    preemptions: 'vllm:num_preemptions_total',
    promptTokens: 'vllm:prompt_tokens_total',
    generationTokens: 'vllm:generation_tokens_total',
    cachedPromptTokens: null,
    prefixCacheQueries: null,
  },
  // SGLang registers these only with --enable-metrics.
  sglang: {
    running: 'sglang:num_running_reqs',
    waiting: 'sglang:num_queue_reqs',
    kvUsage: 'sglang:token_usage',
    preemptions: null,
    promptTokens: 'sglang:prompt_tokens_total',
    generationTokens: 'sglang:generation_tokens_total',
    cachedPromptTokens: 'sglang:cached_tokens_total',
    prefixCacheQueries: null,
  },
  tgi: {
    running: 'tgi_batch_current_size',
    waiting: 'tgi_queue_size',
    kvUsage: null,
    preemptions: null,
    promptTokens: null,
    generationTokens: null,
    cachedPromptTokens: null,
    prefixCacheQueries: null,
  },
  // llama.cpp's server (tools/server, --metrics): current builds have no KV-usage gauge, older ones
  // had kv_cache_usage_ratio; its prompt counter excludes tokens served from its cache.
  llamacpp: {
    running: 'llamacpp:requests_processing',
    waiting: 'llamacpp:requests_deferred',
    kvUsage: 'llamacpp:kv_cache_usage_ratio',
    preemptions: null,
    promptTokens: 'llamacpp:prompt_tokens_total',
    generationTokens: 'llamacpp:tokens_predicted_total',
    cachedPromptTokens: 'llamacpp:prompt_tokens_cached_total',
    prefixCacheQueries: null,
  },
};

// Order of the search: a name that two versions share reads the same either way, and the newest
// vLLM comes first so a server exporting both spellings is read under its current one.
const ORDER: MetricNaming[] = ['vllm-newest', 'vllm-0.8.5-v1', 'vllm-0.8.5-v0', 'sglang', 'tgi', 'llamacpp'];

/** Every name fluidcap reads for `key`, first match wins. */
export function namesFor(key: GaugeKey): string[] {
  return [...new Set(ORDER.map((n) => METRIC_NAMES[n][key]).filter((n): n is string => n !== null))];
}

/**
 * The naming a scrape's sample names match, told apart by the names only one version exports;
 * null for a server none of these describe.
 */
export function detectNaming(names: ReadonlySet<string> | ReadonlyMap<string, unknown>): MetricNaming | null {
  const has = (n: string) => names.has(n);
  if (has('vllm:kv_cache_usage_perc') || has('vllm:prefix_cache_hits_total')) return 'vllm-newest';
  if (has('vllm:gpu_prefix_cache_hits_total')) return 'vllm-0.8.5-v1';
  if (has('vllm:gpu_cache_usage_perc') || has('vllm:num_requests_running')) return 'vllm-0.8.5-v0';
  for (const n of ['sglang', 'tgi', 'llamacpp'] as const) if (has(METRIC_NAMES[n].running!)) return n;
  return null;
}

/** The counter that witnesses prompts served from a cache, or why there is none. */
export type PrefixCacheWitness = { metric: string } | { metric: null; why: string };

/** Which prefix-cache counter a server with these sample names offers as the witness. */
export function prefixCacheWitness(names: ReadonlySet<string> | ReadonlyMap<string, unknown>): PrefixCacheWitness {
  const found = namesFor('cachedPromptTokens').find((n) => names.has(n));
  if (found) return { metric: found };
  const naming = detectNaming(names);
  if (naming === 'vllm-0.8.5-v0') return { metric: null, why: 'no witness: vLLM 0.8.5 V0 exports no prefix-cache hit counter' };
  return { metric: null, why: `no witness: the server exports none of ${namesFor('cachedPromptTokens').join(', ')}` };
}
