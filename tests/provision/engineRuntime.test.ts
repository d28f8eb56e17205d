// What a started engine says it runs, read from its start-up log and /version: vLLM's own lines
// (as 0.8.5's V0 and V1 engines print them), the simulated engine's equivalent lines over real
// HTTP, and the refusal when the scheduler that runs is not the one the recipe asked for.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readEngineRuntime, runtimeMismatch, describeRuntime } from '../../harness/provision/engineRuntime.ts';
import { startSimServer } from '../../harness/sim/server.ts';
import type { EngineBasis } from '../../harness/provision/containerSpec.ts';

// Shaped like vLLM 0.8.5's lines (vllm/engine/llm_engine.py, vllm/v1/engine/core.py, vllm/config.py).
const V0_LOG = `INFO 05-01 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5
INFO 05-01 10:00:09 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5) with config: model='meta-llama/Meta-Llama-3-8B', speculative_config=None, max_seq_len=4096, seed=None, served_model_name=meta-llama/Meta-Llama-3-8B, num_scheduler_steps=1, enable_prefix_caching=False, chunked_prefill_enabled=False, use_async_output_proc=True, use_cached_outputs=True,
`;
const V1_LOG = `INFO 05-01 10:00:05 [config.py:2003] Chunked prefill is enabled with max_num_batched_tokens=8192.
INFO 05-01 10:00:09 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='meta-llama/Meta-Llama-3-8B', max_seq_len=4096, enable_prefix_caching=False, chunked_prefill_enabled=True, use_async_output_proc=True,
`;

const basis = (scheduler: EngineBasis['scheduler']): EngineBasis => ({ family: 'vllm', scheduler, version: '0.8.5', versionSource: 'image', versionArgv: [], versionEnv: [] });

test("vLLM 0.8.5's V0 and V1 start-up lines: generation, chunked prefill, budget, version", () => {
  assert.equal(readEngineRuntime(V0_LOG, '{"version":"0.8.5"}'), { generation: 'V0', engineVersion: '0.8.5', versionRoute: '0.8.5', chunkedPrefill: false, maxNumBatchedTokens: null });
  assert.equal(readEngineRuntime(V1_LOG, null), { generation: 'V1', engineVersion: '0.8.5', versionRoute: null, chunkedPrefill: true, maxNumBatchedTokens: 8192 });
  assert.equal(readEngineRuntime('llama server listening', 'not json'), { generation: null, engineVersion: null, versionRoute: null, chunkedPrefill: null, maxNumBatchedTokens: null });
});

test('what runs against what was asked: V1 chunking under a prefill-first recipe is refused; silence is not', () => {
  const v1 = readEngineRuntime(V1_LOG, null);
  assert.is(runtimeMismatch(basis('prefill-first'), v1),
    "the recipe asks for vLLM's prefill-first scheduler (V0, whole prompts), but the engine started V1 with chunked prefill (max_num_batched_tokens=8192) (its start-up log says so); its measurements would be of another scheduler");
  assert.is(runtimeMismatch(basis('prefill-first'), readEngineRuntime(V0_LOG, null)), null);
  assert.is(runtimeMismatch(basis('chunked-prefill'), v1), null);
  assert.match(runtimeMismatch(basis('chunked-prefill'), readEngineRuntime(V0_LOG, null))!, /asks for chunked prefill, but the engine started V0 without it/);
  assert.is(runtimeMismatch(basis('prefill-first'), readEngineRuntime('', null)), null);
  assert.is(describeRuntime(v1), 'V1, chunked prefill on (8192 tokens per iteration) (version 0.8.5)');
});

test('the simulated engine prints the same lines and answers /version (real HTTP)', async () => {
  for (const [scheduler, chunked, budget] of [['sarathi', true, 256], ['vllm', false, 4096]] as const) {
    const lines: string[] = [];
    const sim = await startSimServer({ port: 0, scheduler, chunkSize: 256, maxModelLen: 4096, logStatsInterval: 0, log: (l) => lines.push(l) });
    try {
      await sim.ready;
      const version = await (await fetch(`${sim.url}/version`)).text();
      const rt = readEngineRuntime(lines.join('\n'), version);
      assert.equal(rt, { generation: 'V0', engineVersion: 'fluidcap-sim-0.1.0', versionRoute: 'fluidcap-sim-0.1.0', chunkedPrefill: chunked, maxNumBatchedTokens: budget }, scheduler);
      assert.is(runtimeMismatch(basis(chunked ? 'chunked-prefill' : 'prefill-first'), rt), null);
    } finally {
      await sim.close();
    }
  }
});

test.run();
