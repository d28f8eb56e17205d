// A profile request that ends ok without any token arrival (a stream whose one choice has empty
// text, no usage and no token ids: nothing says a token was produced) is named for what it
// lacked, not reported as "ok". A stand-in server (no engine streams so on purpose).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planProfile } from '../../harness/capacity/profilePlan.ts';
import { runProfile } from '../../harness/capacity/profiler.ts';

test('an ok answer with no token arrival fails the profile with a line that says so', async () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"index":0,"text":"","finish_reason":"length"}]}\n\ndata: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-profile-failure-'));
  try {
    const plan = planProfile({ promptLengths: [16, 32], repeats: 1, warmup: 0 }, { maxContextTokens: 1024 });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const message = await runProfile(plan, { baseUrl: url, model: 'm', api: 'completions', format: 'text', seed: 1, requestTimeoutS: 5 }, { runDir, ttftSlackS: 0.3, log: () => {} }).then(
      () => '',
      (err: Error) => err.message,
    );
    assert.match(message, /2 of 2 requests failed/);
    assert.match(message, /16 tokens: answered \(HTTP 200\) but no token arrived \(the stream carried no text, no running token count and no token ids; no usage was sent\)/);
    assert.not.match(message, /tokens: ok/);
  } finally {
    server.close();
    rmSync(runDir, { recursive: true });
  }
});

test.run();
