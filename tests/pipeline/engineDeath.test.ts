// An engine that dies during a probe ends the run with exit 3 (infrastructure), naming the host and
// the engine's last log lines; the probe it died under is moved aside, never a PASS or FAIL, even
// when its connection resets tripped early stopping before the exit was noticed. `--resume` does
// not reuse a verdict measured on a dying engine.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, onlyRunDir, readJson, readJsonl } from './support.ts';
import { reclaimProbes } from '../../harness/capacity/resume.ts';
import { Journal } from '../../harness/runDir/journal.ts';
import { probePaths } from '../../harness/runDir/layout.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-death-'));

test('the simulated engine crashes after 30 requests (inside probe 1): exit 3, the probe moved aside with engineDied, no verdict', async () => {
  const recipe = join(work, 'crash.yaml');
  const text = readFileSync(FAST_RECIPE, 'utf8').replace('sim: { scheduler: vllm, timeScale: 1 }', 'sim: { scheduler: vllm, timeScale: 1, faults: { crashAfter: 30 } }');
  assert.match(text, /crashAfter: 30/);
  writeFileSync(recipe, text);
  const outDir = join(work, 'out');
  const r = await fluidcap(['run', recipe, '--out', outDir], { timeoutMs: 120_000 });
  assert.is(r.code, 3, r.stderr.slice(-3000));
  assert.match(r.stderr, /infrastructure fault on local: the engine died during probe 1 at 12 QPS/);
  assert.match(r.stderr, /simulated crash after 30 requests/, 'the engine\'s last log lines are not printed');
  assert.match(r.stderr, /resume with: fluidcap run --resume /);
  assert.not.match(r.stderr, /\n\s+at /, 'a stack trace was printed');

  const runDir = onlyRunDir(outDir);
  const events = readJsonl(join(runDir, 'events.jsonl')) as { type: string; index?: number; movedTo?: string; status?: string }[];
  assert.not.ok(events.some((e) => e.type === 'probe-finished'), `a probe was judged on a dying engine: ${JSON.stringify(events.filter((e) => e.type === 'probe-finished'))}`);
  const moved = events.find((e) => e.type === 'probe-interrupted' && e.index === 1);
  assert.ok(moved, 'probe 1 was not moved aside');
  const summary = readJson<{ engineDied: string | null; valid: boolean; passed: boolean; interrupted: boolean }>(join(runDir, moved!.movedTo!, 'summary.json'));
  assert.ok(summary.engineDied !== null, 'summary.json does not say the engine died');
  assert.is(summary.valid, false);
  assert.is(summary.passed, false);
  assert.ok(readJsonl(join(runDir, moved!.movedTo!, 'timelines.jsonl')).length > 0, 'the received timelines were not kept');
  assert.is(events[events.length - 1].type, 'run-finished');
  assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'failed');
  assert.not.ok(existsSync(join(runDir, 'capacity.json')));
});

test('the simulated engine crashes during the prefill profile (crashAfter: 12): exit 3 "engine died" with its log lines, not a bad-input exit 2', async () => {
  const recipe = join(work, 'crash-profile.yaml');
  const text = readFileSync(FAST_RECIPE, 'utf8').replace('sim: { scheduler: vllm, timeScale: 1 }', 'sim: { scheduler: vllm, timeScale: 1, faults: { crashAfter: 12 } }');
  assert.match(text, /crashAfter: 12/);
  writeFileSync(recipe, text);
  const outDir = join(work, 'out-profile');
  const r = await fluidcap(['run', recipe, '--out', outDir], { timeoutMs: 120_000 });
  assert.is(r.code, 3, r.stderr.slice(-3000));
  assert.match(r.stderr, /infrastructure fault on local: the engine died during prefill profiling: /);
  assert.match(r.stderr, /simulated crash after 12 requests/, 'the engine\'s last log lines are not printed');
  assert.match(r.stderr, /resume with: fluidcap run --resume /);
  assert.not.match(r.stderr, /requests failed/);
  assert.not.match(r.stderr, /\n\s+at /, 'a stack trace was printed');
  const runDir = onlyRunDir(outDir);
  const events = readJsonl(join(runDir, 'events.jsonl')) as { type: string }[];
  assert.not.ok(events.some((e) => e.type === 'profile-finished'));
  assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'failed');
});

test('the simulated engine crashes during prompt preparation (crashAfter: 1): exit 3 "engine died", not a prompt problem', async () => {
  const recipe = join(work, 'crash-prompts.yaml');
  writeFileSync(recipe, readFileSync(FAST_RECIPE, 'utf8').replace('sim: { scheduler: vllm, timeScale: 1 }', 'sim: { scheduler: vllm, timeScale: 1, faults: { crashAfter: 1 } }'));
  const r = await fluidcap(['run', recipe, '--out', join(work, 'out-prompts')], { timeoutMs: 120_000 });
  assert.is(r.code, 3, r.stderr.slice(-3000));
  assert.match(r.stderr, /infrastructure fault on local: the engine died during prompt preparation: /);
  assert.not.match(r.stderr, /prompts cannot be prepared/);
});

test('resume does not reuse a finished probe whose summary says the engine died: it is moved aside and the rate probed again', () => {
  const runDir = join(work, 'reclaim');
  const history = [
    { atIso: '', type: 'probe-started', index: 1, qps: 12, dir: 'probes/01-qps-12' },
    { atIso: '', type: 'probe-finished', index: 1, qps: 12, dir: 'probes/01-qps-12' },
    { atIso: '', type: 'probe-started', index: 2, qps: 6, dir: 'probes/02-qps-6' },
    { atIso: '', type: 'probe-finished', index: 2, qps: 6, dir: 'probes/02-qps-6' },
  ];
  const summaries = [
    { index: 1, qps: 12, passed: false, valid: true, interrupted: false, engineDied: 'the simulated engine exited (code 1)' },
    { index: 2, qps: 6, passed: true, valid: true, interrupted: false, engineDied: null },
  ];
  for (const s of summaries) {
    const p = probePaths(runDir, s.index, s.qps);
    mkdirSync(p.dir, { recursive: true });
    writeFileSync(p.summary, JSON.stringify(s));
  }
  const journal = new Journal(join(runDir, 'events.jsonl'));
  const lines: string[] = [];
  const got = reclaimProbes(runDir, history as never, journal, (l) => lines.push(l));
  assert.equal(got.summaries.map((s) => s.index), [2]);
  assert.is(got.usedIndex, 2);
  assert.ok(existsSync(probePaths(runDir, 1, 12).interruptedDir), 'the died-under probe was not moved aside');
  assert.equal(journal.read().map((e) => [e.type, (e as { index?: number }).index]), [['probe-interrupted', 1]]);
  assert.match(lines.join('\n'), /probe 1 at 12 QPS ended with the engine gone/);
  // A second resume reads the same history plus the move: nothing is moved or reused twice.
  const again = reclaimProbes(runDir, [...history, ...journal.read()] as never, journal, () => {});
  assert.equal(again.summaries.map((s) => s.index), [2]);
  assert.is(journal.read().length, 1);
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
