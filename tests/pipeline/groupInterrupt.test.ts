// Ctrl-C as a terminal or GNU `timeout -s INT` delivers it: SIGINT to fluidcap and to its whole
// process group, while a probe runs against the local simulated engine. The engine is fluidcap's
// to stop, so the group's signal must not reach it first: the probe is recorded as interrupted by
// the user (exit 130, resumable), never as "the engine died" (exit 3), and no engine is left.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, FAST_RECIPE, ROOT, childEnv, isAlive, onlyRunDir, readJson, readJsonl } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-groupint-'));

test('SIGINT to the process group during probe 1: recorded as interrupted by the user, exit 130, the engine gone', async () => {
  const out = join(work, 'results');
  // A process group of its own, as a shell job is: the signal below reaches fluidcap and every
  // process left in its group.
  const child = spawn(process.execPath, [BIN, 'run', FAST_RECIPE, '--out', out], { cwd: ROOT, env: childEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const guard = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 120_000);
  // Wait until probe 1 has requests in flight.
  while (!/search: probe 1 .*— \d+\/\d+ requests|search: probe 1 /.test(stderr)) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 1500));
  // What `timeout -s INT` does: the process, then its group.
  process.kill(child.pid!, 'SIGINT');
  process.kill(-child.pid!, 'SIGINT');
  const code = await exited;
  clearTimeout(guard);
  assert.is(code, 130, stderr);
  assert.not.match(stderr, /engine died|infrastructure fault/);
  assert.match(stderr, /resume with: fluidcap run --resume /);
  const runDir = onlyRunDir(out);
  const manifest = readJson<{ status: string; exitReason: string; host: { pid: number } }>(join(runDir, 'manifest.json'));
  assert.is(manifest.status, 'interrupted');
  assert.is(manifest.exitReason, 'interrupted by signal');
  const journal = readJsonl(join(runDir, 'events.jsonl'));
  assert.ok(journal.some((e) => e.type === 'probe-interrupted'), 'the probe in progress is recorded as interrupted');
  const moved = readdirSync(join(runDir, 'probes')).filter((d) => d.endsWith('.interrupted'));
  assert.is(moved.length, 1);
  const summaryFile = join(runDir, 'probes', moved[0], 'summary.json');
  const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as { engineDied: string | null; interrupted: boolean; validity: string };
  assert.is(summary.engineDied, null, summary.validity);
  assert.ok(summary.interrupted);
  assert.not.ok(isAlive(manifest.host.pid), 'the simulated engine is gone');
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
