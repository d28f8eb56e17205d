// `fluidcap compare` as a nightly job runs it, on synthetic run directories (capacity.json and
// manifest.json as a run writes them): exit 0 / 4 / 5 / 2, the JUnit, Prometheus and markdown
// files, the results index rebuilt from a results folder (sweep runs nested), judging against
// earlier nights through it, and the history chart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
