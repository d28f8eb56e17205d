// The iteration-time model against published measurements (Vidur's profiling data, per transformer
// layer, TP1): every point within ±25%, printed as a table. Plus the shape the schedulers rely on.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { iterationCost, linearLayerTimeS } from '../../harness/sim/costModel.ts';
import { findModel, type ModelSpec } from '../../harness/catalog/models.ts';
import { loadGpuProfile } from '../../harness/catalog/gpus.ts';

const model = (n: string): ModelSpec => findModel(n)!;

const MEASURED: Array<{ model: string; gpu: string; tokens: number; ms: number }> = [
  { model: 'llama-2-7b', gpu: 'h100-sxm-80gb', tokens: 1, ms: 0.175 },
  { model: 'llama-2-7b', gpu: 'h100-sxm-80gb', tokens: 512, ms: 0.375 },
  { model: 'llama-2-7b', gpu: 'h100-sxm-80gb', tokens: 4096, ms: 2.59 },
  { model: 'llama-2-7b', gpu: 'a100-sxm-80gb', tokens: 1, ms: 0.29 },
  { model: 'llama-2-7b', gpu: 'a100-sxm-80gb', tokens: 512, ms: 1.04 },
  { model: 'llama-2-7b', gpu: 'a100-sxm-80gb', tokens: 4096, ms: 8.17 },
  { model: 'llama-3-8b', gpu: 'a100-sxm-80gb', tokens: 4096, ms: 8.53 },
];

test('linear layers land within ±25% of Vidur measurements (table printed)', () => {
  const rows = MEASURED.map((m) => {
    const modelMs = linearLayerTimeS(model(m.model), loadGpuProfile(m.gpu), m.tokens) * 1e3;
    return { ...m, modelMs, errorPct: ((modelMs - m.ms) / m.ms) * 100 };
  });
  console.log('\n  model        gpu             tokens  measured ms  modelled ms  error');
  for (const r of rows) {
    console.log(
      `  ${r.model.padEnd(12)} ${r.gpu.padEnd(15)} ${String(r.tokens).padStart(6)}  ${r.ms.toFixed(3).padStart(11)}  ${r.modelMs.toFixed(3).padStart(11)}  ${(r.errorPct >= 0 ? '+' : '') + r.errorPct.toFixed(1)}%`,
    );
  }
  for (const r of rows) assert.ok(Math.abs(r.errorPct) <= 25, `${r.model} ${r.gpu} ${r.tokens}: ${r.errorPct.toFixed(1)}%`);
});

test('a long prefill costs far more than a decode step; decode cost grows with KV read', () => {
  const m = model('llama-3-8b');
  const gpu = loadGpuProfile('h100-sxm-80gb');
  const decode = iterationCost(m, gpu, { prefills: [], decodeKvTokens: [1000] }).totalS;
  const decodeLongKv = iterationCost(m, gpu, { prefills: [], decodeKvTokens: Array(64).fill(4000) }).totalS;
  const prefill = iterationCost(m, gpu, { prefills: [{ chunkTokens: 4000, contextTokens: 0, completes: true }], decodeKvTokens: [] }).totalS;
  assert.ok(decode > 0.005 && decode < 0.012, `single decode ${decode}`);
  assert.ok(prefill > 8 * decode, `prefill ${prefill} vs decode ${decode}`);
  assert.ok(decodeLongKv > decode * 1.5, 'KV reads cost time');
});

test('prefill attention grows like Σc²: two halves cost less attention than one whole', () => {
  const m = model('llama-2-7b');
  const gpu = loadGpuProfile('a100-sxm-80gb');
  const whole = iterationCost(m, gpu, { prefills: [{ chunkTokens: 4000, contextTokens: 0, completes: true }], decodeKvTokens: [] });
  const halves = iterationCost(m, gpu, {
    prefills: [
      { chunkTokens: 2000, contextTokens: 0, completes: true },
      { chunkTokens: 2000, contextTokens: 0, completes: true },
    ],
    decodeKvTokens: [],
  });
  const ratio = halves.prefillAttentionS / whole.prefillAttentionS;
  assert.ok(Math.abs(ratio - 0.5) < 0.01, `ratio ${ratio}`);
});

test('tensor parallelism divides compute and adds all-reduce time', () => {
  const m = model('llama-2-70b');
  const gpu = loadGpuProfile('h100-sxm-80gb');
  const batch = { prefills: [{ chunkTokens: 2048, contextTokens: 0, completes: true }], decodeKvTokens: [] };
  const tp2 = iterationCost(m, gpu, batch, 2);
  const tp4 = iterationCost(m, gpu, batch, 4);
  assert.ok(tp2.allReduceS > 0);
  assert.ok(tp4.linearS < tp2.linearS * 0.6);
  assert.ok(tp4.totalS < tp2.totalS);
});

test.run();
