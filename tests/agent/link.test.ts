// The orchestrator's end of an agent's pipes (agent/link.ts) over real streams: an agent's exit
// notice can arrive before its last output has been read (a child's 'exit' fires before its pipes
// close), and the last lines are its results, so they still arrive and the link is gone after them,
// with the notice's reason; output that never ends does not hold the link open.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PassThrough } from 'node:stream';
import { EXIT_DRAIN_MS, linkOverStreams } from '../../harness/agent/link.ts';
import { encodeMessage, type FromAgent } from '../../harness/agent/protocol.ts';

function pipes() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let exit!: (why: string) => void;
  const ended = new Promise<string>((r) => (exit = r));
  const link = linkOverStreams('agent 0', { stdin, stdout, ended });
  const got: FromAgent['type'][] = [];
  const order: string[] = [];
  link.onMessage((m) => { got.push(m.type); order.push(m.type); });
  void link.gone.then(() => order.push('gone'));
  return { stdout, exit, link, got, order };
}

test('output still in flight when the exit notice comes is read before the link is gone', async () => {
  const { stdout, exit, link, order } = pipes();
  stdout.write(encodeMessage({ type: 'ready' }));
  exit('agent 0 exited (0)');
  await new Promise((r) => setImmediate(r));
  // The agent's last words, after its exit was noticed, then its pipe closes.
  stdout.end(encodeMessage({ type: 'log', line: 'last' }));
  assert.is(await link.gone, 'agent 0 exited (0)');
  assert.equal(order, ['ready', 'log', 'gone']);
});

test('an exit notice whose output never ends is gone after the drain bound', async () => {
  const { exit, link } = pipes();
  const t0 = performance.now();
  exit('agent 0 exited (137)');
  assert.is(await link.gone, 'agent 0 exited (137)');
  assert.ok(performance.now() - t0 >= EXIT_DRAIN_MS - 50);
});

test('output that ends first makes the link gone at once, with that reason', async () => {
  const { stdout, link, got } = pipes();
  stdout.end(encodeMessage({ type: 'ready' }));
  assert.is(await link.gone, 'agent 0 closed its output');
  assert.equal(got, ['ready']);
});

test.run();
