// Ctrl-C handling of the long verbs (harness/cli/interrupts.ts), on an injected clock and exit: one
// signal delivered twice within a second (process, then group) is one interrupt; a deliberate
// second one waits a bounded time for teardown, then exits 130 printing the clean command; work
// that finishes in time exits normally.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withInterrupts } from '../../harness/cli/interrupts.ts';

function harness() {
  let nowMs = 0;
  const out: string[] = [];
  const exits: number[] = [];
  let teardowns = 0;
  return {
    out,
    exits,
    teardowns: () => teardowns,
    advance: (ms: number) => (nowMs += ms),
    deps: { nowMs: () => nowMs, write: (t: string) => void out.push(t), exit: (c: number) => void exits.push(c), tearDownNow: async () => void (teardowns += 1) },
  };
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGINT to the process and then to its group (timeout -s INT) counts once: the work stops cleanly, nothing is forced', async () => {
  const h = harness();
  let aborts = 0;
  const result = await withInterrupts('stopping', async (signal) => {
    signal.addEventListener('abort', () => (aborts += 1));
    process.emit('SIGINT', 'SIGINT');
    h.advance(3);
    process.emit('SIGINT', 'SIGINT');
    await tick(20);
    return signal.aborted ? 'stopped' : 'running';
  }, { deps: h.deps, forceWaitS: 0.01 });
  assert.is(result, 'stopped');
  assert.is(aborts, 1);
  assert.equal(h.exits, []);
  assert.is(h.teardowns(), 0);
  assert.not.match(h.out.join(''), /second/);
});

test('SIGINT then SIGTERM within a second are two interrupts (different signals): the second forces', async () => {
  const h = harness();
  let release = () => {};
  const finished = withInterrupts('stopping', () => new Promise<string>((r) => (release = () => r('done'))), { deps: h.deps, forceWaitS: 0.05 });
  process.emit('SIGINT', 'SIGINT');
  h.advance(5);
  process.emit('SIGTERM', 'SIGTERM');
  await tick(150);
  assert.equal(h.exits, [130]);
  assert.is(h.teardowns(), 1);
  release();
  await finished;
});

test('a deliberate second Ctrl-C: teardown runs, and when it is not done within the bound, exit 130 with the clean command', async () => {
  const h = harness();
  let release = () => {};
  const finished = withInterrupts('stopping', () => new Promise<void>((r) => (release = r)), {
    deps: h.deps,
    forceWaitS: 0.1,
    cleanHint: () => 'fluidcap clean hosts.yaml --run r1',
  });
  process.emit('SIGINT', 'SIGINT');
  h.advance(1500);
  process.emit('SIGINT', 'SIGINT');
  assert.is(h.teardowns(), 1);
  await tick(30);
  assert.equal(h.exits, [], 'exited before the bound');
  await tick(200);
  assert.equal(h.exits, [130]);
  const text = h.out.join('');
  assert.match(text, /second SIGINT: removing the engine, for at most 0.1 s/);
  assert.match(text, /teardown did not finish within 0.1 s; exiting without confirming the engine is gone: check and remove it with\n  fluidcap clean hosts.yaml --run r1\n/);
  release();
  await finished;
});

test('a deliberate second Ctrl-C while teardown finishes in time: no forced exit, the work ends normally', async () => {
  const h = harness();
  const got = await withInterrupts('stopping', async () => {
    process.emit('SIGINT', 'SIGINT');
    h.advance(2000);
    process.emit('SIGINT', 'SIGINT');
    await tick(20);
    return 'released';
  }, { deps: h.deps, forceWaitS: 0.1 });
  await tick(200);
  assert.is(got, 'released');
  assert.equal(h.exits, []);
});

test('a third Ctrl-C exits at once; handlers are removed when the work ends', async () => {
  const h = harness();
  let release = () => {};
  const before = process.listenerCount('SIGINT');
  const finished = withInterrupts('stopping', () => new Promise<void>((r) => (release = r)), { deps: h.deps, forceWaitS: 60 });
  for (let i = 0; i < 3; i++) {
    process.emit('SIGINT', 'SIGINT');
    h.advance(1200);
  }
  assert.equal(h.exits, [130]);
  release();
  await finished;
  assert.is(process.listenerCount('SIGINT'), before);
});

test.run();
