// The simulated engine dies with fluidcap even when fluidcap is SIGKILLed while the engine is idle
// (execa's cleanup cannot run then; before the fix the engine kept serving, orphaned, forever).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, childEnv, isAlive } from './support.ts';

test('a SIGKILLed parent takes its idle local simulated engine with it', async () => {
  const out = await new Promise<{ stdout: string; signal: string | null }>((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'tests', 'pipeline', 'fixtures', 'killParentAfterSim.ts')],
      { cwd: ROOT, env: childEnv(), timeout: 60_000 },
      (err, stdout) => done({ stdout, signal: (err as { signal?: string } | null)?.signal ?? null }),
    );
  });
  assert.is(out.signal, 'SIGKILL');
  const [pidText, baseUrl] = out.stdout.trim().split(' ');
  const pid = Number(pidText);
  assert.ok(pid > 0, `no engine pid printed: ${out.stdout}`);
  const t0 = performance.now();
  while (isAlive(pid) && performance.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 50));
  const survived = isAlive(pid);
  if (survived) process.kill(pid, 'SIGKILL');
  assert.not.ok(survived, `the engine (pid ${pid}, ${baseUrl}) outlived its SIGKILLed parent`);
  const health = await fetch(`${baseUrl}/health`).then(() => 'answered', () => 'refused');
  assert.is(health, 'refused');
});

test.run();
