// The official openai npm client (v6), a client nobody here wrote, streams from the simulated
// engine: completions and chat, with usage equal to what was asked.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import OpenAI from 'openai';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import { shown } from '../support/hooks.ts';

let sim: SimServerHandle;
let client: OpenAI;

test.before(shown(async () => {
  sim = await startSimServer({ model: 'tiny', gpu: 'h100-sxm-80gb', scheduler: 'vllm', port: 0, timeScale: 0.2 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
}));
test.after(async () => {
  await sim.close();
});

test('openai client streams a completion with the requested usage and emit stamps', async () => {
  const prompt = Array.from({ length: 37 }, (_, i) => `w${i}`).join(' ');
  // ignore_eos is vLLM's extension; the client passes unknown body fields through.
  const params = { model: 'tiny', prompt, max_tokens: 25, stream: true as const, stream_options: { include_usage: true }, ignore_eos: true };
  const stream = await client.completions.create(params);
  let text = '';
  let textChunks = 0;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let finish: string | null = null;
  const emits: bigint[] = [];
  for await (const chunk of stream) {
    emits.push(BigInt((chunk as unknown as { fluidcap_emit_ns: string }).fluidcap_emit_ns));
    if (chunk.choices.length > 0) {
      text += chunk.choices[0].text;
      textChunks += 1;
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(usage, { prompt_tokens: 37, completion_tokens: 25, total_tokens: 62 });
  assert.is(textChunks, 25, 'one chunk per decode iteration');
  assert.is(text.trim().split(/\s+/).length, 25);
  assert.is(finish, 'length');
  for (let i = 1; i < emits.length; i++) assert.ok(emits[i] >= emits[i - 1], 'emit stamps are monotonic');
  const nowNs = process.hrtime.bigint();
  assert.ok(nowNs - emits[emits.length - 1] < 5_000_000_000n, 'emit stamps are on this process clock');
});

test('openai client streams a chat completion with the requested usage', async () => {
  const params = {
    model: 'tiny',
    messages: [
      { role: 'system' as const, content: 'you are terse' },
      { role: 'user' as const, content: 'say eight words about fluid token streams' },
    ],
    max_tokens: 12,
    stream: true as const,
    stream_options: { include_usage: true },
    ignore_eos: true,
  };
  const stream = await client.chat.completions.create(params);
  let content = '';
  let role: string | undefined;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let finish: string | null = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) {
      role ??= chunk.choices[0].delta.role;
      content += chunk.choices[0].delta.content ?? '';
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.is(role, 'assistant');
  assert.equal(usage, { prompt_tokens: 3 + 7, completion_tokens: 12, total_tokens: 22 });
  assert.is(content.trim().split(/\s+/).length, 12);
  assert.is(finish, 'length');
});

test('openai client: non-streamed completion and deterministic text', async () => {
  const a = await client.completions.create({ model: 'tiny', prompt: 'one two three', max_tokens: 300 });
  const b = await client.completions.create({ model: 'tiny', prompt: 'one two three', max_tokens: 300 });
  assert.is(a.choices[0].text, b.choices[0].text, 'same prompt, same text');
  assert.is(a.choices[0].finish_reason, 'stop', 'EOS comes before 300 tokens without ignore_eos');
  assert.is(a.usage?.completion_tokens, a.choices[0].text.trim().split(/\s+/).length);
  assert.ok((a.usage?.completion_tokens ?? 0) < 300);
});

test('unknown model is a 404 and a too-long prompt a 400, as vLLM answers', async () => {
  try {
    await client.completions.create({ model: 'nope', prompt: 'x', max_tokens: 1 });
    assert.unreachable('should fail');
  } catch (err) {
    assert.instance(err, OpenAI.NotFoundError);
  }
  try {
    await client.completions.create({ model: 'tiny', prompt: Array(4000).fill(1), max_tokens: 200 });
    assert.unreachable('should fail');
  } catch (err) {
    assert.instance(err, OpenAI.BadRequestError);
    assert.match((err as Error).message, /maximum context length is 4096 tokens/);
  }
});

test.run();
