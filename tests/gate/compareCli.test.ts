// `fluidcap compare` as a nightly job runs it, on synthetic run directories (capacity.json and
// manifest.json as a run writes them): exit 0 / 4 / 5 / 2, the JUnit, Prometheus and markdown
// files, the results index rebuilt from a results folder (sweep runs nested), judging against
// earlier nights through it, and the history chart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { appendToIndex, indexFinishedRun, readIndex } from '../../harness/runDir/resultsIndex.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin', 'fluidcap.js');
const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-gate-'));
const results = join(tmp, 'results');

interface Fake {
  name?: string;
  day: number;
  pass: number | null;
  fail: number | null;
  outcome?: string;
  reason?: string;
  status?: string;
  dir?: string;
  /** capacity.json's resolved SLO (default: fluidity p99 >= 0.9 at a 50 ms TBT deadline). */
  slo?: Record<string, unknown>;
  /** Extra capacity.json fields (an interval, a decided bracket, probes with statistics). */
  extra?: Record<string, unknown>;
}

const SLO = { fluidity: { tbtDeadlineS: 0.05, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity p99 >= 0.9 (tbt deadline 50ms, ttft slack 0.3s)' } };
const CFG = 'nightly-8b | sim | llama-3-8b | h100-sxm-80gb×1 | slo fluidity p99 >= 0.9 (tbt 0.05s, ttft slack 0.3s)';
const re = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A run directory with the two files compare reads, as `fluidcap run` writes them. */
function fakeRun(f: Fake): string {
  const name = f.name ?? 'nightly-8b';
  const runId = `${name}-202611${String(f.day).padStart(2, '0')}-020000`;
  const dir = join(f.dir ?? results, runId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({
      runId,
      status: f.status ?? 'completed',
      startedAt: `2026-11-${String(f.day).padStart(2, '0')}T02:00:00.000Z`,
      recipeSha256: 'abc',
      recipe: { name, target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb' } },
      host: { engine: 'sim', imageDigest: `sha256:${f.day}` },
    }),
  );
  const cap = f.pass ?? 0;
  writeFileSync(
    join(dir, 'capacity.json'),
    JSON.stringify({
      runId,
      capacityQps: cap,
      outcome: f.outcome ?? 'converged',
      reason: f.reason ?? 'bracket within the tolerance 2%',
      belowMin: false,
      atLeastMax: false,
      slo: f.slo ?? SLO,
      bracket: { passQps: f.pass, failQps: f.fail },
      tolerance: 0.02,
      probes: [f.pass, f.fail].filter((q): q is number => q !== null).map((qps, index) => ({ index, qps, passed: qps === f.pass, valid: true })),
      gpuProfile: 'h100-sxm-80gb',
      gpuCount: 1,
      cost: { usdPerHour: 6.16, qpsPerUsdPerHour: cap / 6.16, outputTokensPerS: 600, usdPerMillionOutputTokens: 2.85 },
      ...f.extra,
    }),
  );
  return dir;
}

function cli(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [CLI, 'compare', ...args], { cwd: ROOT, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const night1 = fakeRun({ day: 1, pass: 20.5, fail: 20.75 });
const night2 = fakeRun({ day: 2, pass: 20.25, fail: 20.5 });
const night3 = fakeRun({ day: 3, pass: 20.5, fail: 20.75 });
// A sweep nests its runs one folder deeper; the index finds them.
const sweepRun = fakeRun({ name: 'sweep-c01', day: 3, pass: 8, fail: 8.25, dir: join(results, 'sweep-20261103', 'runs') });
const slow = fakeRun({ day: 4, pass: 18.5, fail: 18.75, dir: join(tmp, 'tonight') });
const same = fakeRun({ day: 4, pass: 20.25, fail: 20.5, dir: join(tmp, 'tonight-ok') });
const invalid = fakeRun({ day: 4, pass: 16, fail: null, outcome: 'invalid-probes', reason: 'the probe at 16 QPS was invalid twice in a row', dir: join(tmp, 'tonight-bad') });

test('a regression against one baseline exits 4 and writes JUnit, Prometheus and markdown', () => {
  const files = { junit: join(tmp, 'out', 'gate.xml'), prom: join(tmp, 'out', 'gate.prom'), md: join(tmp, 'out', 'gate.md') };
  const r = cli(slow, '--baseline', night3, '--junit', files.junit, '--prom', files.prom, '--markdown', files.md);
  assert.is(r.code, 4, r.out + r.err);
  assert.match(r.out, new RegExp(`^regression\\s+${re(CFG)}: .* at least 8\\.54% below baseline`, 'm'));
  const junit = readFileSync(files.junit, 'utf8');
  assert.is(junit.match(/<testcase /g)?.length, 1);
  assert.match(junit, 'failures="1" errors="0"');
  assert.match(junit, /<failure type="regression" message="[^"]*8\.54%/);
  const prom = readFileSync(files.prom, 'utf8');
  assert.match(prom, new RegExp(`^fluidcap_capacity_qps\\{config="${re(CFG)}",recipe="nightly-8b",engine="sim",model="llama-3-8b",gpu="h100-sxm-80gb×1",run="nightly-8b-20261104-020000"\\} 18\\.5$`, 'm'));
  assert.match(prom, /^fluidcap_qps_per_usd_per_hour\{.*\} 3\.00/m);
  assert.match(prom, /^fluidcap_gate_verdict\{.*\} 2$/m);
  assert.match(readFileSync(files.md, 'utf8'), `| ${CFG.replace(/\|/g, '\\|')} | REGRESSION |`);
});

test('an unchanged night one bisection step lower passes (exit 0)', () => {
  const r = cli(same, '--baseline', night3);
  assert.is(r.code, 0, r.out + r.err);
  assert.match(r.out, /^pass\s/m);
});

test('a run with invalid probes is refused (exit 5), with its reason, in JUnit as an error', () => {
  const junit = join(tmp, 'out', 'bad.xml');
  const r = cli(invalid, '--baseline', night3, '--junit', junit);
  assert.is(r.code, 5, r.out + r.err);
  assert.match(r.out, 'did not converge (invalid-probes: the probe at 16 QPS was invalid twice in a row)');
  assert.match(readFileSync(junit, 'utf8'), /<error type="refused"/);
  // With a regression beside it, the regression decides the exit.
  assert.is(cli(invalid, slow, '--baseline', night3).code, 4);
});

test('bad input exits 2 naming the flag or the path', () => {
  const r = cli(slow, '--max-drop', '5%');
  assert.is(r.code, 2);
  assert.match(r.err, '--max-drop must be a fraction >= 0 and < 1 (0.05 = 5%), got "5%" (string)');
  const missing = cli(join(tmp, 'nope'));
  assert.is(missing.code, 2);
  assert.match(missing.err, 'no such directory');
  assert.is(cli().code, 2);
});

test('--reindex rebuilds index.jsonl from a results folder; nights from it are the reference', () => {
  const r = cli('--reindex', results);
  assert.is(r.code, 0, r.err);
  const entries = readIndex(join(results, 'index.jsonl'));
  // Oldest start first; runs that started together in run-id order.
  assert.equal(entries.map((e) => e.runId), [night1, night2, night3, sweepRun].map((d) => d.split('/').pop()));
  assert.is(entries.find((e) => e.runId.startsWith('sweep-c01'))!.runDir, 'sweep-20261103/runs/sweep-c01-20261103-020000');
  assert.equal(entries[0].bracket, { passQps: 20.5, failQps: 20.75 });
  assert.is(entries[0].imageDigest, 'sha256:1');
  // Appending a run already listed does not list it twice.
  appendToIndex(results, night3);
  assert.is(readIndex(join(results, 'index.jsonl')).length, 4);
  const idx = join(results, 'index.jsonl');
  const caught = cli(slow, '--index', idx, '--json');
  assert.is(caught.code, 4, caught.err);
  const gate = JSON.parse(caught.out).gate;
  assert.is(gate.decisions[0].reference.kind, 'history');
  assert.is(gate.decisions[0].reference.nights, 3);
  assert.is(cli(same, '--index', idx).code, 0);
  // A configuration the index has never seen is new, not a failure.
  const fresh = fakeRun({ name: 'brand-new', day: 4, pass: 5, fail: 5.1, dir: join(tmp, 'new') });
  const n = cli(fresh, '--index', idx);
  assert.is(n.code, 0);
  assert.match(n.out, /^new\s/m);
});

test('the run hook logs instead of throwing when a run cannot be indexed', () => {
  const logged: string[] = [];
  const unfinished = join(tmp, 'unfinished');
  mkdirSync(unfinished, { recursive: true });
  indexFinishedRun(join(tmp, 'hook'), unfinished, (l) => logged.push(l));
  assert.is(logged.length, 1);
  assert.match(logged[0], 'capacity.json does not exist');
  assert.match(logged[0], 'fluidcap compare --reindex');
  indexFinishedRun(join(tmp, 'hook'), night1, (l) => logged.push(l));
  assert.is(readIndex(join(tmp, 'hook', 'index.jsonl')).length, 1);
  assert.is(readIndex(join(tmp, 'hook', 'index.jsonl'))[0].runDir, night1, 'a run outside the index folder keeps its absolute path');
});

test('a regression must be confirmed: a rerun that passes clears it', () => {
  const idx = join(results, 'index.jsonl');
  const rerunOk = fakeRun({ day: 5, pass: 20.5, fail: 20.75, dir: join(tmp, 'confirm-ok') });
  const rerunSlow = fakeRun({ day: 5, pass: 18.25, fail: 18.5, dir: join(tmp, 'confirm-slow') });
  assert.is(cli(slow, rerunOk, '--index', idx).code, 0);
  const both = cli(slow, rerunSlow, '--index', idx);
  assert.is(both.code, 4);
  assert.match(both.out, 'confirmed by 2 runs');
});

test('--history draws capacity per configuration across nights (SVG and markdown)', () => {
  const r = cli('--history', '--index', join(results, 'index.jsonl'));
  assert.is(r.code, 0, r.err);
  const svg = readFileSync(join(results, 'history.svg'), 'utf8');
  assert.match(svg, /^<\?xml/);
  assert.match(svg, CFG.replace(/>/g, '&gt;'));
  assert.ok((svg.match(/<polyline|<path/g) ?? []).length >= 2, 'one line per configuration');
  const md = readFileSync(join(results, 'history.md'), 'utf8');
  assert.match(md, `## ${CFG}`);
  assert.match(md, /\| 2026-11-02T02:00:00.000Z \| nightly-8b-20261102-020000 \| 20\.25 \| \[20\.25, 20\.5\) \| −1\.22% \| converged \| sha256:2 \|/);
  assert.ok(existsSync(join(results, 'history.svg')));
});

test('--history with an index that does not exist exits 2 naming it, and writes nothing', () => {
  const missing = join(tmp, 'nowhere', 'index.jsonl');
  const r = cli('--history', '--index', missing);
  assert.is(r.code, 2, r.err);
  assert.match(r.err, `--index: ${missing} does not exist`);
  assert.not.ok(existsSync(join(tmp, 'nowhere')));
});

test('overlapping intervals (capacity.json interval) with no confirm budget: undecided, exit 6, a JUnit failure', () => {
  const interval = (estimateQps: number, loQps: number, hiQps: number) => ({ interval: { estimateQps, loQps, hiQps, level: 0.95, method: 'test fixture', probesUsed: 8, loadSeconds: 120, open: 'none' } });
  const base = fakeRun({ day: 20, pass: 42, fail: 44, dir: join(tmp, 'iv-base'), extra: interval(43, 40, 46) });
  const cand = fakeRun({ day: 21, pass: 39, fail: 41, dir: join(tmp, 'iv-cand'), extra: interval(40, 36, 44) });
  const junit = join(tmp, 'out', 'undecided.xml');
  const r = cli(cand, '--baseline', base, '--junit', junit);
  assert.is(r.code, 6, r.out + r.err);
  assert.match(r.out, /^undecided\s/m);
  assert.match(r.out, 'confirm with a probe of the candidate at 37.99 QPS');
  assert.match(r.out, 'no --confirm-budget: no confirming probe was run');
  const xml = readFileSync(junit, 'utf8');
  assert.match(xml, /<failure type="undecided"/);
  assert.match(xml, 'skipped="0"');
  assert.not.match(xml, '<skipped');
});

test('a baseline measured under another SLO is refused (exit 5), naming both SLOs', () => {
  const loose = { fluidity: { tbtDeadlineS: 0.2, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99 } };
  // A 1.6× slower engine whose recipe loosened the SLO (name kept) measures 128 QPS against 24.
  const base = fakeRun({ day: 22, pass: 24, fail: 24.5, dir: join(tmp, 'slo-base') });
  const cand = fakeRun({ day: 23, pass: 128, fail: 130, dir: join(tmp, 'slo-cand'), slo: loose });
  const r = cli(cand, '--baseline', base);
  assert.is(r.code, 5, r.out + r.err);
  assert.match(r.out, 'measured under SLO "fluidity p99 >= 0.9 (tbt 0.2s, ttft slack 0.3s)" and baseline nightly-8b-20261122-020000 under SLO "fluidity p99 >= 0.9 (tbt 0.05s, ttft slack 0.3s)"');
  // Through the index, the SLO is part of the configuration: the nights under the other SLO are named, not used.
  const r2 = cli(cand, '--index', join(results, 'index.jsonl'));
  assert.is(r2.code, 0, r2.out + r2.err);
  assert.match(r2.out, /^new\s.*earlier run\(s\) of the same recipe, engine, model and GPUs were measured under "fluidity p99 >= 0\.9 \(tbt 0\.05s, ttft slack 0\.3s\)" and are not compared with it/m);
});

test('forged, stale and garbage index lines are not earlier nights, and each is reported', () => {
  const dir = join(tmp, 'forged');
  mkdirSync(dir, { recursive: true });
  const idx = join(dir, 'index.jsonl');
  const good = readFileSync(join(results, 'index.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .map((e) => ({ ...e, runDir: join(results, e.runDir) }));
  const forged = { ...good[0], runId: 'forged', runDir: '/nonexistent', capacityQps: 1000, bracket: { passQps: 1000, failQps: 1001 }, startedAt: '2026-11-03T03:00:00.000Z' };
  const inflated = { ...good[2], capacityQps: 1000, bracket: { passQps: 1000, failQps: 1001 } };
  writeFileSync(idx, [...good.slice(0, 2), inflated, forged].map((e) => JSON.stringify(e)).join('\n') + '\n{"v":1,"config":"x"}\nnot json at all\n');
  const r = cli(slow, '--index', idx, '--json', '--markdown', join(dir, 'gate.md'));
  const gate = JSON.parse(r.out).gate;
  // Two true nights remain: the candidate is judged against them, not against 1000 QPS.
  assert.is(gate.decisions[0].reference.nights, 2, r.err);
  assert.not.ok(gate.decisions[0].reference.runIds.includes('forged'));
  assert.is(gate.rejectedIndexLines.length, 4, gate.rejectedIndexLines.join('\n'));
  assert.match(r.err, 'run forged not used: run directory /nonexistent does not exist');
  assert.match(r.err, /run nightly-8b-20261103-020000 not used: capacity 1000 QPS differs from .*capacity\.json \(20\.5 QPS\)/);
  assert.match(r.err, /index\.jsonl:5: no runDir/);
  assert.match(r.err, /index\.jsonl:6: not JSON/);
  assert.match(readFileSync(join(dir, 'gate.md'), 'utf8'), '## Results-index lines not used');
});

test('shipped examples under results/examples never enter an index', () => {
  const folder = join(tmp, 'with-examples');
  mkdirSync(join(folder, 'examples'), { recursive: true });
  cpSync(join(ROOT, 'results', 'examples', 'sim-quickstart'), join(folder, 'examples', 'sim-quickstart'), { recursive: true });
  // Even copied elsewhere, a synthetic run is skipped with its reason.
  cpSync(join(ROOT, 'results', 'examples', 'sim-quickstart'), join(folder, 'copied'), { recursive: true });
  const real = fakeRun({ day: 24, pass: 20, fail: 20.5, dir: folder });
  const r = cli('--reindex', folder);
  assert.is(r.code, 0, r.err);
  assert.equal(readIndex(join(folder, 'index.jsonl')).map((e) => e.runId), [real.split('/').pop()]);
  assert.match(r.err, /skipped: .*copied is a shipped example, not a measurement/);
  assert.throws(() => appendToIndex(folder, join(folder, 'copied')), /shipped example/);
});

test('earlier nights with probe counts are pooled: the reference interval is narrower than any night\'s, and the candidate is asked to hold at 95% of its estimate', () => {
  const folder = join(tmp, 'pooled');
  // Three unchanged nights probing around a knee near 42 QPS, each with its own ~20% wide interval.
  const probe = (qps: number, observed: number, misses: number, tau: number) => ({ index: 0, qps, passed: misses / observed <= 0.01, valid: true, durationS: observed / qps, statistics: { decision: 'undecided', confidence: 0.5, leaning: 'pass', evidence: '', parts: [{ name: 'fluidity', observed, misses, tau, allowedFraction: 0.01 }] } });
  const nightly = (day: number) =>
    fakeRun({
      day,
      pass: 40,
      fail: 44,
      dir: folder,
      extra: {
        interval: { estimateQps: 42, loQps: 37, hiQps: 45.5, open: 'none' },
        probes: [probe(32, 500, 0, 1), probe(40, 800, 4, 3), probe(44, 800, 14, 4), probe(48, 300, 30, 6)],
      },
    });
  [21, 22, 23].forEach(nightly);
  assert.is(cli('--reindex', folder).code, 0);
  const cand = fakeRun({ day: 24, pass: 40, fail: 44, dir: join(tmp, 'pooled-tonight'), extra: { interval: { estimateQps: 41, loQps: 35, hiQps: 46, open: 'none' } } });
  const r = cli(cand, '--index', join(folder, 'index.jsonl'), '--json');
  assert.is(r.code, 6, r.out + r.err);
  const d = JSON.parse(r.out).gate.decisions[0];
  assert.is(d.reference.basis, 'pooled');
  assert.ok(d.reference.highQps - d.reference.lowQps < 45.5 - 37, `pooled [${d.reference.lowQps}, ${d.reference.highQps}] narrower than one night's [37, 45.5]`);
  assert.ok(d.reference.lowQps < d.reference.capacityQps && d.reference.capacityQps < d.reference.highQps);
  assert.match(d.reason, 'the pooled probes of 3 earlier nights');
  // The pass line: 95% of the pooled estimate or 90% of the pooled high end, whichever is higher.
  const line = Math.max(0.95 * d.reference.capacityQps, 0.9 * d.reference.highQps);
  const passAt = d.confirm.find((c: { settles: string }) => c.settles === 'pass').qps;
  assert.ok(passAt >= line && passAt < line + 0.011, `pass probe at ${passAt} QPS, the line ${line}`);
  assert.ok(passAt < 0.95 * d.reference.highQps, 'below where 95% of the high end would put it');
});

test('scripts/nightly.mjs --help prints its usage and exits 0', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'zx', 'build', 'cli.js'), join(ROOT, 'scripts', 'nightly.mjs'), '--help'], { cwd: ROOT, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, 'Usage: npx zx scripts/nightly.mjs --config nightly.yaml');
  assert.match(r.stdout, 'confirmBudget:');
  assert.match(r.stdout, '6 an answer');
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
