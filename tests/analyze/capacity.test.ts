// Capacity under a new SLO from archived probes: which probes are evidence (invalid, interrupted and
// early-stopped ones are not, except an early stop under an SLO the new one is at least as strict
// as), the bracket and what would need probing; then `fluidcap analyze --capacity` as a user runs
// it, on the committed example run and on the directory a standalone `fluidcap probe` writes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { capacityFromArchive, formatArchiveCapacity, perSloFromArchive, stoppingSloSource, type ProbeVerdictInput } from '../../harness/analyze/capacity.ts';
import type { Slo } from '../../harness/metrics/slo.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'results', 'examples', 'sim-quickstart');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-analyze-capacity-'));
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'analyze', ...args], { cwd: dir, maxBuffer: 64 << 20, env: childEnv }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const RUN_SLO: Slo = { fluidity: { tbtDeadlineS: 0.05, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity p99 >= 0.9 (50ms)' } };
const STOP = 'SLO "fluidity p99 >= 0.9 (50ms)" can no longer pass: 9 failing requests already exceed the 8 allowed of 864 (nearest-rank percentile)';
const probe = (qps: number, passed: boolean | null, o: Partial<ProbeVerdictInput> = {}): ProbeVerdictInput => ({
  probe: `p-${qps}`,
  qps,
  passed,
  valid: true,
  validity: null,
  earlyStop: null,
  interrupted: false,
  ...o,
});
const withDeadline = (s: number): Slo => ({ fluidity: { ...RUN_SLO.fluidity!, tbtDeadlineS: s, source: `new ${s}` } });

test('the SLO an early-stop reason quotes', () => {
  assert.is(stoppingSloSource(STOP), 'fluidity p99 >= 0.9 (50ms)');
  assert.is(stoppingSloSource('queueing diverges: ... wait longer than SLO "ttft p90 <= 2s" allows (1 failing + 9 projected > 8 allowed of 864)'), 'ttft p90 <= 2s');
  assert.is(stoppingSloSource('cancelled'), null);
});

test('per SLO entry: each has its own bracket; an early stop is a fail only for the entry it names', () => {
  const two: Slo = { ...RUN_SLO, ttft: { percentile: 50, maxS: 1, source: 'ttft p50 <= 1s' } };
  const TTFT_STOP = 'SLO "ttft p50 <= 1s" can no longer pass: 66 failing requests already exceed the 65 allowed of 130 (nearest-rank percentile)';
  const both = (qps: number, f: boolean, t: boolean, o: Partial<ProbeVerdictInput> = {}) => probe(qps, f && t, { passedBy: { fluidity: f, ttft: t }, ...o });
  const probes = [
    both(12, true, true),
    both(24, false, false, { earlyStop: STOP.replace('fluidity p99 >= 0.9 (50ms)', RUN_SLO.fluidity!.source) }),
    both(24, false, true),
    both(48, false, false, { earlyStop: TTFT_STOP }),
    both(18, true, true),
    both(36, false, true),
    both(42, true, false, { earlyStop: TTFT_STOP }),
    both(30, false, true, { valid: false, validity: 'client error 40 ms > tolerance' }),
  ];
  const per = perSloFromArchive({ probes, runSlo: two, slo: two, firstTokenDeadlineChanged: false, tolerance: 0.25 });
  assert.equal(per.map((p) => [p.name, p.capacityQps, p.bracket]), [
    ['fluidity', 18, { passQps: 18, failQps: 24 }],
    ['ttft', 36, { passQps: 36, failQps: 42 }],
  ]);
  const ttft = per[1];
  // The fluidity stop at 24 is no evidence for ttft; the probe run to its end at 24 passes it.
  assert.equal(ttft.probes.filter((p) => p.qps === 24).map((p) => p.evidence), ['none', 'pass']);
  assert.match(ttft.probes.find((p) => p.qps === 48)!.why, /at least as strict/);
  assert.match(per[0].probes.find((p) => p.qps === 48)!.why, /which this SLO does not judge/);
  assert.equal(ttft.probes.find((p) => p.qps === 30)!.evidence, 'none');
  // One entry: nothing per SLO (the combined answer is that entry's).
  assert.equal(perSloFromArchive({ probes, runSlo: two, slo: RUN_SLO, firstTokenDeadlineChanged: false, tolerance: 0.25 }), []);
});

test('the run SLO itself: an early-stopped fail is a fail, and the bracket is that of the search', () => {
  const c = capacityFromArchive({
    probes: [probe(2, true), probe(4, true), probe(8, false, { earlyStop: STOP }), probe(6, true), probe(7, false, { earlyStop: STOP })],
    runSlo: RUN_SLO,
    slo: RUN_SLO,
    firstTokenDeadlineChanged: false,
    tolerance: 0.2,
  });
  assert.is(c.capacityQps, 6);
  assert.equal(c.bracket, { passQps: 6, failQps: 7 });
  assert.is(c.bound, 'exact');
  assert.equal(c.needsProbing, []);
});

test('a bracket within the tolerance is not "exact" while the interval from the probes\' requests is open or wider than the tolerance', () => {
  const parts = (observed: number, misses: number) => [{ name: 'fluidity', observed, misses, tau: 1, allowedFraction: 0.01 }];
  const base = { runSlo: RUN_SLO, slo: RUN_SLO, firstTokenDeadlineChanged: false, tolerance: 0.2 };
  // A pass on 40 requests without a miss cannot show a 1% miss fraction holds: nothing floors the capacity.
  const thin = capacityFromArchive({ ...base, probes: [probe(6, true, { parts: parts(40, 0), durationS: 7 }), probe(7, false, { parts: parts(400, 60), durationS: 57 })] });
  assert.is(thin.interval?.open, 'lo');
  assert.is.not(thin.bound, 'exact');
  assert.ok(thin.needsProbing.some((n) => /interval is open below/.test(n.reason)), JSON.stringify(thin.needsProbing));
  assert.not.match(formatArchiveCapacity(thin).join('\n'), /settle|exact/);
  // The same bracket with enough requests on both sides: the interval closes, and the archive settles it.
  const solid = capacityFromArchive({ ...base, probes: [probe(6, true, { parts: parts(4000, 2), durationS: 670 }), probe(7, false, { parts: parts(4000, 600), durationS: 570 })] });
  assert.is(solid.interval?.open, 'none');
  assert.is(solid.bound, 'exact');
  assert.match(formatArchiveCapacity(solid).join('\n'), /estimate from every probe's requests: [\d.]+ QPS, 95% interval [\d.]+–[\d.]+$/m);
  // Closed but wider than the tolerance: not settled either.
  const strict = capacityFromArchive({ ...base, tolerance: 0.01, probes: [probe(6, true, { parts: parts(4000, 2), durationS: 670 }), probe(7, false, { parts: parts(4000, 600), durationS: 570 })] });
  assert.is(strict.bound, 'bracketed');
  assert.ok(strict.needsProbing.some((n) => /wider than the tolerance of 1%/.test(n.reason)), JSON.stringify(strict.needsProbing));
});

test('a looser SLO: early-stopped probes are not evidence, and the rates they leave open need probing', () => {
  const c = capacityFromArchive({
    probes: [probe(2, true), probe(4, true), probe(8, false, { earlyStop: STOP }), probe(6, true), probe(7, true, { earlyStop: STOP })],
    runSlo: RUN_SLO,
    slo: withDeadline(0.1),
    firstTokenDeadlineChanged: false,
    tolerance: 0.05,
  });
  assert.is(c.capacityQps, 6);
  assert.is(c.bound, 'at-least');
  assert.equal(c.probes.filter((p) => p.evidence === 'none').map((p) => p.qps), [8, 7]);
  assert.equal(c.needsProbing.map((n) => [n.qps, n.range]), [[7, null], [8, null], [null, [6, null]]]);
  assert.match(c.needsProbing[0].reason, 'early-stopped under "fluidity p99 >= 0.9 (50ms)"');
});

test('a stricter SLO keeps early-stopped fails; a fixed first-token deadline makes them unknown', () => {
  const probes = [probe(2, true), probe(4, false), probe(3, false, { earlyStop: STOP })];
  const strict = capacityFromArchive({ probes, runSlo: RUN_SLO, slo: withDeadline(0.025), firstTokenDeadlineChanged: false, tolerance: 0.05 });
  assert.equal(strict.bracket, { passQps: 2, failQps: 3 });
  const fixed = capacityFromArchive({ probes, runSlo: RUN_SLO, slo: withDeadline(0.025), firstTokenDeadlineChanged: true, tolerance: 0.05 });
  assert.equal(fixed.bracket, { passQps: 2, failQps: 4 });
  assert.equal(fixed.needsProbing.map((n) => n.qps), [3, null]);
  assert.match(fixed.needsProbing[1].reason, 'gap is 100% of the passing rate, wider than the tolerance of 5%');
});

test('invalid and interrupted probes are never evidence; a pass above a fail does not raise the capacity', () => {
  const c = capacityFromArchive({
    probes: [
      probe(1, true),
      probe(2, true, { valid: false, validity: 'client error 45 ms exceeds tolerance 10 ms' }),
      probe(2, true, { valid: false, validity: 'client error 30 ms exceeds tolerance 10 ms' }),
      probe(3, false),
      probe(4, true),
      probe(1.5, true, { interrupted: true }),
    ],
    runSlo: RUN_SLO,
    slo: RUN_SLO,
    firstTokenDeadlineChanged: false,
    tolerance: null,
  });
  assert.equal(c.bracket, { passQps: 1, failQps: 3 });
  assert.equal(c.needsProbing.map((n) => n.qps), [1.5, 2]);
  assert.match(c.needsProbing[1].reason, 'invalid: client error 30 ms exceeds tolerance 10 ms');
  assert.match(c.probes.find((p) => p.qps === 4)!.why, 'above the fail at 3 QPS');
  const none = capacityFromArchive({ probes: [probe(2, false)], runSlo: null, slo: RUN_SLO, firstTokenDeadlineChanged: false, tolerance: null });
  assert.is(none.bound, 'below');
  assert.equal(none.needsProbing.map((n) => n.range), [[null, 2]]);
});

test('analyze --capacity on the example run: the run SLO gives capacity.json back; a new SLO, its own answer; --json agrees', async () => {
  cpSync(EXAMPLE, join(dir, 'run'), { recursive: true });
  const cap = JSON.parse(readFileSync(join(dir, 'run', 'capacity.json'), 'utf8'));
  const same = await run(['run', '--capacity']);
  assert.is(same.code, 0, same.stderr);
  assert.match(same.stdout, `capacity under this SLO: ${cap.capacityQps} QPS`);
  assert.match(same.stdout, `bracket: pass ${cap.bracket.passQps} / fail ${cap.bracket.failQps} QPS`);
  // Compact: the SLO's text once (the header), a row per probe, a line only for a probe with more to say.
  const sources = Object.values(cap.slo as Record<string, { source: string }>).map((e) => e.source);
  for (const source of sources) assert.is(same.stdout.split(source).length - 1, 1, `${source} is printed once`);
  const lines = same.stdout.trimEnd().split('\n');
  assert.ok(lines.length <= 5 + 2 + cap.probes.length * 2 + 12, `${lines.length} lines:\n${same.stdout}`);
  for (const p of cap.probes as { qps: number }[]) assert.match(same.stdout, new RegExp(`^\\d+-qps-${p.qps} +${p.qps} .* (pass|fail|none)$`, 'm'));
  const loose = await run(['run', '--capacity', '--tbt-deadline', '1s', '--percentile', '50', '--json']);
  assert.is(loose.code, 0, loose.stderr);
  const c = JSON.parse(loose.stdout).summary.capacity;
  const verdicts = JSON.parse(loose.stdout).summary.probes.map((p: { qps: number; slo: { passed: boolean } }) => [p.qps, p.slo.passed]);
  // The capacity is the highest passing rate below the first failing one, from the verdicts printed beside it.
  const firstFail = verdicts.find(([, passed]: [number, boolean]) => !passed)?.[0] ?? null;
  assert.is(c.bracket.failQps, firstFail);
  assert.is(c.capacityQps, Math.max(...verdicts.filter(([q, passed]: [number, boolean]) => passed && (firstFail === null || q < firstFail)).map(([q]: [number]) => q)));
  const text = await run(['run', '--capacity', '--tbt-deadline', '1s', '--percentile', '50']);
  assert.match(text.stdout, `bracket: pass ${c.bracket.passQps ?? '-'} / fail ${c.bracket.failQps ?? '-'} QPS`);
});

test("a standalone probe's directory: the recipe's SLO, invalid shown as invalid, D_p = TTFT slack without a fit", async () => {
  // The layout and summary.json fields `fluidcap probe` writes: clientHealth, tokenDrift, metrics.slo.
  const pdir = join(dir, 'standalone', 'probes', '00-qps-2');
  mkdirSync(pdir, { recursive: true });
  cpSync(join(EXAMPLE, 'probes', '01-qps-2', 'timelines.jsonl'), join(pdir, 'timelines.jsonl'));
  writeFileSync(
    join(pdir, 'summary.json'),
    JSON.stringify({
      rateQps: 2,
      durationS: 50,
      earlyStop: null,
      cancelled: false,
      clientHealth: { verdict: 'invalid', reason: 'client error 29.897 ms exceeds tolerance 10.000 ms' },
      tokenDrift: { verdict: 'ok', note: 'within 2%' },
      metrics: {
        slo: {
          passed: true,
          results: [{ name: 'fluidity', source: 'fluidity: { tbtDeadline: 50ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }', percentile: 99, comparison: '>=', value: 1, threshold: 0.9, passed: true }],
        },
      },
      notes: ['no prefill fit in a standalone probe: fluidity uses D_p = TTFT slack (300ms); `fluidcap analyze` recomputes with a fit'],
    }),
  );
  const r = await run(['standalone', '--capacity']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /first-token deadline D_p: TTFT slack 300ms for every request: no prefill fit \(standalone\/profile\/fit\.json absent\)/);
  assert.match(r.stdout, /SLO \(standalone\/probes\/00-qps-2\/summary\.json \(the SLO its probe was judged by\)\): fluidity: \{ tbtDeadline: 50ms/);
  assert.match(r.stdout, /^00-qps-2 .* invalid .* none$/m);
  assert.match(r.stdout, '00-qps-2: invalid, so its verdict is not used: client error 29.897 ms exceeds tolerance 10.000 ms, enough to flip its verdict; fix: ');
  assert.match(r.stdout, '2 QPS again: 00-qps-2 is invalid: client error 29.897 ms');
  const json = JSON.parse((await run(['standalone', '--json'])).stdout).summary;
  assert.is(json.fluidityDeadlines.tbtDeadlineS, 0.05);
  assert.is(json.firstTokenDeadline.source, 'slack');
  assert.is(json.probes[0].verdict, 'invalid');
  // The same file on its own, inside its probe directory, is judged the same way.
  const single = JSON.parse((await run([join('standalone', 'probes', '00-qps-2', 'timelines.jsonl'), '--json'])).stdout).summary;
  assert.is(single.fluidityDeadlines.tbtDeadlineS, 0.05);
  assert.is(single.probes[0].verdict, 'invalid');
});

test("a standalone probe's recipeSlo wins over the text of its verdicts", async () => {
  const pdir = join(dir, 'standalone2', 'probes', '00-qps-2');
  mkdirSync(pdir, { recursive: true });
  cpSync(join(EXAMPLE, 'probes', '01-qps-2', 'timelines.jsonl'), join(pdir, 'timelines.jsonl'));
  const fluidity = { tbtDeadlineS: 0.075, ttftSlackS: 0.5, minFluidity: 0.8, percentile: 95, source: 'chat users' };
  writeFileSync(
    join(pdir, 'summary.json'),
    JSON.stringify({ rateQps: 2, clientHealth: { verdict: 'valid', reason: 'ok' }, recipeSlo: { fluidity }, metrics: { slo: { passed: true, results: [{ name: 'fluidity', source: 'chat users', percentile: 95, threshold: 0.8 }] } } }),
  );
  const s = JSON.parse((await run(['standalone2', '--json'])).stdout).summary;
  assert.equal(s.fluidityDeadlines, { tbtDeadlineS: 0.075, ttftSlackS: 0.5, tieRule: 'met' });
  assert.match(s.sloFrom, "(the recipe's SLO)");
  assert.match(s.firstTokenDeadline.text, 'TTFT slack 500ms for every request');
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
