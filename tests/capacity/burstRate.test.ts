// The rate a probe's bursts put it at: over the planner's own draws it averages the planned rate,
// a draw replayed faster reads higher, the same backlog reads the same at any rate, and arrivals
// timed by a trace have no draws to compare with.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { arrivalOf, burstQps, burstQpsYielding } from '../../harness/capacity/burstRate.ts';
import { backlogReference, burstQpsOf } from '../../harness/metrics/virtualBacklog.ts';
import { deriveSeed } from '../../harness/util/rng.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema, type WorkloadSpec } from '../../harness/load/workloadSpec.ts';

const workload = workloadSchema.parse({ lengths: { prompt: { median: 600, p90: 1500 }, output: { median: 100, p90: 300 } }, arrivals: { process: 'poisson' }, seed: 3 });
const draw = (qps: number, seed: number, requests = 300) => planProbe({ workload, rateQps: qps, requests, seed: 10_000 + seed, maxContextTokens: 8192 }).requests;

test('over draws of the workload the bursts average the planned rate, and scatter more than the realized rate', () => {
  const rates = Array.from({ length: 120 }, (_, s) => burstQps(draw(8, s), 8, workload, undefined, 8192)!);
  const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
  const sd = Math.sqrt(rates.reduce((a, r) => a + (r - mean) ** 2, 0) / (rates.length - 1));
  assert.ok(Math.abs(mean / 8 - 1) < 0.02, `mean ${mean}`);
  // A count's scatter over 300 arrivals is about 1/√300 = 5.8%; bursts and lengths add to it.
  assert.ok(sd / 8 > 0.06 && sd / 8 < 0.3, `sd ${sd / 8}`);
});

test('a draw replayed faster reads higher; the same draw at ten times the rate reads ten times higher', () => {
  const d = draw(5, 1);
  const faster = d.map((r) => ({ ...r, scheduledS: r.scheduledS / 1.05 }));
  const at = burstQps(d, 5, workload, undefined, 8192)!;
  assert.ok(burstQps(faster, 5, workload, undefined, 8192)! > at);
  const tenfold = d.map((r) => ({ ...r, scheduledS: r.scheduledS / 10 }));
  assert.ok(Math.abs(burstQps(tenfold, 50, workload, undefined, 8192)! / (10 * at) - 1) < 1e-9);
});

test('arrivals timed by a trace, or fewer than two, have no burst rate', () => {
  // (Trace arrivals need a trace file's lengths; the rate is refused before either is read.)
  const traced: WorkloadSpec = { ...workload, arrivals: { process: 'trace' } };
  assert.is(burstQps(draw(5, 2), 5, traced, undefined, 8192), null);
  assert.is(burstQps(draw(5, 2).slice(0, 1), 5, workload, undefined, 8192), null);
});

test('a new reference, drawn yielding, lets the event loop run between its draws and reads what the planner\'s draws give', async () => {
  const own: WorkloadSpec = { ...workload, seed: 77 };
  const d = draw(8, 5);
  let turns = 0;
  let on = true;
  const tick = () => {
    turns++;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const got = await burstQpsYielding(d, 8, own, undefined, 8192);
  on = false;
  // Two passes over 400 draws: the loop turned between them.
  assert.ok(turns >= 400, `${turns} turns`);
  // The reference is 400 of the planner's draws at one request a second, seeded from the workload's seed.
  const drawOf = (k: number) => planProbe({ workload: own, rateQps: 1, requests: 1000, seed: deriveSeed(77, `backlog reference ${k}`), maxContextTokens: 8192 }).requests.map(arrivalOf);
  assert.is(got, burstQpsOf(d.map(arrivalOf), 8, backlogReference(400, 1000, drawOf)));
  // Memoized: the same answer at once.
  assert.is(burstQps(d, 8, own, undefined, 8192), got);
});

test.run();
