// The HTTP surface beyond the openai client: token-id and multi-prompt completions, /tokenize,
// /v1/models, min_tokens and EOS, chat without streaming, error shapes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import { streamRequest, wordsPrompt } from './streamHelper.ts';
import { shown } from '../support/hooks.ts';

let sim: SimServerHandle;
const post = async (path: string, body: unknown) => {
  const r = await fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as Record<string, any> };
};

test.before(shown(async () => {
  sim = await startSimServer({ port: 0, timeScale: 0.02, servedModelName: 'sim-model' });
}));
test.after(async () => {
  await sim.close();
});

test('token-id prompt and a batch of prompts: one choice each, usage summed', async () => {
  const one = await post('/v1/completions', { model: 'sim-model', prompt: [1, 2, 3, 4, 5], max_tokens: 4, ignore_eos: true });
  assert.is(one.status, 200);
  assert.is(one.json.usage.prompt_tokens, 5);
  const many = await post('/v1/completions', { prompt: ['a b', 'c d e'], max_tokens: 3, ignore_eos: true });
  assert.equal(many.json.choices.map((c: { index: number }) => c.index), [0, 1]);
  assert.equal(many.json.usage, { prompt_tokens: 5, total_tokens: 11, completion_tokens: 6 });
});

test('streamed batch of prompts: chunks carry each choice index, one [DONE]', async () => {
  const r = await streamRequest(`${sim.url}/v1/completions`, { prompt: [[1, 2], [3, 4, 5]], max_tokens: 5, ignore_eos: true, stream: true });
  const byIndex = [0, 0];
  for (const e of r.events) if (e.json) byIndex[(e.json.choices as Array<{ index: number }>)[0].index] += 1;
  assert.equal(byIndex, [5, 5]);
  assert.is(r.events.filter((e) => e.data === '[DONE]').length, 1);
});

test('min_tokens holds EOS back; without ignore_eos the natural end is "stop"', async () => {
  const natural = await post('/v1/completions', { prompt: 'hello there', max_tokens: 1000 });
  const n = natural.json.usage.completion_tokens;
  assert.is(natural.json.choices[0].finish_reason, 'stop');
  const held = await post('/v1/completions', { prompt: 'hello there', max_tokens: 1000, min_tokens: n + 50 });
  assert.is(held.json.usage.completion_tokens, n + 50);
});

test('chat without streaming returns an assistant message with usage', async () => {
  const r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'text', text: 'one two' }] }], max_tokens: 6, ignore_eos: true });
  assert.is(r.json.object, 'chat.completion');
  assert.is(r.json.choices[0].message.role, 'assistant');
  assert.is(r.json.choices[0].message.content.trim().split(/\s+/).length, 6);
  assert.equal(r.json.usage, { prompt_tokens: 2, total_tokens: 8, completion_tokens: 6 });
});

test('/tokenize counts words like the engine; /v1/models names the served model', async () => {
  const t = await post('/tokenize', { prompt: wordsPrompt(17) });
  assert.is(t.json.count, 17);
  assert.is(t.json.tokens.length, 17);
  const models = (await (await fetch(`${sim.url}/v1/models`)).json()) as { data: Array<{ id: string; root: string }> };
  assert.is(models.data[0].id, 'sim-model');
  assert.is(models.data[0].root, 'fluidcap/tiny');
});

test('errors in vLLM shape: bad JSON, out-of-vocabulary id, too long, unknown route', async () => {
  const badJson = await fetch(`${sim.url}/v1/completions`, { method: 'POST', body: '{nope' });
  assert.is(badJson.status, 400);
  assert.is(((await badJson.json()) as { error: { type: string } }).error.type, 'BadRequestError');
  const oov = await post('/v1/completions', { prompt: [1, 99999], max_tokens: 1 });
  assert.is(oov.status, 400);
  assert.match(oov.json.error.message, /out of vocabulary/);
  const long = await post('/v1/chat/completions', { messages: [{ role: 'user', content: wordsPrompt(4000) }], max_tokens: 200 });
  assert.is(long.status, 400);
  assert.is(long.json.error.code, 400);
  assert.match(long.json.error.message, /4000 in the messages, 200 in the completion/);
  const missing = await fetch(`${sim.url}/v2/nothing`);
  assert.is(missing.status, 404);
  await missing.text();
});

test.run();
