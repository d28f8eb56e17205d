// `sim serve --strict-openai` over real HTTP: Sarathi-Serve's answers to what fluidcap adds (one
// 400 listing every undeclared field in pydantic's words, then token-id prompts refused), what it
// declares still served (ignore_eos, stream_options.include_usage), and no /health or /tokenize.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import yargs from 'yargs';
import { startSimServer } from '../../harness/sim/server.ts';
import { optionsFromArgs, serveOptions, simServeArgvProblems } from '../../harness/sim/serveFlags.ts';

async function withStrictSim<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.05, strictOpenai: true });
  await sim.ready;
  try {
    return await fn(sim.url);
  } finally {
    await sim.close();
  }
}

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('undeclared fields: one 400 in pydantic extra_forbidden words, every field listed with its loc', async () => {
  await withStrictSim(async (url) => {
    const res = await post(`${url}/v1/completions`, {
      model: 'tiny', prompt: [5, 6, 7], max_tokens: 4, min_tokens: 4, ignore_eos: true, stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true }, timings_per_token: true,
    });
    assert.is(res.status, 400);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(Object.keys(body), ['object', 'message', 'type', 'param', 'code']);
    assert.is(body.object, 'error');
    assert.is(body.type, 'BadRequestError');
    assert.is(body.code, 400);
    assert.is(
      body.message,
      "[{'type': 'extra_forbidden', 'loc': ('body', 'min_tokens'), 'msg': 'Extra inputs are not permitted', 'input': 4}, " +
        "{'type': 'extra_forbidden', 'loc': ('body', 'stream_options', 'continuous_usage_stats'), 'msg': 'Extra inputs are not permitted', 'input': True}, " +
        "{'type': 'extra_forbidden', 'loc': ('body', 'timings_per_token'), 'msg': 'Extra inputs are not permitted', 'input': True}]",
    );
  });
});

test('token-id prompts refused once the fields pass; text with ignore_eos and include_usage served', async () => {
  await withStrictSim(async (url) => {
    const ids = await post(`${url}/v1/completions`, { model: 'tiny', prompt: [5, 6, 7], max_tokens: 4, ignore_eos: true });
    assert.is(ids.status, 400);
    assert.is(((await ids.json()) as { message: string }).message, 'array of tokens, or array of token arrays not supported');
    const ok = await post(`${url}/v1/completions`, { model: 'tiny', prompt: 'the of and', max_tokens: 40, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
    assert.is(ok.status, 200);
    const text = await ok.text();
    assert.match(text, /"completion_tokens":40/);
    assert.ok(text.trimEnd().endsWith('data: [DONE]'));
    const chat = await post(`${url}/v1/chat/completions`, { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, min_tokens: 2 });
    assert.is(chat.status, 400);
    assert.match(((await chat.json()) as { message: string }).message, /'loc': \('body', 'min_tokens'\)/);
  });
});

test('no /health and no /tokenize; /v1/models still lists the model', async () => {
  await withStrictSim(async (url) => {
    assert.is((await fetch(`${url}/health`)).status, 404);
    assert.is((await post(`${url}/tokenize`, { prompt: 'the of' })).status, 404);
    assert.is((await fetch(`${url}/v1/models`)).status, 200);
  });
});

test('the flag: accepted by sim serve, and reaches the server options', () => {
  assert.equal(simServeArgvProblems(['--strict-openai']), []);
  const parsed = serveOptions(yargs(['--strict-openai'])).parseSync() as Record<string, unknown>;
  assert.is(optionsFromArgs(parsed).strictOpenai, true);
});

test.run();
