// Engine gauges from Prometheus text: llama.cpp's server (`llamacpp:*`, as its /metrics prints them)
// mapped onto the fields vLLM's names fill, and a probe's scrapes summarized (peaks, counter growth).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineGauges, parsePrometheusText } from '../../harness/load/prometheus.ts';
import { summarizeServerMetricRows } from '../../harness/runDir/read.ts';
import { startScraper } from '../../harness/load/metricsScraper.ts';

// The shape llama-server (b10573, --metrics) prints: HELP and TYPE before every sample, no labels.
const LLAMACPP = `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1834
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total 12
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 640
# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 51234.5
# HELP llamacpp:requests_processing Number of requests processing
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 3
# HELP llamacpp:requests_deferred Number of requests deferred
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 2
`;

const VLLM = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 7
vllm:num_requests_waiting{model_name="m"} 1
vllm:kv_cache_usage_perc{model_name="m"} 0.25
vllm:num_preemptions_total{model_name="m"} 4
vllm:prompt_tokens_total{model_name="m"} 9000
vllm:generation_tokens_total{model_name="m"} 3000
vllm:prefix_cache_hits_total{model_name="m"} 0
`;

test('llamacpp:* fills the same fields as vllm:* where they mean the same; no KV gauge, no preemptions', () => {
  assert.equal(engineGauges(parsePrometheusText(LLAMACPP)), {
    running: 3,
    waiting: 2,
    kvUsage: null,
    preemptions: null,
    promptTokens: 1834,
    generationTokens: 640,
    cachedPromptTokens: 12,
    prefixCacheQueries: null,
  });
  assert.equal(engineGauges(parsePrometheusText(VLLM)), {
    running: 7,
    waiting: 1,
    kvUsage: 0.25,
    preemptions: 4,
    promptTokens: 9000,
    generationTokens: 3000,
    cachedPromptTokens: 0,
    prefixCacheQueries: null,
  });
});

test('summarizeServerMetricRows: peaks of gauges, growth of counters, null when never exposed or reset', () => {
  const rows = [
    { running: 1, waiting: 0, kvUsage: null, preemptions: null, promptTokens: 100, generationTokens: 10, cachedPromptTokens: 5 },
    { running: 4, waiting: 3, kvUsage: null, preemptions: null, promptTokens: 900, generationTokens: 250, cachedPromptTokens: 5 },
    { running: 2, waiting: 0, kvUsage: null, preemptions: null, promptTokens: 1500, generationTokens: 410, cachedPromptTokens: 9 },
  ];
  assert.equal(summarizeServerMetricRows(rows), {
    scrapes: 3,
    maxRunning: 4,
    maxWaiting: 3,
    maxKvUsage: null,
    preemptions: null,
    promptTokens: 1400,
    generationTokens: 400,
    cachedPromptTokens: 4,
    prefixCacheQueries: null,
    prefixCacheWitness: null,
  });
  const restarted = [{ promptTokens: 900 }, { promptTokens: 30 }];
  assert.is(summarizeServerMetricRows(restarted).promptTokens, null, 'a counter that went down (engine restart) has no known growth');
  assert.equal(summarizeServerMetricRows([]).scrapes, 0);
});

/** A /metrics server on port 0: llama.cpp's text with a counter that grows per scrape, or 501 as llama-server answers without --metrics. */
async function metricsServer(status: number) {
  let served = 0;
  const server = http.createServer((_req, res) => {
    served++;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(status === 200 ? LLAMACPP.replace('llamacpp:tokens_predicted_total 640', `llamacpp:tokens_predicted_total ${640 * served}`) : 'This server does not support metrics endpoint.');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`, close: () => new Promise((r) => server.close(r)), served: () => served };
}

test('scraper: a last scrape at stop (counters cover the probe end); llama.cpp without --metrics (501) gives no file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-scrape-'));
  try {
    const ok = await metricsServer(200);
    const file = join(dir, 'ok.jsonl');
    const s = startScraper({ metricsUrl: ok.url, file, intervalS: 30, startNs: process.hrtime.bigint() });
    await new Promise((r) => setTimeout(r, 200));
    const r = await s.stop();
    await ok.close();
    assert.equal([r.scrapes, r.available], [2, true]);
    const rows = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(rows.map((x) => x.generationTokens), [640, 1280]);
    assert.is(rows[1].series['llamacpp:prompt_tokens_cached_total'], 12);
    assert.is(summarizeServerMetricRows(rows).generationTokens, 640);

    const off = await metricsServer(501);
    const s2 = startScraper({ metricsUrl: off.url, file: join(dir, 'off.jsonl'), intervalS: 0.05, startNs: process.hrtime.bigint() });
    await new Promise((r) => setTimeout(r, 300));
    const r2 = await s2.stop();
    await off.close();
    assert.equal([r2.scrapes, r2.available, off.served()], [0, false, 1], 'asked once, then stopped asking');
    assert.match(r2.lastError ?? '', /answered 501/);
    assert.not.ok(existsSync(join(dir, 'off.jsonl')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
