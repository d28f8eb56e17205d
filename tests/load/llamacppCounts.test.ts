// Token counts against llama.cpp's real server (CPU, tiny model): it holds back half a UTF-8
// character. With continuousUsage it states its running count on every event (timings_per_token),
// held-back tokens arriving as events without text, so every request's counts are exact and each
// token arrives when the engine emitted it; without, totals still match.
// Needs FLUIDCAP_LLAMA_SERVER and FLUIDCAP_LLAMA_MODEL (.tmp/e2e/env, from scripts/ci/setup-e2e.sh).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { freePort } from '../support/ports.ts';
import { sendOne } from '../../harness/load/sendOne.ts';
import { judgeTokenDrift } from '../../harness/load/health.ts';
import { arrivalChunks, type TimelineRecord } from '../../harness/timeline/record.ts';

const bin = process.env.FLUIDCAP_LLAMA_SERVER;
const model = process.env.FLUIDCAP_LLAMA_MODEL;
const ready = !!bin && existsSync(bin) && !!model && existsSync(model);


async function startLlama(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(bin!, ['-m', model!, '--host', '127.0.0.1', '--port', String(port), '-np', '2', '-c', '4096', '-t', '1'], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('llama-server not healthy within 60 s');
}

if (!ready) {
  console.log('SKIP load/llamacppCounts: FLUIDCAP_LLAMA_SERVER and FLUIDCAP_LLAMA_MODEL must name a llama-server binary and a model (source .tmp/e2e/env)');
} else {
  test("llama-server: multi-token chunks counted exactly with continuousUsage, totals right without", async () => {
    const { url, child } = await startLlama();
    try {
      const run = async (continuousUsage: boolean) => {
        const records: TimelineRecord[] = [];
        for (let i = 0; i < 8; i++) {
          // Random ids at a high temperature make the model emit byte tokens, which the server
          // holds back until a character is whole; a fixed seed makes each request repeatable.
          const { record } = await sendOne(
            { promptTokens: 20, maxTokens: 200, index: i },
            { baseUrl: url, model: 'm', api: 'completions', format: 'token-ids', tokenIdRange: [3, 512], seed: 7, continuousUsage, extraBody: { cache_prompt: false, temperature: 2, seed: 100 + i }, requestTimeoutS: 60, stallTimeoutS: 30 },
          );
          records.push(record);
        }
        return records;
      };
      const exact = await run(true);
      for (const r of exact) {
        assert.is(r.status, 'ok', String(r.error));
        assert.is(r.outputTokens, 200);
        assert.is(r.usageOutputTokens, 200);
        assert.is(r.tokenCounts, 'exact', r.id);
      }
      const drift = judgeTokenDrift(exact, 0.02);
      assert.is(drift.verdict, 'ok', drift.note);
      // Asked for its running count, the server sends an event for every token, the held-back ones
      // with empty text: each is an engine arrival, and the reader sees them with the next text.
      const textless = exact.reduce((n, r) => n + (r.textlessChunks?.length ?? 0), 0);
      assert.ok(textless >= 1, `expected the seeded requests to stream a token without text: ${drift.note}`);
      assert.ok(exact.some((r) => arrivalChunks(r, 'visible').some((c) => c[1] > 1)), 'a held-back token shows with the next text (a visible chunk of 2+ tokens)');
      const inferred = await run(false);
      for (const r of inferred) {
        assert.is(r.status, 'ok', String(r.error));
        assert.is(r.outputTokens, r.usageOutputTokens);
        assert.is(r.tokenCountProblem, undefined);
      }
      assert.is(judgeTokenDrift(inferred, 0.02).verdict, 'ok');
    } finally {
      child.kill('SIGTERM');
    }
  });
}

test.run();
