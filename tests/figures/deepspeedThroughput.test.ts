// deepspeed-throughput: the benchmark's quantities from hand-made batches (run_model.py's formulas,
// the time scale, a batch with a failed request), the log in run_model.py's printed format, then the
// figure end to end on the simulated engine with a reduced batch list (1 and 4, 128-token prompts,
// 8 generated tokens): every request archived, the CSV equal to the archived timelines' numbers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GIB, batchRow, benchmarkLog, type BatchRequest } from '../../harness/figures/deepspeedThroughput.ts';
import { runDeepspeedThroughput } from '../../harness/figures/deepspeedRun.ts';
import { findModel, modelSizes } from '../../harness/catalog/models.ts';

const MODEL = { name: 'm', weightBytes: 2 * GIB, kvBytesPerToken: 131072, hiddenSize: 4096 };
const req = (sentOffsetS: number, ttftS: number | null, e2eS: number, o: Partial<BatchRequest> = {}): BatchRequest => ({ sentOffsetS, ttftS, e2eS, ok: true, outputTokens: 32, ...o });

test("batchRow: run_model.py's formulas, prefill ending at the batch's last first token", () => {
  const r = batchRow([req(0, 0.2, 1.0), req(0.01, 0.3, 0.9), req(0.02, 0.1, 1.2)], MODEL, 512, 32);
  assert.is(r.batchSize, 3);
  assert.ok(Math.abs(r.prefillLatencyS! - 0.31) < 1e-12, `prefill ${r.prefillLatencyS}`);
  assert.ok(Math.abs(r.totalLatencyS! - 1.22) < 1e-12);
  assert.ok(Math.abs(r.decodeLatencyS! - 0.91) < 1e-12);
  assert.ok(Math.abs(r.prefillTokensPerS! - (3 * 512) / 0.31) < 1e-6);
  assert.ok(Math.abs(r.decodeTokensPerS! - (3 * 31) / 0.91) < 1e-6);
  assert.ok(Math.abs(r.totalTokensPerS! - (3 * 32) / 1.22) < 1e-6);
  assert.is(r.modelGiB, 2);
  assert.is(r.cacheGiB, (3 * 544 * 131072) / GIB);
  assert.is(r.hiddenGiB, (3 * 544 * 4096 * 2) / GIB);
  assert.is(r.shortOrFailed, 0);
});

test('batchRow: latencies in the model time under a time scale; a request without a token leaves prefill unknown', () => {
  const scaled = batchRow([req(0, 0.1, 0.5)], MODEL, 512, 32, 0.5);
  assert.ok(Math.abs(scaled.prefillLatencyS! - 0.2) < 1e-12);
  assert.ok(Math.abs(scaled.totalLatencyS! - 1.0) < 1e-12);
  const failed = batchRow([req(0, 0.1, 0.5), req(0, null, 0.05, { ok: false, outputTokens: 0 })], MODEL, 512, 32);
  assert.is(failed.prefillLatencyS, null);
  assert.is(failed.decodeTokensPerS, null);
  assert.is(failed.shortOrFailed, 1);
});

test("benchmarkLog: the lines run_model.py's write_benchmark_log prints", () => {
  const log = benchmarkLog(batchRow([req(0, 0.25, 1.25)], MODEL, 512, 32), null);
  const lines = log.split('\n');
  assert.is(lines.length, 4);
  assert.match(lines[0], /^model size: 2\.000 GB\tcache size: 0\.066 GB\thidden size \(p\): 0\.004 GB$/);
  assert.match(lines[1], /^peak gpu mem: n\/a GB\tprefill latency: 0\.250 s\tprefill throughput: 2048\.000 token\/s$/);
  assert.match(lines[2], /^decode latency: 1\.000 s\tdecode throughput: 31\.000 token\/s$/);
  assert.match(lines[3], /^total latency: 1\.250 s\ttotal throughput: 25\.600 token\/s$/);
});

test('end to end on the simulated engine, batch sizes 1 and 4: archived requests, CSV and estimates agree', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-deepspeed-'));
  try {
    const o = await runDeepspeedThroughput({ outDir: tmp, timeScale: 1, batchSizes: [4, 1], promptTokens: 128, genTokens: 8, log: () => {} });
    assert.is(o.status, 'completed');
    const read = (f: string) => readFileSync(join(o.dir, f), 'utf8');
    for (const f of ['latency.svg', 'throughput.svg', 'memory.svg', 'batches.csv', 'benchmark.log', 'claims.csv', 'README.md']) assert.ok(read(f).length > 0, f);
    assert.equal(readdirSync(join(o.dir, 'batches')).sort(), ['bs1-measured.jsonl', 'bs1-warm-up.jsonl', 'bs4-measured.jsonl', 'bs4-warm-up.jsonl']);
    const csv = read('batches.csv').trimEnd().split('\n');
    const head = csv[0].split(',');
    const rows = csv.slice(1).map((l) => Object.fromEntries(l.split(',').map((v, i) => [head[i], Number(v)])));
    assert.equal(rows.map((r) => r.batchSize), [1, 4]);
    const kv = modelSizes(findModel('llama-3-8b')!).kvBytesPerToken;
    for (const r of rows) {
      // Recomputed from the archived timelines of the measured batch, independently of batchRow.
      const lines = read(`batches/bs${r.batchSize}-measured.jsonl`).trim().split('\n').map((l) => JSON.parse(l) as { sentOffsetS: number; scheduledS: number; status: string; outputTokens: number; chunks: [number, number][]; endS?: number });
      assert.is(lines.length, r.batchSize);
      for (const l of lines) {
        assert.is(l.status, 'ok');
        assert.is(l.outputTokens, 8);
      }
      const lastFirst = Math.max(...lines.map((l) => l.sentOffsetS + l.chunks[0][0] - l.scheduledS));
      assert.ok(Math.abs(r.prefillLatencyS - lastFirst) < 1e-6, `bs${r.batchSize}: prefill ${r.prefillLatencyS} vs ${lastFirst} from the timelines`);
      assert.ok(r.prefillLatencyS > 0 && r.decodeLatencyS > 0 && r.totalLatencyS > r.prefillLatencyS);
      assert.ok(Math.abs(r.cacheGiB - (r.batchSize * 136 * kv) / GIB) < 1e-9);
      assert.is(r.shortOrFailed, 0);
    }
    assert.match(read('README.md'), /batches of 1, 4 requests sent at once, 128-token prompts, 8 generated tokens/);
    // The page's reference rows offload 30B-176B models on an A6000: not comparable with Llama-3-8B here.
    assert.match(read('claims.csv'), /Z-07,value,llama-2-70b\.4bit\.noKvOffload\.bs96\.tokensPerS,.*,24\.05 tokens\/s,.*,not comparable here,hardware: /);
    assert.ok(o.runSeconds.engine > 0);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test.run();
