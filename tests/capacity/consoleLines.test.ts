// The probe lines `fluidcap run` prints: one line each, under the budget, the SLO by its short
// name, the verdict with its key latencies, and for an invalid or early-stopped probe the reason
// and the fix in words. The reasons are the texts earlyStop.ts and the client check write.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LINE_BUDGET, briefValidity, probeLine, sloLegend } from '../../harness/capacity/consoleLines.ts';
import { earlyStopBrief } from '../../harness/metrics/sloBrief.ts';
import { sloDefinitions } from '../../harness/capacity/perSloSearch.ts';
import type { ProbeSummary } from '../../harness/runDir/schema.ts';
import type { Slo } from '../../harness/metrics/slo.ts';

const SOURCE = 'fluidity: { tbtDeadline: 50ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }';
const slo = { fluidity: { source: SOURCE, tbtDeadlineS: 0.05, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99 } } as unknown as Slo;
const defs = sloDefinitions(slo);
const STOP =
  `SLO "${SOURCE}" can no longer pass: 9 failing requests already exceed the 8 allowed of 864 (nearest-rank percentile); ` +
  `decided fail after 134 requests: SLO "${SOURCE}": fail (95% confidence): 31 misses in 134 requests (23.1%; allowed 1%, indifference zone 0.5%–1.5%, clustering τ 11.00)`;
const DIVERGES =
  'queueing diverges: the backlog grew from 12 to 80 requests and the median TTFT from 0.2 to 1.4 s over the last 3 windows of 1 s; ' +
  `if it keeps growing, 40 more requests wait longer than SLO "${SOURCE}" allows (3 failing + 40 projected > 8 allowed of 864)`;

const stat = (p99: number) => ({ count: 100, mean: p99, min: p99, p50: p99, p90: p99, p99, max: p99 });
function summary(over: Omit<Partial<ProbeSummary>, 'client'> & { client?: Partial<ProbeSummary['client']> }): ProbeSummary {
  return {
    index: 2,
    qps: 4,
    passed: true,
    valid: true,
    validity: 'client error 0.2 ms within tolerance 2 ms',
    interrupted: false,
    requests: 270,
    durationS: 83.2,
    earlyStop: null,
    engineDied: null,
    tokenDrift: { verdict: 'ok', note: '' },
    metrics: { ttftS: stat(0.0315), tbtS: stat(0.031) },
    slo: { passed: true, method: 'nearest-rank', results: [{ name: 'fluidity', source: SOURCE, percentile: 99, comparison: '>=', value: 0.9881, threshold: 0.9, passed: true, samples: 270 }] },
    ...over,
    client: { clientErrorS: 0.0002, toleranceS: 0.002, verdict: 'valid', cpuWait: null, ...over.client },
  } as unknown as ProbeSummary;
}

test('the SLO is spelled out once under its short name', () => {
  assert.equal(sloLegend(defs), ['SLO fluidity = { tbtDeadline: 50ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }']);
});

test('a passing probe: verdict, TTFT and TBT p99, fluidity at its percentile, size', () => {
  const line = probeLine(summary({}), defs, { warmupS: 10 });
  assert.is(line, 'probe 2: 4 QPS PASS · p99 TTFT 31.5 ms, TBT 31 ms, fluidity p99 0.988 · 270 req, 83.2 s (10 s warm-up)');
});

test('an early-stopped probe: the reason in a few words, the SLO by name, not its text', () => {
  const line = probeLine(summary({ passed: false, earlyStop: STOP }), defs);
  assert.ok(line.length <= LINE_BUDGET, `${line.length}: ${line}`);
  assert.match(line, /^probe 2: 4 QPS FAIL · p99 TTFT .* — stopped early: fluidity cannot pass \(9 failing > 8 allowed\)$/);
  assert.not.match(line, /tbtDeadline|fluidity p99/, 'an early-stopped probe has no fluidity of its own');
  // Long figures and a warm-up still fit.
  const long = probeLine(summary({ index: 10, qps: 48.25, requests: 1404, durationS: 120.2, passed: false, earlyStop: STOP, metrics: { ttftS: stat(12.25), tbtS: stat(0.163) } as ProbeSummary['metrics'] }), defs, { warmupS: 10 });
  assert.ok(long.length <= LINE_BUDGET, `${long.length}: ${long}`);
  assert.is(earlyStopBrief('decided fail after 40 requests: SLO "x": fail (95% confidence)', defs), 'decided fail at 40 req');
  assert.is(earlyStopBrief(DIVERGES, defs), 'fluidity cannot pass, the queue grows (12→80 waiting)');
  const diverging = probeLine(summary({ index: 4, qps: 36.25, requests: 1098, durationS: 115, passed: false, earlyStop: DIVERGES, metrics: { ttftS: stat(4.68), tbtS: stat(0.107) } as ProbeSummary['metrics'] }), defs, { warmupS: 10 });
  assert.ok(diverging.length <= LINE_BUDGET, `${diverging.length}: ${diverging}`);
});

test('an invalid probe: the client error against its tolerance, and the fix, and no untrusted latencies', () => {
  const line = probeLine(summary({ valid: false, client: { verdict: 'invalid', clientErrorS: 0.0068, toleranceS: 0.002, cpuWait: { runS: 1, runnableWaitS: 0.4, waitPerWakeS: 0.0012 } } }), defs);
  assert.ok(line.length <= LINE_BUDGET, `${line.length}: ${line}`);
  assert.match(line, /^probe 2: 4 QPS INVALID · 270 req, 83\.2 s — client error 6\.8 ms > 2 ms tolerance; fix: .*search\.probe\.workers.*search\.probe\.clientTolerance/);
  assert.not.match(line, /TTFT/);
  assert.not.match(line, /fluidity/);
});

test('an invalid probe whose error is the SSH tunnel\'s relay: the fix is to send from beside the engine', () => {
  const tunnelRelay = { bytesFromEngine: 9e6, bytesToEngine: 1e5, channels: 0, openS: 0, mainLoopDelayP99S: 0.0068, mainLoopDelayMaxS: 0.02 };
  const line = probeLine(summary({ valid: false, client: { verdict: 'invalid', clientErrorS: 0.0068, toleranceS: 0.002, tunnelRelay } }), defs);
  assert.ok(line.length <= LINE_BUDGET, `${line.length}: ${line}`);
  assert.match(line, /client error 6\.8 ms > 2 ms tolerance, the SSH tunnel's relay; fix: .*load\.from: agent/);
  // The receivers' own error larger than the relay's: the usual fix.
  const receivers = probeLine(summary({ valid: false, client: { verdict: 'invalid', clientErrorS: 0.0068, toleranceS: 0.002, tunnelRelay: { ...tunnelRelay, mainLoopDelayP99S: 0.001 } } }), defs);
  assert.match(receivers, /; fix: .*search\.probe\.workers/);
});

test('an engine that died: said so, no verdict', () => {
  const line = probeLine(summary({ valid: false, interrupted: true, engineDied: 'the simulated engine exited (code 1)' }), defs);
  assert.is(line, 'probe 2: 4 QPS INTERRUPTED · 270 req, 83.2 s — the engine died: the simulated engine exited (code 1)');
});

test("an invalid probe's validity text (as a run wrote it) in brief, with the fix; other texts lose only their details", () => {
  const written =
    'client error 253.745 ms exceeds tolerance 10.000 ms (receive−emit p99 253.745 ms, dispatch lag p99 136.419 ms; receive−emit p50/p99/max 0.029 ms / 253.745 ms / 369.624 ms = 0.1% / 507.5% / 739.2% of the 50.000 ms TBT deadline; ' +
    'its receiving threads waited 0.000 ms per wake-up for a CPU (29 ms waiting, 2674 ms running)): numbers from this probe are not trusted; client error 253.745 ms: the fail would turn to a pass with every deadline 253.745 ms looser, so it is not trusted';
  assert.is(briefValidity(written), 'client error 253.745 ms exceeds tolerance 10.000 ms, enough to flip its verdict; fix: free cores (search.probe.workers) or widen search.probe.clientTolerance');
  assert.is(briefValidity(written, { fix: false }), 'client error 253.745 ms exceeds tolerance 10.000 ms, enough to flip its verdict');
  assert.is(briefValidity('token counts drift: 12 of 64 requests (a (nested) detail) off'), 'token counts drift: 12 of 64 requests off');
});

test.run();
