// Workload lengths: presets reproduce the papers' medians and p90s, distributions respect their
// bounds, Vidur's truncation rule on the real trace CSVs, and recipe validation names the field.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { PRESETS, truncateVidur } from '../../harness/load/lengths.ts';
import { parseTraceCsv } from '../../harness/load/traceCsv.ts';
import { loadWorkloadTrace } from '../../harness/load/traceFile.ts';
import { percentile } from '../../harness/metrics/percentile.ts';

const TRACES = new URL('../../../shared/traces/', import.meta.url);

test('presets: sampled medians and p90s within 4% of the published statistics, totals within the cap', () => {
  for (const [name, stats] of Object.entries(PRESETS)) {
    const workload = workloadSchema.parse({ lengths: { preset: name }, seed: 3 });
    const plan = planProbe({ workload, rateQps: 1, requests: 30000, maxContextTokens: 1 << 20 });
    const p = plan.requests.map((r) => r.promptTokens);
    const o = plan.requests.map((r) => r.maxTokens);
    const near = (got: number, want: number, what: string) => assert.ok(Math.abs(got - want) / want < 0.04, `${name} ${what}: ${got} vs ${want}`);
    near(percentile(p, 50), stats.prompt.median, 'prompt median');
    near(percentile(p, 90), stats.prompt.p90, 'prompt p90');
    near(percentile(o, 50), stats.output.median, 'output median');
    near(percentile(o, 90), stats.output.p90, 'output p90');
    if (stats.maxTotalTokens) assert.ok(plan.requests.every((r) => r.promptTokens + r.maxTokens <= stats.maxTotalTokens!));
  }
});

test('distributions: fixed, uniform bounds, quantiles, zipf skew; context cap holds', () => {
  const w = workloadSchema.parse({
    lengths: { prompt: { min: 10, max: 20 }, output: { dist: 'zipf', theta: 1.2, min: 1, max: 100 } },
  });
  const plan = planProbe({ workload: w, rateQps: 1, requests: 5000, maxContextTokens: 4096 });
  assert.ok(plan.requests.every((r) => r.promptTokens >= 10 && r.promptTokens <= 20));
  const ones = plan.requests.filter((r) => r.maxTokens === 1).length;
  const tens = plan.requests.filter((r) => r.maxTokens === 10).length;
  assert.ok(ones > 5 * tens, `zipf rank 1 (${ones}) should dwarf rank 10 (${tens})`);
  const fixed = planProbe({ workload: workloadSchema.parse({ lengths: { prompt: 3000, output: 2000 } }), rateQps: 1, requests: 3, maxContextTokens: 4096 });
  assert.ok(fixed.requests[0].promptTokens + fixed.requests[0].maxTokens <= 4096);
  assert.equal([fixed.requests[0].promptTokens, fixed.requests[0].maxTokens], truncateVidur(3000, 2000, 4096));
});

test("Vidur truncation: proportional, rounded up, each >= 1 (checked on the real splitwise_code trace)", () => {
  assert.equal(truncateVidur(4808, 10, 4096), [4808 - Math.ceil(722 * (4808 / 4818)), 10 - Math.ceil(722 * (10 / 4818))]);
  assert.equal(truncateVidur(100, 50, 4096), [100, 50]);
  const trace = new URL('splitwise_code.csv', TRACES);
  // The real traces live beside the repository (../shared); a fresh clone has none.
  if (!existsSync(trace)) return console.log(`SKIP the splitwise_code trace check: ${trace.pathname} is absent (../shared is not checked out)`);
  const text = readFileSync(trace, 'utf8');
  const table = parseTraceCsv(text, 4096);
  if ('error' in table) throw new Error(table.error);
  assert.is(table.rows, 8819);
  assert.is(table.promptTokens[0], 4808 - 721);
  assert.is(table.outputTokens[0], 10 - 2);
  for (let i = 0; i < table.rows; i++) {
    assert.ok(table.promptTokens[i] + table.outputTokens[i] <= 4096 && table.promptTokens[i] >= 1 && table.outputTokens[i] >= 1);
  }
  assert.is(table.arrivedS![1], 0.052);
});

test('trace workloads: file relative to the recipe, replayed in order with arrivals; missing file names the field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-trace-'));
  try {
    writeFileSync(join(dir, 't.csv'), 'arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n1,20,6\n3,30,7\n');
    const w = workloadSchema.parse({ lengths: { trace: 't.csv' }, arrivals: { process: 'trace', timeScale: 2 } });
    const trace = loadWorkloadTrace(w, dir)!;
    const plan = planProbe({ workload: w, rateQps: 1, requests: 3, maxContextTokens: 4096, trace });
    assert.equal(plan.requests.map((r) => [r.scheduledS, r.promptTokens, r.maxTokens]), [[0, 10, 5], [2, 20, 6], [6, 30, 7]]);
    const missing = workloadSchema.parse({ lengths: { trace: 'nope.csv' } });
    assert.throws(() => loadWorkloadTrace(missing, dir, 'recipes/x.yaml'), /recipes\/x\.yaml: workload\.lengths\.trace must be a readable CSV file.*"nope\.csv" \(string\)/);
    writeFileSync(join(dir, 'lens.csv'), 'num_prefill_tokens,num_decode_tokens\n10,5\n');
    const noTimes = workloadSchema.parse({ lengths: { trace: 'lens.csv' }, arrivals: { process: 'trace' } });
    assert.throws(() => loadWorkloadTrace(noTimes, dir), /arrived_at/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('schema: every problem with its path; defaults filled', () => {
  const r = workloadSchema.safeParse({ lengths: { prompt: { median: 100, p90: 50 }, output: { dist: 'uniform', min: 9, max: 3 } }, arrivals: { process: 'gamma' }, api: 'grpc' });
  assert.is(r.success, false);
  const paths = r.error!.issues.map((i) => i.path.join('.')).sort();
  assert.equal(paths, ['api', 'arrivals.burstiness', 'lengths.output.max', 'lengths.prompt.p90']);
  const ok = workloadSchema.parse({ lengths: { preset: 'bwb-4k' } });
  assert.equal(ok.arrivals, { process: 'poisson' });
  assert.is(ok.api, 'completions');
  assert.is(ok.seed, 42);
  const bad = workloadSchema.safeParse({ lengths: { preset: 'nope' } });
  assert.equal(bad.error!.issues.map((i) => i.path.join('.')), ['lengths.preset']);
  const traceless = workloadSchema.safeParse({ lengths: { preset: 'chat-1m' }, arrivals: { process: 'trace' } });
  assert.equal(traceless.error!.issues.map((i) => i.path.join('.')), ['arrivals.process']);
});

test.run();
