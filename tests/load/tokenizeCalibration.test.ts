// Prompt sizing against a real server (the simulated engine on port 0, which counts words): the
// /tokenize fast path and the usage.prompt_tokens path give the same sizing and exact lengths; a
// server without /tokenize falls back with a note; token ids only where the vocabulary is known,
// and an id range beyond it is refused with the field to change; the served model comes from
// /v1/models when the recipe names none.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSimServer } from '../../harness/sim/server.ts';
import { calibrateText, findTokenizeDialect, preparePrompts, readServedModel, usagePromptTokens, cacheOffFields } from '../../harness/load/tokenizeCalibration.ts';
import { textPrompt, tokenIdPrompt, type PromptOptions } from '../../harness/load/prompt.ts';

async function withSim<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.05 });
  await sim.ready;
  try {
    return await fn(sim.url);
  } finally {
    await sim.close();
  }
}

test('the simulated engine: /tokenize in the vLLM dialect, one token per word, lengths exact by usage', async () => {
  await withSim(async (url) => {
    const served = await readServedModel(url);
    assert.ok(served.id, 'the sim lists its model');
    assert.is(served.nVocab, null);
    const t = { baseUrl: url, model: served.id!, api: 'completions' as const };
    assert.is((await findTokenizeDialect(t)).dialect, 'vllm');
    for (const useTokenize of [true, false]) {
      const cal = await calibrateText(t, { checkLengths: [5, 60, 300], useTokenize });
      assert.ok(cal.exact, cal.notes.join('; '));
      assert.ok(cal.sizing.wordTokens.every((n) => n === 1));
      assert.ok(cal.sizing.firstTokens.every((n) => n === 1));
      assert.ok(cal.sizing.source.includes(useTokenize ? '/tokenize (vllm dialect)' : 'usage.prompt_tokens'), cal.sizing.source);
      const o: PromptOptions = { api: 'completions', model: served.id!, format: 'text', seed: 1, nonce: 'z', stream: 's', textSizing: cal.sizing };
      for (const n of [7, 123]) assert.is(await usagePromptTokens(t, textPrompt(o, 0, n)), n);
    }
  });
});

test('preparePrompts: model from /v1/models with a note; token ids need a known vocabulary; a range beyond it says what to change', async () => {
  await withSim(async (url) => {
    const noVocab = await preparePrompts({ baseUrl: url, api: 'completions', format: 'token-ids', cacheOff: true, checkLengths: [10, 50] });
    assert.ok(noVocab.notes.some((n) => n.includes('target.model not set')), noVocab.notes.join('; '));
    assert.is(noVocab.format, 'text');
    assert.ok(noVocab.notes.some((n) => n.includes('vocabulary size')));
    assert.equal(noVocab.extraBody, {}, 'the sim is not llama.cpp: no cache_prompt field');
    const known = await preparePrompts({ baseUrl: url, api: 'completions', format: 'token-ids', knownVocab: 32000, cacheOff: true, checkLengths: [10, 50] });
    assert.is(known.format, 'token-ids');
    assert.equal(known.checks.map((c) => c.counted), [10, 50]);
    const o: PromptOptions = { api: 'completions', model: known.model, format: 'token-ids', seed: 1, ...known.content };
    assert.is(await usagePromptTokens({ baseUrl: url, model: known.model, api: 'completions' }, tokenIdPrompt(o, 3, 77)), 77);
    try {
      await preparePrompts({ baseUrl: url, api: 'completions', format: 'token-ids', tokenIdRange: [1000, 40000], cacheOff: true, checkLengths: [10] });
      assert.unreachable('ids beyond the vocabulary must be refused');
    } catch (err) {
      const msg = (err as Error).message;
      assert.ok(msg.includes('HTTP') || msg.includes('400'), msg);
      assert.ok(msg.includes('workload.prompts.tokenIdRange') && msg.includes('[1000, 40000)'), msg);
    }
    const refused = await preparePrompts({ baseUrl: url, api: 'completions', format: 'token-ids', tokenIdRange: [1000, 40000], knownVocab: 32000, cacheOff: true, checkLengths: [10] }).then(
      () => null,
      (err: Error) => err.message,
    );
    assert.match(refused ?? '', /exceeds the vocabulary .* \(32000 tokens\)/);
  });
});

/** A server with a tokenizer of its own: a BOS, then ceil(length / 3) tokens per word; /tokenize in TGI's dialect when asked. */
async function oddServer(tgiTokenize: boolean) {
  const count = (text: string) => 1 + text.split(' ').reduce((n, w) => n + Math.ceil(w.length / 3), 0);
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (b) => (body += b));
    req.on('end', () => {
      if (req.url === '/v1/completions') {
        const prompt = (JSON.parse(body) as { prompt: string }).prompt;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ text: 'x' }], usage: { prompt_tokens: count(prompt), completion_tokens: 1 } }));
      } else if (req.url === '/v1/models') res.writeHead(200).end(JSON.stringify({ data: [{ id: 'odd', owned_by: 'llamacpp', meta: { n_vocab: 300 } }] }));
      else if (req.url === '/tokenize' && tgiTokenize) {
        const inputs = (JSON.parse(body) as { inputs?: string }).inputs;
        // TGI: an array of tokens, without the BOS the model adds; other request shapes are refused.
        if (typeof inputs !== 'string') res.writeHead(422).end(JSON.stringify({ error: 'missing field `inputs`' }));
        else res.writeHead(200).end(JSON.stringify(Array.from({ length: count(inputs) - 1 }, (_, id) => ({ id, text: 'x' }))));
      } else res.writeHead(404).end('not found');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, count, close: () => server.close() };
}

test('TGI-style /tokenize (`inputs`, no BOS): found, and the BOS the server adds is measured with usage', async () => {
  const { url, count, close } = await oddServer(true);
  try {
    const setup = await preparePrompts({ baseUrl: url, model: 'odd', api: 'completions', format: 'text', cacheOff: false, checkLengths: [9, 40, 200] });
    assert.ok(setup.notes.some((n) => n.includes('tgi dialect')), setup.notes.join('; '));
    assert.equal(setup.extraBody, {}, 'cache on: no cache-off field');
    const o: PromptOptions = { api: 'completions', model: 'odd', format: 'text', seed: 3, nonce: 'q', stream: 'p', ...setup.content };
    for (const n of [15, 99, 250]) assert.is(count(textPrompt(o, 1, n)), n);
  } finally {
    close();
  }
});

test('a server without /tokenize: usage.prompt_tokens sizes prompts, and the note says so', async () => {
  const { url, count, close } = await oddServer(false);
  try {
    const setup = await preparePrompts({ baseUrl: url, api: 'completions', format: 'text', cacheOff: true, checkLengths: [9, 40, 200] });
    assert.equal(setup.extraBody, { cache_prompt: false });
    assert.ok(setup.notes.some((n) => n.includes('usage.prompt_tokens')), setup.notes.join('; '));
    assert.ok(setup.checks.every((c) => Math.abs(c.counted - c.planned) <= 1), JSON.stringify(setup.checks));
    const o: PromptOptions = { api: 'completions', model: 'odd', format: 'text', seed: 3, nonce: 'q', stream: 'p', ...setup.content };
    for (const n of [15, 99, 250]) assert.is(count(textPrompt(o, 1, n)), n);
  } finally {
    close();
  }
});

test('cache-off fields only for llama.cpp', () => {
  assert.equal(cacheOffFields({ ownedBy: 'llamacpp' }), { cache_prompt: false });
  assert.equal(cacheOffFields({ ownedBy: null }, 'llamacpp'), { cache_prompt: false });
  assert.equal(cacheOffFields({ ownedBy: 'vllm' }, 'vllm'), {});
});

test.run();
