// The engine's /metrics under vLLM's names, types and bucket bounds, so dashboards and the
// harness's scraper read the simulated engine and vLLM alike.
import { Counter, Gauge, Histogram, Registry } from './promMetrics.ts';

// What the gauges read at scrape time.
export interface EngineGauges {
  running(): number;
  waiting(): number;
  kvUsedFraction(): number;
}

const TTFT_BOUNDS_S = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const TPOT_BOUNDS_S = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const LATENCY_BOUNDS_S = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];
const TOKEN_BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/** Which vLLM's metric names /metrics uses: newest, or 0.8.5 with its V1 or V0 engine. */
export type MetricsNaming = 'newest' | '0.8.5-v1' | '0.8.5-v0';
export const METRICS_NAMINGS: readonly MetricsNaming[] = ['newest', '0.8.5-v1', '0.8.5-v0'];

// The names that differ between versions (../shared/engines/flags/vllm-*.json): newest dropped the
// `gpu_` prefixes; 0.8.5's V0 engine counts no prefix-cache lookups at all.
const NAMES: Record<MetricsNaming, { kvUsage: string; prefixQueries: string | null; prefixHits: string | null }> = {
  newest: { kvUsage: 'vllm:kv_cache_usage_perc', prefixQueries: 'vllm:prefix_cache_queries_total', prefixHits: 'vllm:prefix_cache_hits_total' },
  '0.8.5-v1': { kvUsage: 'vllm:gpu_cache_usage_perc', prefixQueries: 'vllm:gpu_prefix_cache_queries_total', prefixHits: 'vllm:gpu_prefix_cache_hits_total' },
  '0.8.5-v0': { kvUsage: 'vllm:gpu_cache_usage_perc', prefixQueries: null, prefixHits: null },
};

// The metric objects the server updates.
export type VllmMetrics = ReturnType<typeof createVllmMetrics>;

// Builds the registry for one served model; the simulator has no prefix cache, so hits stay 0.
export function createVllmMetrics(modelName: string, gauges: EngineGauges, naming: MetricsNaming = 'newest') {
  const base = { model_name: modelName };
  const registry = new Registry();
  const names = NAMES[naming];
  const counter = (name: string | null, help: string) => (name === null ? null : registry.add(new Counter(name, help, base)));
  return {
    registry,
    running: registry.add(new Gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', base, gauges.running)),
    waiting: registry.add(new Gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', base, gauges.waiting)),
    kvUsage: registry.add(new Gauge(names.kvUsage, 'KV-cache usage. 1 means 100 percent usage.', base, gauges.kvUsedFraction)),
    prefixCacheQueries: counter(names.prefixQueries, 'Prefix cache queries, in terms of number of queried tokens.'),
    prefixCacheHits: counter(names.prefixHits, 'Prefix cache hits, in terms of number of cached tokens.'),
    preemptions: registry.add(new Counter('vllm:num_preemptions_total', 'Cumulative number of preemptions from the engine.', base)),
    promptTokens: registry.add(new Counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.', base)),
    generationTokens: registry.add(new Counter('vllm:generation_tokens_total', 'Number of generation tokens processed.', base)),
    requestSuccess: registry.add(new Counter('vllm:request_success_total', 'Count of successfully processed requests.', base)),
    ttft: registry.add(new Histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', base, TTFT_BOUNDS_S)),
    tpot: registry.add(new Histogram('vllm:time_per_output_token_seconds', 'Histogram of time per output token in seconds.', base, TPOT_BOUNDS_S)),
    interTokenLatency: registry.add(new Histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', base, TPOT_BOUNDS_S)),
    e2e: registry.add(new Histogram('vllm:e2e_request_latency_seconds', 'Histogram of end to end request latency in seconds.', base, LATENCY_BOUNDS_S)),
    queueTime: registry.add(new Histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', base, LATENCY_BOUNDS_S)),
    promptTokensPerRequest: registry.add(new Histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', base, TOKEN_BOUNDS)),
    generationTokensPerRequest: registry.add(new Histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', base, TOKEN_BOUNDS)),
    // Not a vLLM metric: how late the simulator started iterations against its modelled schedule,
    // so a run can tell whether the stand-in itself added timing error.
    iterationLateness: registry.add(new Histogram('fluidcap_sim:iteration_lateness_seconds', 'Iteration start minus its modelled start, in seconds.', base, [0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 1.0])),
    iterationTokens: registry.add(new Histogram('vllm:iteration_tokens_total', 'Histogram of number of tokens per engine_step.', base, [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])),
  };
}
