// The dialect probe over real HTTP against the simulated engine: plain (takes everything, one
// request), strict (Sarathi-Serve's validation: three requests, min_tokens and the per-chunk usage
// fields dropped, token ids → text), and refusing what fluidcap did not add (named, not retried).
// Then a probe whose server can pin no output length: requests that end early at EOS are ok, and
// their short outputs are not counted as drift.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer, type SimServerOptions } from '../../harness/sim/server.ts';
import { negotiateDialect } from '../../harness/load/dialectProbe.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { runProbe } from '../../harness/load/runProbe.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

async function withSim<T>(opts: SimServerOptions, fn: (url: string) => Promise<T>): Promise<T> {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.05, ...opts });
  await sim.ready;
  try {
    return await fn(sim.url);
  } finally {
    await sim.close();
  }
}

/** POST on a fresh connection, as the calibration does; counts what it sent. */
function poster(sent: string[]) {
  return (url: URL, body: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      sent.push(body);
      const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body);
    });
}

test('a server that takes every field: one request, nothing dropped', async () => {
  await withSim({}, async (url) => {
    const sent: string[] = [];
    const found = await negotiateDialect({ baseUrl: url, model: 'tiny', api: 'completions' }, { format: 'token-ids', tokenIdRange: [10, 100] }, poster(sent));
    assert.equal(found, { dialect: { omitFields: [], promptFormat: 'token-ids' }, requestedFormat: 'token-ids', attempts: 1 });
    const body = JSON.parse(sent[0]) as Record<string, unknown>;
    assert.ok(Array.isArray(body.prompt) && body.min_tokens === 2 && body.ignore_eos === true && body.timings_per_token === true);
  });
});

test('strict server: refused fields dropped, then token ids → text; each retry without what was named', async () => {
  await withSim({ strictOpenai: true }, async (url) => {
    const sent: string[] = [];
    const found = await negotiateDialect({ baseUrl: url, model: 'tiny', api: 'completions' }, { format: 'token-ids', tokenIdRange: [10, 100] }, poster(sent));
    assert.is(found.attempts, 3);
    assert.equal(found.dialect, { omitFields: ['min_tokens', 'timings_per_token', 'stream_options.continuous_usage_stats'], promptFormat: 'text' });
    const last = JSON.parse(sent[2]) as Record<string, unknown>;
    assert.is(typeof last.prompt, 'string');
    assert.is(last.min_tokens, undefined);
    assert.is(last.ignore_eos, true, 'Sarathi-Serve declares ignore_eos: kept');
    assert.equal(last.stream_options, { include_usage: true });
    // Chat has no token-id prompts: two requests.
    const chat = await negotiateDialect({ baseUrl: url, model: 'tiny', api: 'chat' }, { format: 'text' }, poster([]));
    assert.is(chat.attempts, 2);
  });
});

test('strict server refusing a field fluidcap did not add: refused with its answer, not retried for it', async () => {
  await withSim({ strictOpenai: true }, async (url) => {
    const sent: string[] = [];
    const err = await negotiateDialect({ baseUrl: url, model: 'tiny', api: 'completions', extraBody: { cache_prompt: false } }, { format: 'text' }, poster(sent)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.ok(err !== null, 'must refuse');
    // The first answer names min_tokens and cache_prompt together; the second names only cache_prompt.
    assert.is(sent.length, 2);
    assert.match(err!, /POST \/v1\/completions answered HTTP 400 naming nothing fluidcap adds \(already without min_tokens, timings_per_token, stream_options\.continuous_usage_stats\)/);
    assert.match(err!, /'loc': \('body', 'cache_prompt'\)/);
  });
});

test('output length not pinned (min_tokens and ignore_eos dropped): early ends are ok and not drift', async () => {
  await withSim({}, async (url) => {
    const dir = mkdtempSync(join(tmpdir(), 'fluidcap-dialect-'));
    try {
      const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 32 }, output: { min: 280, max: 300 } }, arrivals: { process: 'poisson' }, seed: 7 });
      const plan = planProbe({ workload, rateQps: 20, requests: 12, maxContextTokens: 2048, idPrefix: '01' });
      const result = await runProbe(plan, {
        outDir: dir,
        baseUrl: url,
        model: 'tiny',
        workers: 1,
        requestTimeoutS: 30,
        stallTimeoutS: 5,
        metricsUrl: false,
        content: { omitFields: ['min_tokens', 'ignore_eos'] },
      });
      assert.is(result.byStatus.ok, 12, JSON.stringify(result.byStatus));
      const lines = readFileSync(join(dir, 'timelines.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TimelineRecord);
      const short = lines.filter((l) => typeof l.usageOutputTokens === 'number' && l.usageOutputTokens < l.maxTokens);
      assert.ok(short.length > 0, 'the simulated engine stops at its natural length below 280 tokens');
      assert.is(result.tokenDrift.verdict, 'ok', result.tokenDrift.note);
      assert.is(result.tokenDrift.outputOutside, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test.run();
