// keepAwake.ts: a spinner spins only once it runs under SCHED_IDLE, and is gone after stop(). Real
// threads and the real scheduler; needs Linux and util-linux's chrt, and skips with a message
// without them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { execaSync } from 'execa';
import { bootSpinners, engineIsLocal, shouldKeepCoresAwake } from '../../harness/load/keepAwake.ts';
import { prioritiseReceivers, schedulingPolicy } from '../../harness/load/threadPriority.ts';

const hasChrt = (() => {
  try {
    execaSync('chrt', ['--version']);
    return process.platform === 'linux';
  } catch {
    return false;
  }
})();
if (!hasChrt) console.log('# keepAwake: needs Linux and chrt; skipped');

/** A thread's state letter (R running or runnable, S sleeping), or null once it has exited. */
function thread(tid: number): { state: string } | null {
  try {
    const f = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return { state: f.slice(f.lastIndexOf(')') + 2).split(' ')[0] };
  } catch {
    return null;
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a spinner that is not under SCHED_IDLE does not spin: it exits', async () => {
  if (!hasChrt) return;
  const s = await bootSpinners(1);
  assert.is(s.threadIds.length, 1);
  const [tid] = s.threadIds;
  assert.is.not(schedulingPolicy(tid), 5);
  assert.is(s.start(), 0);
  await sleep(200);
  const t = thread(tid);
  assert.ok(t === null || t.state !== 'R', `spinner still running: ${JSON.stringify(t)}`);
  await s.stop();
});

test('lowered with the background threads, it spins under SCHED_IDLE until stopped', async () => {
  if (!hasChrt) return;
  const s = await bootSpinners(1);
  const [tid] = s.threadIds;
  const priorities = await prioritiseReceivers([]);
  try {
    assert.is(schedulingPolicy(tid), 5);
    assert.is(thread(tid)!.state, 'S');
    assert.is(s.start(), 1);
    // Spinning, it is always running or runnable (R), however busy the machine; waiting, it sleeps (S).
    for (let i = 0; i < 5; i++) {
      await sleep(20);
      assert.is(thread(tid)!.state, 'R');
    }
  } finally {
    await s.stop();
    await priorities.release();
  }
  assert.is(thread(tid), null);
});

test("'auto' spins only for an engine on another machine", () => {
  const own = ['10.1.2.3', 'fe80::1'];
  for (const url of ['http://127.0.0.1:8000', 'http://localhost:8000/v1', 'http://[::1]:80', 'http://127.8.0.1', 'http://10.1.2.3:8000', 'http://[FE80::1]:8000', 'http://gpu.localhost']) {
    assert.ok(engineIsLocal(url, own), url);
  }
  assert.is(shouldKeepCoresAwake('auto', 'http://127.0.0.1:8000'), false);
  for (const url of ['http://10.1.2.4:8000', 'https://gpu-07.example.com', 'http://[2001:db8::7]:8000']) {
    assert.not.ok(engineIsLocal(url, own), url);
  }
  assert.is(shouldKeepCoresAwake('auto', 'http://192.0.2.10:8000'), true);
  assert.is(shouldKeepCoresAwake(true, 'http://127.0.0.1'), true);
  assert.is(shouldKeepCoresAwake(false, 'http://192.0.2.10'), false);
});

test.run();
