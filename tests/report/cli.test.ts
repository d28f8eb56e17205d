// `fluidcap report` and `fluidcap compare` as a user runs them: real child processes
// (node bin/fluidcap.js) on synthetic run directories, checking files, output, exit codes, and
// that no stack trace ("    at ...") reaches the user.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { writeSyntheticRun } from './syntheticRun.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-report-cli-'));
// The child sees no colour settings: NO_COLOR next to the runner's FORCE_COLOR makes node warn on stderr.
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

function fluidcap(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), ...args], { cwd: tmp, env: childEnv }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
const noStack = (text: string) => assert.not.match(text, /^\s+at /m, `stack trace printed:\n${text}`);

const base = writeSyntheticRun(join(tmp, 'base'), { runId: 'nightly-base', capacityQps: 32 });
const small = writeSyntheticRun(join(tmp, 'small-drop'), { runId: 'nightly-ok', capacityQps: 31, gitSha: 'feedfacefeedfacefeedfacefeedfacefeedface' });
const big = writeSyntheticRun(join(tmp, 'big-drop'), { runId: 'nightly-bad', capacityQps: 28 });

test('report writes report.md, report.html, a CSV per table and a Vega-Lite spec per chart, and says so', async () => {
  const r = await fluidcap(['report', 'base']);
  assert.is(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.slice(0, 2), [`wrote ${join('base', 'report.md')}`, `wrote ${join('base', 'report.html')}`]);
  // Every CSV and spec named is on disk and every one on disk is named.
  const named = lines.slice(2).map((l) => l.replace(/^wrote /, ''));
  const csv = named.filter((f) => f.endsWith('.csv'));
  const specs = named.filter((f) => f.endsWith('.vl.json'));
  assert.ok(csv.length >= 10, r.stdout);
  assert.ok(specs.length >= 10, r.stdout);
  assert.is(csv.length + specs.length, named.length, r.stdout);
  for (const f of named) assert.ok(existsSync(join(tmp, f)), `${f} missing`);
  assert.equal(readdirSync(base).filter((f) => f.endsWith('.csv') || f.endsWith('.vl.json')).sort(), named.map((f) => basename(f)).sort());
  // A spec holds its data: it draws without the report.
  const spec = JSON.parse(readFileSync(join(tmp, specs[0]), 'utf8'));
  assert.match(spec.$schema, /vega-lite/);
  assert.ok(Array.isArray(spec.data.values) && spec.data.values.length > 0, specs[0]);
  assert.match(readFileSync(join(base, 'report.md'), 'utf8'), '**Capacity: 32 QPS**');
  assert.match(readFileSync(join(base, 'report.html'), 'utf8'), '<strong>Capacity: 32 QPS</strong>');
});

test('raw ESC and BEL in the recipe description reach neither report.md nor report.html: shown as escapes', async () => {
  const dir = writeSyntheticRun(join(tmp, 'control-chars'), { runId: 'control-chars' });
  const manifestFile = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  manifest.recipe.description = 'red \u001b[31mALERT\u001b[0m bell \u0007 rtl \u202e end';
  writeFileSync(manifestFile, JSON.stringify(manifest));
  const r = await fluidcap(['report', 'control-chars']);
  assert.is(r.code, 0, r.stderr);
  for (const f of ['report.md', 'report.html']) {
    const text = readFileSync(join(dir, f), 'utf8');
    assert.not.match(text, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/, `${f} holds a raw control character`);
    assert.ok(text.includes('\\u001b[31mALERT') || text.includes('\\u001b\\[31mALERT'), `${f} does not show the ESC as an escape`);
    assert.ok(text.includes('\\u0007'), `${f} does not show the BEL as an escape`);
  }
});

test('report --json names the files', async () => {
  const r = await fluidcap(['report', 'small-drop', '--json']);
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { runDir: string; files: string[] };
  assert.is(out.runDir, 'small-drop');
  assert.equal(out.files.slice(0, 2), [join('small-drop', 'report.md'), join('small-drop', 'report.html')]);
  assert.ok(out.files.includes(join('small-drop', 'report-probes.csv')), out.files.join(', '));
});

test('report on a directory that is not a run: one line naming capacity.json, exit 2', async () => {
  mkdirSync(join(tmp, 'empty'), { recursive: true });
  const r = await fluidcap(['report', 'empty']);
  assert.is(r.code, 2);
  assert.is(r.stderr, `fluidcap: ${join('empty', 'capacity.json')} does not exist: empty is not a fluidcap run directory (it has no manifest.json either)\n`);
  noStack(r.stderr);
  assert.not.ok(existsSync(join(tmp, 'empty', 'report.md')));
});

test('report on an interrupted run: names capacity.json, the status and the resume command', async () => {
  mkdirSync(join(tmp, 'stopped'), { recursive: true });
  writeFileSync(join(tmp, 'stopped', 'manifest.json'), JSON.stringify({ runId: 'stopped-1', status: 'interrupted', exitReason: 'interrupted by signal' }));
  const r = await fluidcap(['report', 'stopped']);
  assert.is(r.code, 2);
  assert.match(r.stderr, `${join('stopped', 'capacity.json')} does not exist: run stopped-1 has no capacity result (status: interrupted, interrupted by signal)`);
  assert.match(r.stderr, 'fluidcap run --resume stopped');
  noStack(r.stderr);
});

test('report on a broken capacity.json: names the file, the field and the value', async () => {
  mkdirSync(join(tmp, 'broken'), { recursive: true });
  writeFileSync(join(tmp, 'broken', 'capacity.json'), JSON.stringify({ capacityQps: 'fast', slo: {}, probes: [{ qps: -1 }] }));
  const r = await fluidcap(['report', 'broken']);
  assert.is(r.code, 2);
  const file = join('broken', 'capacity.json');
  assert.match(r.stderr, `${file}: capacityQps must be a number, got "fast" (string)`);
  assert.match(r.stderr, `${file}: probes[0].qps must be > 0, got -1 (number)`);
  noStack(r.stderr);
  writeFileSync(join(tmp, 'broken', 'capacity.json'), '{"capacityQps": 3,');
  const r2 = await fluidcap(['report', 'broken']);
  assert.is(r2.code, 2);
  assert.match(r2.stderr, `fluidcap: ${file}: not valid JSON`);
  noStack(r2.stderr);
});

test('report on a missing directory: exit 2', async () => {
  const r = await fluidcap(['report', 'nope']);
  assert.is(r.code, 2);
  assert.is(r.stderr, 'fluidcap: nope: no such directory\n');
});

// The synthetic runs stopped on search.maxProbes; the gate compares only searches that converged,
// here with both ends of the bracket decided (the gate weighs the decided bracket).
function converged(dir: string, passQps: number, failQps: number): void {
  const file = join(dir, 'capacity.json');
  const c = JSON.parse(readFileSync(file, 'utf8'));
  const decidedBracket = { passQps, failQps, passConfidence: 0.99, failConfidence: 0.99 };
  writeFileSync(file, JSON.stringify({ ...c, outcome: 'converged', reason: 'bracket within the tolerance', capacityQps: passQps, bracket: { passQps, failQps }, decidedBracket }));
}

test('compare: a run whose search did not converge is refused with its reason, exit 5', async () => {
  const r = await fluidcap(['compare', 'small-drop', '--baseline', 'base']);
  assert.is(r.code, 5, r.stdout + r.stderr);
  assert.match(r.stdout, 'did not converge (max-probes: stopped after 3 probes (search.maxProbes))');
  noStack(r.stdout + r.stderr);
});

test('compare: a drop within --max-drop exits 0 with a table and a verdict line', async () => {
  converged(base, 32, 32.5);
  converged(small, 31, 31.5);
  converged(big, 28, 28.5);
  const r = await fluidcap(['compare', 'small-drop', '--baseline', 'base', '--max-drop', '0.05']);
  assert.is(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[1], /^nightly-base \(baseline\)\s+vllm\s+meta-llama\/Meta-Llama-3-8B\s+h100-sxm-80gb × 1\s+32\s/);
  assert.match(lines[2], /^nightly-ok\s.*\s31\s+−3\.13%\s.*feedfacefe$/);
  assert.match(r.stdout, /^pass\s+.*nightly-ok 31 QPS \[31, 31\.5\] \(decided bracket\) against baseline nightly-base 32 QPS \[32, 32\.5\]: at most 4\.62% drop, within the allowed 5%$/m);
});

test('compare: a drop beyond --max-drop on both brackets exits 4 and names the run', async () => {
  const r = await fluidcap(['compare', 'big-drop', '--baseline', 'base']);
  assert.is(r.code, 4, r.stdout + r.stderr);
  assert.match(r.stdout, 'nightly-bad 28 QPS [28, 28.5] (decided bracket) lies at least 10.9% below baseline nightly-base 32 QPS [32, 32.5], more than the allowed 5%');
  const loose = await fluidcap(['compare', 'big-drop', '--baseline', 'base', '--max-drop', '0.2']);
  assert.is(loose.code, 0, loose.stdout);
});

test('compare --json: the gate and the table as one object', async () => {
  const r = await fluidcap(['compare', 'big-drop', 'base', '--baseline', 'base', '--json']);
  assert.is(r.code, 4);
  const out = JSON.parse(r.stdout);
  assert.is(out.table.baselineRunId, 'nightly-base');
  assert.is(out.gate.options.maxDrop, 0.05);
  assert.is(out.gate.exitCode, 4);
  assert.equal(out.table.runs.map((x: { runId: string }) => x.runId), ['nightly-base', 'nightly-bad']);
  assert.is(out.table.runs[1].fluidTokensPerS, 47.6);
  assert.is(out.table.runs[1].usdPerMillionOutputTokens, 8.91);
  assert.equal(out.gate.decisions.map((d: { verdict: string; candidate: { runId: string } }) => [d.candidate.runId, d.verdict]), [['nightly-bad', 'regression']]);
});

test('compare: bad --max-drop and a non-run directory are exit 2, one line each', async () => {
  const bad = await fluidcap(['compare', 'base', '--max-drop', 'lots']);
  assert.is(bad.code, 2);
  assert.is(bad.stderr, 'fluidcap: --max-drop must be a fraction >= 0 and < 1 (0.05 = 5%), got "lots" (string)\n');
  const neg = await fluidcap(['compare', 'base', '--max-drop', '-0.1']);
  assert.is(neg.code, 2);
  assert.match(neg.stderr, 'got -0.1 (number)');
  const notRun = await fluidcap(['compare', 'base', 'empty']);
  assert.is(notRun.code, 2);
  assert.match(notRun.stderr, `fluidcap: ${join('empty', 'capacity.json')} does not exist`);
  assert.is(notRun.stdout, '');
  noStack(notRun.stderr);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
