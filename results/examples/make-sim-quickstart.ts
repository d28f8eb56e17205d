// Writes results/examples/sim-quickstart/: a small, deterministic (seeded) example run in the SPEC §4
// layout, so `fluidcap analyze results/examples/sim-quickstart` works before the capacity pipeline
// can produce a real one. The timelines come from a toy queueing model of a vLLM-like server
// (prefill-prioritizing stalls grow with load), NOT from an engine; manifest.json says so.
// Regenerate: npx tsx results/examples/make-sim-quickstart.ts
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TimelineWriter } from '../../harness/timeline/writer.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { predictPrefillS, type PrefillFit } from '../../harness/metrics/prefill.ts';
import { sloSchema } from '../../harness/metrics/slo.ts';
import { summarizeRequests } from '../../harness/metrics/summary.ts';
import { createRng } from '../../harness/util/rng.ts';

const SEED = 42;
const OUT = join(dirname(fileURLToPath(import.meta.url)), 'sim-quickstart');
const RATES_QPS = [2, 4, 6];
const REQUESTS_PER_PROBE = 100;
const FIT: PrefillFit = { a: 0.018, b: 5.5e-5, c: 1.2e-8, r2: 0.9991, n: 21, ttftSlackS: 0.3 };
const RAW_SLO = {
  fluidity: { tbtDeadline: '50ms', ttftSlack: '0.3s', minFluidity: 0.9, percentile: 99 },
  ttft: { percentile: 90, max: '2s' },
  tpot: 'p50 <= 60ms',
};

// Seeded so every run produces the same data (the project's one seeded generator).
function rng(seed: number): () => number {
  const r = createRng(seed);
  return () => r.next();
}
const us = (s: number) => Math.round(s * 1e6) / 1e6;

function probeRecords(probeIndex: number, rateQps: number): TimelineRecord[] {
  const rand = rng(SEED * 1000 + probeIndex);
  const exp = (mean: number) => -Math.log(1 - rand()) * mean;
  // Load knobs of the toy model: queueing and stall probability grow with the rate.
  const rho = Math.min(0.97, rateQps / 9);
  const stallP = Math.min(0.6, 0.012 * rateQps * rateQps);
  const records: TimelineRecord[] = [];
  let arrivalS = 0;
  for (let i = 0; i < REQUESTS_PER_PROBE; i++) {
    arrivalS += exp(1 / rateQps);
    const scheduledS = arrivalS;
    const sentS = scheduledS + 0.0001 + rand() * 0.0004;
    const promptTokens = Math.round(128 * 2 ** (rand() * 4));
    const maxTokens = 16 + Math.floor(rand() * 80);
    const waitS = exp((0.15 * rho) / (1 - rho));
    let t = sentS + waitS + predictPrefillS(FIT, promptTokens) * (0.95 + 0.1 * rand());
    const chunks: [number, number][] = [];
    let tokens = 0;
    const fails = rand() < 0.0008 * rateQps * rateQps;
    const stopAt = fails ? Math.floor(rand() * maxTokens) : maxTokens;
    while (tokens < stopAt) {
      const k = rand() < 0.05 && tokens + 2 <= stopAt ? 2 : 1;
      chunks.push([us(t), k]);
      tokens += k;
      let gap = 0.012 + 0.0025 * rateQps + rand() * 0.006;
      if (rand() < stallP) gap += predictPrefillS(FIT, Math.round(128 * 2 ** (rand() * 4)));
      t += gap;
    }
    records.push({
      id: `${String(probeIndex + 1).padStart(2, '0')}-${String(i).padStart(4, '0')}`,
      scheduledS: us(scheduledS),
      sentS: us(sentS),
      promptTokens,
      maxTokens,
      outputTokens: tokens,
      chunks,
      status: fails ? (rand() < 0.5 ? 'timeout' : 'error') : 'ok',
      httpStatus: fails ? null : 200,
      error: fails ? 'stream ended without [DONE] (synthetic fault)' : null,
    });
  }
  // Lines are written when requests end, as a real probe does.
  return records.sort((x, y) => (x.chunks.at(-1)?.[0] ?? x.sentS) - (y.chunks.at(-1)?.[0] ?? y.sentS));
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(join(OUT, 'profile'), { recursive: true });
writeFileSync(join(OUT, 'profile', 'fit.json'), JSON.stringify(FIT, null, 2) + '\n');
const slo = sloSchema.parse(RAW_SLO);
const probes = [];
for (const [index, rateQps] of RATES_QPS.entries()) {
  const name = `${String(index + 1).padStart(2, '0')}-qps-${rateQps}`;
  const records = probeRecords(index, rateQps);
  const writer = new TimelineWriter(join(OUT, 'probes', name, 'timelines.jsonl'));
  for (const r of records) writer.append(r);
  writer.close();
  const metrics = records.map((r) => {
    const prefillS = predictPrefillS(FIT, r.promptTokens);
    return computeRequestMetrics(JSON.parse(JSON.stringify(r)), {
      dpS: prefillS + slo.fluidity!.ttftSlackS,
      prefillS,
      tbtDeadlineS: slo.fluidity!.tbtDeadlineS,
    });
  });
  const durationS = us(Math.max(...metrics.map((m) => m.endS)));
  const summary = summarizeRequests(metrics, { slo, durationS });
  const fluidity = summary.slo.results.find((r) => r.name === 'fluidity')!;
  writeFileSync(
    join(OUT, 'probes', name, 'summary.json'),
    JSON.stringify({ qps: rateQps, durationS, requests: summary.requests, passed: summary.slo.passed, slo: summary.slo, earlyStop: null }, null, 2) + '\n',
  );
  probes.push({ qps: rateQps, passed: summary.slo.passed, requests: summary.requests, durationS, earlyStop: null, sloValue: fluidity.value });
}
const passing = probes.filter((p) => p.passed).map((p) => p.qps);
const failing = probes.filter((p) => !p.passed).map((p) => p.qps);
const passQps = passing.length ? Math.max(...passing) : null;
const failQps = failing.length ? Math.min(...failing) : null;
writeFileSync(
  join(OUT, 'capacity.json'),
  JSON.stringify(
    {
      capacityQps: passQps ?? 0,
      slo,
      bracket: { passQps, failQps },
      probes,
      gpuSeconds: Math.round(probes.reduce((s, p) => s + p.durationS, 0) * 1000) / 1000,
      note: 'synthetic example: three fixed-rate probes, not a search',
    },
    null,
    2,
  ) + '\n',
);
writeFileSync(
  join(OUT, 'manifest.json'),
  JSON.stringify(
    {
      runId: 'sim-quickstart',
      tool: { name: 'fluidcap', version: '0.1.0' },
      gitSha: null,
      seed: SEED,
      recipe: {
        name: 'quickstart',
        target: { engine: 'sim', image: 'fluidcap/sim:dev', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', host: 'local', gpus: [0] },
        workload: { api: 'completions', arrivals: { process: 'poisson' }, seed: SEED },
        slo: RAW_SLO,
      },
      hostFacts: null,
      startedAt: '2026-01-01T00:00:00.000Z',
      endedAt: '2026-01-01T00:02:00.000Z',
      status: 'complete',
      exitReason: null,
      synthetic: 'generated by results/examples/make-sim-quickstart.ts from a seeded toy model, not by an engine',
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${OUT}: ${probes.map((p) => `${p.qps} qps ${p.passed ? 'pass' : 'fail'} (fluidity p99 ${p.sloValue})`).join(', ')}`);
