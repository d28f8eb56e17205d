// Interrupting `fluidcap run` (real child processes, real signals): SIGKILL during the third probe,
// then `--resume` finishes without redoing the profile or probes 1–2 (a run written before probes
// had seeds of their own keeps replaying the workload's seed); the simulated engine does
// not outlive a SIGKILLed fluidcap; Ctrl-C (SIGINT to the process group, as a terminal sends it)
// exits 130, prints the resume command and keeps the partial probe's timelines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { deriveSeed } from '../../harness/util/rng.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, FAST_RECIPE, ROOT, childEnv, fluidcap, isAlive, readJson, readJsonl, untilProbeStarted, type CapacityFile } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-resume-'));
const children: ChildProcess[] = [];

function start(args: string[], opts: { group?: boolean } = {}): { child: ChildProcess; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>; stderr: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'], detached: opts.group ?? false });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('close', (code, signal) => done({ code, signal })));
  return { child, exited, stderr: () => err };
}

async function untilDead(pid: number, timeoutMs: number): Promise<boolean> {
  const t0 = performance.now();
  while (isAlive(pid)) {
    if (performance.now() - t0 > timeoutMs) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

const events = (runDir: string) => readJsonl(join(runDir, 'events.jsonl')) as ({ type: string; index?: number; dir?: string; movedTo?: string; status?: string })[];

test('SIGKILL during the third probe, then --resume: profile and probes 1–2 reused, probe 3 moved aside and redone as 4', async () => {
  const outDir = join(work, 'killed');
  const run = start(['run', FAST_RECIPE, '--out', outDir]);
  const runDir = await untilProbeStarted(outDir, 3, run.exited, run.stderr, { timeoutMs: 90_000, pollMs: 25 });
  // Let the third probe send a few requests, so it has partial data to keep.
  await new Promise((r) => setTimeout(r, 250));
  run.child.kill('SIGKILL');
  const killed = await run.exited;
  assert.is(killed.signal, 'SIGKILL');

  const before = events(runDir);
  assert.not.ok(before.some((e) => e.type === 'probe-finished' && e.index === 3), 'probe 3 finished before the SIGKILL landed');
  assert.is(before.filter((e) => e.type === 'probe-finished').length, 2);
  const probe3 = before.find((e) => e.type === 'probe-started' && e.index === 3)!.dir!;
  const simPid = readJson<{ host: { pid: number } }>(join(runDir, 'manifest.json')).host.pid;
  // The engine must not outlive fluidcap: it watches a pipe only fluidcap holds.
  const simDied = await untilDead(simPid, 10_000);
  if (!simDied) process.kill(simPid, 'SIGKILL');
  assert.ok(simDied, `the simulated engine (pid ${simPid}) outlived the SIGKILLed fluidcap`);
  assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'running');
  const fitBefore = readFileSync(join(runDir, 'profile', 'fit.json'), 'utf8');
  const summariesBefore = [1, 2].map((i) => readFileSync(join(runDir, before.find((e) => e.type === 'probe-finished' && e.index === i)!.dir!, 'summary.json'), 'utf8'));
  // Each probe draws its own workload sample, seeded from the recipe's seed and its rate.
  const manifestPath = join(runDir, 'manifest.json');
  const written = readJson<{ seed: number; plan: { probeSeeds?: string } }>(manifestPath);
  assert.is(written.plan.probeSeeds, 'per-rate');
  for (const text of summariesBefore) {
    const s = JSON.parse(text) as { qps: number; seed: number };
    assert.is(s.seed, deriveSeed(written.seed, `probe at ${s.qps}`), `probe at ${s.qps} QPS`);
  }
  // The manifest as a version before per-probe seeds wrote it: the resumed probes replay the
  // workload's seed, as such a run's finished probes did.
  delete written.plan.probeSeeds;
  writeFileSync(manifestPath, JSON.stringify(written));

  const resumed = await fluidcap(['run', '--resume', runDir], { timeoutMs: 150_000 });
  assert.is(resumed.code, 0, resumed.stderr.slice(-3000));
  assert.match(resumed.stderr, /reusing the prefill profile/);
  assert.match(resumed.stderr, /reusing 2 finished probe\(s\)/);

  const after = events(runDir);
  const restart = after.findIndex((e, i) => i > 0 && e.type === 'run-started');
  assert.ok(restart > 0, 'no second run-started in events.jsonl');
  assert.is(after.filter((e) => e.type === 'profile-finished').length, 1, 'the profile was redone');
  const startedAgain = after.slice(restart).filter((e) => e.type === 'probe-started').map((e) => e.index!);
  assert.ok(startedAgain.length >= 1);
  assert.is(startedAgain[0], 4, `resumed probes start at ${startedAgain[0]}, not 4`);
  assert.ok(startedAgain.every((i, k) => i === 4 + k), `probe indices after resume: ${startedAgain.join(', ')}`);
  const moved = after.find((e) => e.type === 'probe-interrupted' && e.index === 3);
  assert.ok(moved, 'no probe-interrupted event for probe 3');
  assert.is(moved!.movedTo, `${probe3}.interrupted`);
  assert.ok(existsSync(join(runDir, `${probe3}.interrupted`, 'timelines.jsonl')), 'the interrupted probe\'s timelines were not kept');
  assert.not.ok(existsSync(join(runDir, probe3)), 'the interrupted probe directory was reused');
  readJsonl(join(runDir, `${probe3}.interrupted`, 'timelines.jsonl')); // every kept line still parses

  assert.is(readFileSync(join(runDir, 'profile', 'fit.json'), 'utf8'), fitBefore);
  const capacity = readJson<CapacityFile>(join(runDir, 'capacity.json'));
  assert.ok(capacity.capacityQps > 0);
  assert.equal(capacity.probes.slice(0, 2).map((p) => p.index), [1, 2]);
  assert.not.ok(capacity.probes.some((p) => p.index === 3), 'the interrupted probe counted in capacity.json');
  [1, 2].forEach((i, k) => assert.is(readFileSync(join(runDir, capacity.probes[k].dir, 'summary.json'), 'utf8'), summariesBefore[k], `probe ${i} was rewritten`));
  for (const p of capacity.probes.slice(2)) {
    assert.is(readJson<{ seed: number }>(join(runDir, p.dir, 'summary.json')).seed, written.seed, `resumed probe ${p.index} at ${p.qps} QPS`);
  }
  const manifest = readJson<{ status: string; host: { pid: number } }>(join(runDir, 'manifest.json'));
  assert.is(manifest.status, 'completed');
  assert.ok(existsSync(join(runDir, 'report.md')));
  assert.not.ok(isAlive(manifest.host.pid), 'the resumed run left its simulated engine running');
});

test('Ctrl-C (SIGINT to the process group) during a probe: exit 130, resume command printed, partial timelines kept', async () => {
  const outDir = join(work, 'interrupted');
  // Its own process group, so the signal reaches fluidcap and the engine together, as from a terminal.
  const run = start(['run', FAST_RECIPE, '--out', outDir], { group: true });
  const runDir = await untilProbeStarted(outDir, 2, run.exited, run.stderr, { timeoutMs: 90_000, pollMs: 25 });
  // Interrupt once the second probe has archived a request, however slowly a loaded machine starts it.
  const probeDir = events(runDir).find((e) => e.type === 'probe-started' && e.index === 2)!.dir!;
  const timelines = join(runDir, probeDir, 'timelines.jsonl');
  const t0 = performance.now();
  while (!(existsSync(timelines) && statSync(timelines).size > 0) && performance.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 25));
  process.kill(-run.child.pid!, 'SIGINT');
  const exit = await run.exited;
  assert.is(exit.code, 130, run.stderr().slice(-3000));
  assert.ok(run.stderr().includes(`resume with: fluidcap run --resume ${runDir}`), run.stderr().slice(-2000));
  assert.not.match(run.stderr(), /\n\s+at /);

  const ev = events(runDir);
  const last = ev[ev.length - 1];
  assert.is(last.type, 'run-finished');
  assert.is(last.status, 'interrupted');
  const cut = ev.find((e) => e.type === 'probe-interrupted');
  assert.ok(cut, 'no probe-interrupted event');
  const kept = readJsonl(join(runDir, cut!.movedTo!, 'timelines.jsonl'));
  assert.ok(kept.length > 0, 'the interrupted probe kept no timelines');
  assert.not.ok(existsSync(join(runDir, 'capacity.json')), 'an interrupted run wrote capacity.json');
  const manifest = readJson<{ status: string; host: { pid: number } }>(join(runDir, 'manifest.json'));
  assert.is(manifest.status, 'interrupted');
  assert.ok(await untilDead(manifest.host.pid, 5_000), 'the engine was not released');

  // Edited journals (an index or rate past any search, a finished probe whose directory is not
  // there) are refused as bad input before anything starts: the journal is left as it was.
  const journal = readFileSync(join(runDir, 'events.jsonl'), 'utf8');
  const firstFinished = ev.find((e) => e.type === 'probe-finished')! as { index: number; qps?: number };
  const edits: [string, (line: string) => string, RegExp][] = [
    ['index 1e30', (l) => l.replace(`"index":${firstFinished.index},`, '"index":1e30,'), /events\.jsonl: probe-\w+ event: index must be a whole number within 1\.\.1000000, got 1e\+30/],
    ['qps 1e300', (l) => l.replace(`"qps":${firstFinished.qps},`, '"qps":1e300,'), /events\.jsonl: probe-\w+ event: qps must be a rate > 0 and <= 1000000, got 1e\+300/],
    ['qps moved', (l) => l.replace(`"qps":${firstFinished.qps},`, `"qps":${firstFinished.qps! + 0.5},`), /events\.jsonl: probe-finished event \(index \d+, qps [\d.]+\) has no probes\/\S+\/summary\.json/],
  ];
  for (const [what, edit, message] of edits) {
    const copy = join(work, `edited-${what.replace(/\s/g, '-')}`);
    cpSync(runDir, copy, { recursive: true });
    const edited = journal.split('\n').map((l) => (l.includes('"type":"probe-') ? edit(l) : l)).join('\n');
    assert.is.not(edited, journal, what);
    writeFileSync(join(copy, 'events.jsonl'), edited);
    const r = await fluidcap(['run', '--resume', copy], { timeoutMs: 60_000 });
    assert.is(r.code, 2, `${what}: ${r.stderr.slice(-2000)}`);
    assert.match(r.stderr, message);
    assert.not.match(r.stderr, /internal error|engine ready|\n\s+at /);
    assert.is(readFileSync(join(copy, 'events.jsonl'), 'utf8'), edited, `${what}: the journal was written to`);
  }
});

test.after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

test.run();
