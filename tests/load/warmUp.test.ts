// A receiving worker's warm-up (warmUp.ts): every request through the loopback engine ends
// complete, over reused connections, and the reader's per-read code it compiled survives the
// probe's first buffer transfer (which, without the warm-up's own transfer, throws that code away:
// checked in a child process with V8's natives syntax).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';
import { warmReceivePath } from '../../harness/load/warmUp.ts';

const prompt = { api: 'completions' as const, model: 'tiny', format: 'token-ids' as const, seed: 1 };

test('every warm-up request ends complete, with one read or more per event burst', async () => {
  const r = await warmReceivePath({ streams: 8, tokens: 16, prompt });
  assert.is(r.requests, 16);
  assert.is(r.complete, 16);
  // Each stream's 16 events are written one step apart; reads may merge steps but not requests.
  assert.ok(r.reads >= 16 && r.reads <= 16 * 17, `${r.reads} reads`);
});

test('chat prompts warm up too', async () => {
  const r = await warmReceivePath({ streams: 4, tokens: 8, prompt: { ...prompt, api: 'chat', format: 'text' } });
  assert.is(r.complete, 8);
});

test('the per-read code compiled in the warm-up survives the first transfer of a buffer', async () => {
  const child = fileURLToPath(new URL('./support/warmUpStatus.ts', import.meta.url));
  const { stdout } = await execa(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', child]);
  const out = JSON.parse(stdout.trim().split('\n').pop()!) as { result: { complete: number }; afterWarmUp: Record<string, boolean>; afterTransfer: Record<string, boolean> };
  assert.is(out.result.complete, 128);
  assert.equal(out.afterWarmUp, { feedChunked: true, append: true }, 'compiled by the warm-up');
  assert.equal(out.afterTransfer, { feedChunked: true, append: true }, 'still compiled after a transfer');
});

test.run();
