// A standalone probe whose client error exceeds its tolerance keeps its verdict when the verdict is
// the same with every deadline moved against it by that error. A real local HTTP server streams a
// token every 20 ms and states each chunk's emit time some milliseconds early, so the measured
// receive − emit error is at least that much; a 1 µs tolerance makes every probe exceed it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planProbe } from '../../harness/load/plan.ts';
import { runProbe } from '../../harness/load/runProbe.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import type { Slo } from '../../harness/metrics/slo.ts';
import { describeResult, probeMetrics, probeUntrusted } from '../../harness/cli/commands/probe.ts';
import { startEmitter } from './support/emitter.ts';

const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 64 }, output: { min: 10, max: 20 } }, arrivals: { process: 'poisson' }, seed: 7 });
const fluidity = (tbtDeadlineS: number, ttftSlackS = 0.3): Slo => ({ fluidity: { tbtDeadlineS, ttftSlackS, minFluidity: 0.9, percentile: 99, source: `tbt ${tbtDeadlineS}` } });

async function probeAgainst(opts: { emitSkewMs: number; slo: Slo; qps: number; requests: number }) {
  const emitter = await startEmitter({ tokenIntervalMs: 20, emitSkewMs: opts.emitSkewMs });
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-clienterr-'));
  try {
    const plan = planProbe({ workload, rateQps: opts.qps, requests: opts.requests, maxContextTokens: 2048, idPrefix: '00' });
    const result = await runProbe(plan, { outDir: dir, baseUrl: emitter.url, model: 'm', workers: 1, requestTimeoutS: 10, stallTimeoutS: 2, clientToleranceS: 1e-6, tbtDeadlineS: opts.slo.fluidity!.tbtDeadlineS });
    const notes: string[] = [];
    const judged = await probeMetrics(result, opts.slo, notes, 'engine');
    return { result, ...judged, text: describeResult(result, dir, notes, judged.clientErrorEffect) };
  } finally {
    await emitter.close();
    rmSync(dir, { recursive: true });
  }
}

test('4 QPS, 40 requests, a token every 20 ms against a 50 ms deadline: the pass holds tightened, the probe is trusted and says why', async () => {
  const p = await probeAgainst({ emitSkewMs: 6.8, slo: fluidity(0.05), qps: 4, requests: 40 });
  assert.is(p.result.byStatus.ok, 40, JSON.stringify(p.result.byStatus));
  assert.is(p.result.clientHealth.verdict, 'invalid', 'the error exceeds a 1 µs tolerance');
  assert.ok(p.result.clientHealth.clientErrorS >= 0.0068, `measured ${p.result.clientHealth.clientErrorS}`);
  assert.ok(p.metrics.slo.passed, JSON.stringify(p.metrics.slo.results));
  const e = p.clientErrorEffect!;
  assert.is(e.verdict, 'pass');
  assert.is(e.moved, 'tightened');
  assert.ok(e.holds, e.note);
  assert.is(e.errorS, p.result.clientHealth.clientErrorS);
  assert.match(e.note, /^client error [\d.]+ ms: the pass holds with every deadline [\d.]+ ms tighter$/);
  assert.not.ok(probeUntrusted(p.result, e), 'exit 0, not 3');
  assert.match(p.text, /verdict kept despite the client error: client error [\d.]+ ms: the pass holds/);
});

// A small TTFT slack, so the first token banks too little slack to absorb 10 ms lost per token.
test('a pass the error could flip (40 ms deadline, 50 ms TTFT slack, at least 30 ms of error) stays untrusted', async () => {
  const p = await probeAgainst({ emitSkewMs: 30, slo: fluidity(0.04, 0.05), qps: 8, requests: 16 });
  assert.is(p.result.clientHealth.verdict, 'invalid');
  assert.ok(p.metrics.slo.passed, `20 ms gaps pass a 40 ms deadline: ${JSON.stringify(p.metrics.slo.results)}`);
  const e = p.clientErrorEffect!;
  assert.is(e.verdict, 'pass');
  assert.not.ok(e.holds, e.note);
  assert.match(e.note, /would turn to a fail with every deadline [\d.]+ ms tighter|consume the whole fluidity deadline/);
  assert.ok(probeUntrusted(p.result, e), 'exit 3');
  assert.not.match(p.text, /verdict kept/);
});

test.run();
