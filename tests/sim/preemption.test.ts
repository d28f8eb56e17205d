// KV exhaustion over real HTTP: requests are preempted (counted in /metrics as
// vllm:num_preemptions_total), recomputed, and all still finish; the server does not crash.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSimServer } from '../../harness/sim/server.ts';
import { streamRequest, wordsPrompt } from './streamHelper.ts';

function metricValue(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(name + '{') || l.startsWith(name + ' '));
  if (!line) throw new Error(`metric ${name} missing`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

for (const scheduler of ['vllm', 'sarathi'] as const) {
  test(`${scheduler}: KV exhaustion → preemptions in /metrics, every request completes`, async () => {
    // 300 blocks × 16 = 4800 tokens of KV; 12 requests growing to 600 tokens each need 7200.
    const sim = await startSimServer({ model: 'tiny', scheduler, port: 0, timeScale: 0.05, numGpuBlocksOverride: 300, maxModelLen: 2048 });
    try {
      const url = `${sim.url}/v1/completions`;
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          streamRequest(url, { model: 'tiny', prompt: wordsPrompt(200, `p${i}`), max_tokens: 400, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
        ),
      );
      for (const r of results) {
        assert.is(r.status, 200);
        const usage = r.events.map((e) => e.json?.usage as { completion_tokens: number } | null | undefined).find((u) => u);
        assert.is(usage?.completion_tokens, 400);
        assert.is(r.events[r.events.length - 1].data, '[DONE]');
      }
      const metrics = await (await fetch(`${sim.url}/metrics`)).text();
      assert.match(metrics, /# TYPE vllm:num_preemptions_total counter/);
      const preemptions = metricValue(metrics, 'vllm:num_preemptions_total');
      console.log(`  ${scheduler}: vllm:num_preemptions_total ${preemptions}`);
      assert.ok(preemptions >= 1, `preemptions ${preemptions}`);
      assert.is(metricValue(metrics, 'vllm:generation_tokens_total'), 12 * 400);
      assert.ok(metricValue(metrics, 'vllm:prompt_tokens_total') > 12 * 200, 'recomputed prompts count as prefill tokens');
      assert.is(metricValue(metrics, 'vllm:num_requests_running'), 0);
      assert.is(metricValue(metrics, 'vllm:kv_cache_usage_perc'), 0);
      assert.is((await fetch(`${sim.url}/health`)).status, 200, 'still alive');
    } finally {
      await sim.close();
    }
  });
}

test('/metrics has vLLM names and types: gauges, counters, histograms', async () => {
  const sim = await startSimServer({ port: 0, timeScale: 0.05 });
  try {
    await streamRequest(`${sim.url}/v1/completions`, { prompt: 'a b c', max_tokens: 5, ignore_eos: true, stream: true });
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    for (const [name, type] of [
      ['vllm:num_requests_running', 'gauge'],
      ['vllm:num_requests_waiting', 'gauge'],
      ['vllm:kv_cache_usage_perc', 'gauge'],
      ['vllm:num_preemptions_total', 'counter'],
      ['vllm:prompt_tokens_total', 'counter'],
      ['vllm:generation_tokens_total', 'counter'],
      ['vllm:time_to_first_token_seconds', 'histogram'],
      ['vllm:request_queue_time_seconds', 'histogram'],
      ['vllm:e2e_request_latency_seconds', 'histogram'],
    ]) {
      assert.ok(text.includes(`# TYPE ${name} ${type}\n`), `${name} ${type}`);
    }
    assert.match(text, /vllm:time_to_first_token_seconds_count\{model_name="tiny"\} 1\.0/);
    assert.match(text, /vllm:time_to_first_token_seconds_bucket\{model_name="tiny",le="\+Inf"\} 1\.0/);
    assert.match(text, /vllm:prompt_tokens_total\{model_name="tiny"\} 3\.0/);
    // The simulator's own lateness: one observation per iteration (5 tokens → 5 iterations).
    assert.match(text, /# TYPE fluidcap_sim:iteration_lateness_seconds histogram\n/);
    assert.match(text, /fluidcap_sim:iteration_lateness_seconds_count\{model_name="tiny"\} 5\.0/);
  } finally {
    await sim.close();
  }
});

test.run();
