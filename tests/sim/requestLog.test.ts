// The simulated engine's --log-requests: one vLLM 0.8.5-style line per request carrying the whole
// prompt and all its token ids, so the log relay can be tested against a chatty engine; off by default.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSimServer } from '../../harness/sim/server.ts';
import { streamRequest, wordsPrompt } from './streamHelper.ts';

for (const logRequests of [true, false]) {
  test(`--log-requests ${logRequests}: ${logRequests ? 'each request logged with its whole prompt and token ids' : 'no request lines'}`, async () => {
    const lines: string[] = [];
    const sim = await startSimServer({ port: 0, timeScale: 0.05, logRequests, log: (l) => lines.push(l) });
    try {
      const prompt = wordsPrompt(300, 'log');
      await streamRequest(`${sim.url}/v1/completions`, { model: 'tiny', prompt, max_tokens: 2, stream: true });
      await streamRequest(`${sim.url}/v1/completions`, { model: 'tiny', prompt: [5, 6, 7], max_tokens: 2, stream: true });
      const received = lines.filter((l) => l.includes('Received request'));
      if (!logRequests) return assert.is(received.length, 0);
      assert.is(received.length, 2);
      assert.ok(received[0].includes(`prompt: ${JSON.stringify(prompt)}`), 'the whole prompt');
      const ids = /prompt_token_ids: \[([^\]]*)\]/.exec(received[0])![1].split(', ');
      assert.is(ids.length, 300, 'one id per prompt token');
      assert.match(received[1], /prompt_token_ids: \[5, 6, 7\]/);
    } finally {
      await sim.close();
    }
  });
}

test.run();
