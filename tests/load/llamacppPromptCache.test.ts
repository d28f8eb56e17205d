// Proof against a server we did not write: llama.cpp's llama-server (CPU, a 260K-parameter model)
// with its prompt caches ON and fluidcap's cache-off switch off (workload.promptCache: on), so only
// the prompts themselves prevent reuse. Two identical profile + probe passes (two runs: two nonces)
// measure the same, the server's cached-token counter grows by the BOS alone, profile medians match
// cache_prompt:false measurements of the same run, and prompt lengths are the engine's to ±1.
// Without the nonce (the old prompts) the same second pass is served from the cache: the checks can fail.
// Needs ../shared (the model) and a built llama-server; skips with a message otherwise.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from '../support/ports.ts';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { preparePrompts, type PromptSetup } from '../../harness/load/tokenizeCalibration.ts';
import { planProfile, profileStream } from '../../harness/capacity/profilePlan.ts';
import { sendOne } from '../../harness/load/sendOne.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { runProbe } from '../../harness/load/runProbe.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const sharedDir = process.env.FLUIDCAP_SHARED_DIR ?? join(repoRoot, '..', 'shared');
const modelPath = join(sharedDir, 'engines', 'stories260K.gguf');

function findServer(): string | null {
  if (process.env.FLUIDCAP_LLAMA_SERVER) return existsSync(process.env.FLUIDCAP_LLAMA_SERVER) ? process.env.FLUIDCAP_LLAMA_SERVER : null;
  const cache = join(homedir(), '.cache', 'fluidcap-engines');
  if (!existsSync(cache)) return null;
  for (const d of readdirSync(cache)) if (existsSync(join(cache, d, 'llama-server'))) return join(cache, d, 'llama-server');
  return null;
}

const binary = findServer();
const missing = !existsSync(modelPath)
  ? `${modelPath} is absent (../shared is not beside the repository)`
  : binary === null
    ? 'no llama-server binary (build it with ../shared/engines/build-llama-server.sh, or set FLUIDCAP_LLAMA_SERVER)'
    : null;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};


async function startLlama(): Promise<{ url: string; child: ChildProcess; log: () => string }> {
  const port = await freePort();
  // Caches on: no --no-cache-prompt and the default --cache-ram; one thread, since the client runs beside it.
  const child = spawn(binary!, ['-m', modelPath, '--host', '127.0.0.1', '--port', String(port), '--metrics', '-np', '4', '-c', '8192', '-t', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (b) => (log = (log + b).slice(-20000)));
  child.stderr!.on('data', (b) => (log = (log + b).slice(-20000)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited (${child.exitCode}): ${log.slice(-2000)}`);
    const ok = await fetch(`${url}/health`).then((r) => r.status === 200, () => false);
    if (ok) return { url, child, log: () => log };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`llama-server not healthy after 30 s: ${log.slice(-2000)}`);
}

async function cachedTokens(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^llamacpp:prompt_tokens_cached_total\s+(\S+)/m.exec(text);
  if (!m) throw new Error(`no llamacpp:prompt_tokens_cached_total in /metrics:\n${text.slice(0, 1000)}`);
  return Number(m[1]);
}

const PROFILE_LENGTHS = [384, 768, 1152, 1536];
const REPEATS = 7;
const workload = workloadSchema.parse({ lengths: { prompt: { min: 128, max: 512 }, output: 4 }, arrivals: { process: 'poisson' }, seed: 42, promptCache: 'on' });

interface Prefill {
  promptTokens: number;
  prefillS: number;
  usagePromptTokens: number | null;
}

/**
 * The profile of two runs, request by request in turn (run A's request k, run B's and a
 * cache_prompt:false reference at the same length), so a CPU shared with other work slows all
 * three alike. With the old prompts B's request k is A's, sent right after it: a cache hit.
 */
async function interleavedProfiles(url: string, setup: PromptSetup, nonces: [string, string] | null, reference: boolean, repeats = REPEATS) {
  const profile = planProfile({ promptLengths: PROFILE_LENGTHS, repeats, warmup: 2 }, { maxContextTokens: 2048 });
  const out = { a: [] as Prefill[], b: [] as Prefill[], ref: [] as Prefill[] };
  const before = await cachedTokens(url);
  let cachingRequests = 0;
  for (const req of profile.requests) {
    const variants: [keyof typeof out, string | undefined, string | undefined, Record<string, unknown>][] = [
      ['a', nonces?.[0], nonces ? profileStream(1) : undefined, setup.extraBody],
      ['b', nonces?.[1], nonces ? profileStream(1) : undefined, setup.extraBody],
    ];
    if (reference) variants.push(['ref', 'reference-nonce', 'reference', { cache_prompt: false }]);
    // The first request at a new length pays for the engine's change of batch shape: the order
    // rotates so no variant always goes first. Without a nonce B must follow A (the cache case).
    const order = reference ? variants.map((_, j) => variants[(j + req.seq) % variants.length]) : variants;
    for (const [key, nonce, stream, extraBody] of order) {
      const r = await sendOne(
        { promptTokens: req.promptTokens, maxTokens: req.maxTokens, index: req.seq },
        { ...setup.content, nonce, stream, baseUrl: url, model: setup.model, api: 'completions', format: setup.format, seed: 42, extraBody, requestTimeoutS: 60 },
      );
      assert.is(r.record.status, 'ok', r.record.error ?? '');
      if (key !== 'ref') cachingRequests++;
      // As the profiler measures it: from the send to the first token of a max_tokens 1 request.
      if (!req.warmup) out[key].push({ promptTokens: req.promptTokens, prefillS: r.record.chunks[0][0] - r.record.sentS, usagePromptTokens: r.record.usagePromptTokens ?? null });
    }
  }
  return { ...out, cachedTokens: (await cachedTokens(url)) - before, cachingRequests };
}

/** Two runs' probes at once, B's arrivals 1 s behind A's: both see the same machine. Requests paired by id. */
async function overlappingProbes(url: string, setup: PromptSetup, dir: string, nonces: [string, string]) {
  const before = await cachedTokens(url);
  const runs = await Promise.all(
    nonces.map(async (nonce, k) => {
      const plan = planProbe({ workload, rateQps: 2, requests: 60, maxContextTokens: 2048, idPrefix: '01', promptNonce: nonce, promptFormat: setup.format });
      plan.requests = plan.requests.map((r) => ({ ...r, scheduledS: r.scheduledS + k }));
      const outDir = mkdtempSync(join(dir, 'probe-'));
      await runProbe(plan, { outDir, baseUrl: url, model: setup.model, workers: 0, metricsUrl: false, content: setup.content, extraBody: setup.extraBody, requestTimeoutS: 60 });
      const records = readFileSync(join(outDir, 'timelines.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TimelineRecord);
      // A reused keep-alive connection the server closed while idle fails before the server sees the
      // request (the client's retry is its own concern): such requests are left out of the pairs.
      const failed = records.filter((r) => r.status !== 'ok');
      assert.ok(failed.every((r) => r.httpStatus === null && /socket hang up|ECONNRESET/.test(r.error ?? '')), JSON.stringify(failed[0]));
      assert.ok(failed.length <= records.length * 0.1, `${failed.length} of ${records.length} requests failed`);
      return new Map(records.filter((r) => r.status === 'ok').map((r) => [r.id, r]));
    }),
  );
  const both = [...runs[0].keys()].filter((id) => runs[1].has(id));
  return { a: both.map((id) => runs[0].get(id)!), b: both.map((id) => runs[1].get(id)!), sent: runs[0].size + runs[1].size, cachedTokens: (await cachedTokens(url)) - before };
}

/**
 * A distribution-free 95% interval of the median (order statistics of the binomial, normal
 * approximation): how far a shared CPU's noise lets the sample median wander.
 */
function medianInterval(xs: number[]): [number, number] {
  const s = [...xs].sort((a, b) => a - b);
  const j = Math.max(0, Math.floor(s.length / 2 - 0.98 * Math.sqrt(s.length)));
  return [s[j], s[s.length - 1 - j]];
}

const ttft = (r: TimelineRecord) => r.chunks[0][0] - r.scheduledS;
const byLength = (rows: Prefill[], p: number) => median(rows.filter((r) => r.promptTokens === p).map((r) => r.prefillS));
const allPrefill = (rows: Prefill[]) => median(rows.map((r) => r.prefillS));

const ms = (s: number) => `${(s * 1000).toFixed(1)} ms`;

if (missing) {
  console.log(`SKIP llama.cpp prompt-cache proof: ${missing}`);
  test.skip('llama.cpp prompt-cache proof', () => {});
} else {
  test('llama.cpp, caches on: a second run measures what the first did; without the nonce the cache serves it', async () => {
    const server = await startLlama();
    const dir = mkdtempSync(join(tmpdir(), 'fluidcap-llama-cache-'));
    try {
      const setup = await preparePrompts({ baseUrl: server.url, api: 'completions', format: 'text', cacheOff: false, checkLengths: [256, 1024, 1536], nonce: 'calibration' });
      assert.equal(setup.extraBody, {}, 'promptCache on: fluidcap must not send cache_prompt:false');
      assert.ok(setup.notes.some((n) => n.includes('llamacpp dialect')), setup.notes.join('; '));
      assert.ok(setup.notes.some((n) => n.includes('target.model not set')), 'the model comes from /v1/models');
      assert.ok(setup.checks.every((c) => Math.abs(c.counted - c.planned) <= 1), JSON.stringify(setup.checks));

      const prof = await interleavedProfiles(server.url, setup, ['run-one-nonce-a1', 'run-two-nonce-b2'], true);
      const probes = await overlappingProbes(server.url, setup, dir, ['run-one-nonce-a1', 'run-two-nonce-b2']);
      // Ratios of requests paired in time (same length, sent one after the other), so the load other
      // work puts on a shared CPU mostly cancels; the ratio of plain medians is printed beside them.
      const prefillPairs = prof.b.map((r, k) => r.prefillS / prof.a[k].prefillS);
      const ttftPairs = probes.b.map((r, k) => ttft(r) / ttft(probes.a[k]));
      const refPairs = (run: Prefill[], p: number) => run.flatMap((r, k) => (r.promptTokens === p ? [r.prefillS / prof.ref[k].prefillS] : []));
      const show = (x: number[]) => { const c = medianInterval(x); return `${median(x).toFixed(3)} [95%: ${c[0].toFixed(3)}, ${c[1].toFixed(3)}]`; };
      const lines = [
        `profile (${prof.a.length} measured prefills per run): median first run ${ms(allPrefill(prof.a))}, second run ${ms(allPrefill(prof.b))} (ratio ${(allPrefill(prof.b) / allPrefill(prof.a)).toFixed(3)}), paired ratio ${show(prefillPairs)}`,
        `probe (${probes.a.length} requests per run): median TTFT first run ${ms(median(probes.a.map(ttft)))}, second run ${ms(median(probes.b.map(ttft)))} (ratio ${(median(probes.b.map(ttft)) / median(probes.a.map(ttft))).toFixed(3)}), paired ratio ${show(ttftPairs)}`,
        `cached tokens: profile +${prof.cachedTokens} over ${prof.cachingRequests} cache-on requests, probes +${probes.cachedTokens} over ${probes.sent} answered requests`,
        ...PROFILE_LENGTHS.map((p) => `${p} tokens: profile medians ${ms(byLength(prof.a, p))} / ${ms(byLength(prof.b, p))}, cache_prompt:false ${ms(byLength(prof.ref, p))}; paired ratios to it ${show(refPairs(prof.a, p))} / ${show(refPairs(prof.b, p))}`),
      ];
      console.log(lines.map((l) => `  llama.cpp proof: ${l}`).join('\n'));

      const lengthErrors = [...prof.a, ...prof.b, ...prof.ref].map((r) => Math.abs((r.usagePromptTokens ?? NaN) - r.promptTokens))
        .concat([...probes.a, ...probes.b].map((r) => Math.abs((r.usagePromptTokens ?? NaN) - r.promptTokens)));
      assert.ok(lengthErrors.every((e) => e <= 1), `prompt lengths off plan by up to ${Math.max(...lengthErrors)} tokens`);
      // Each prompt shares its BOS with whatever the slot held. Prompts open with one of the ~30
      // words this 512-token vocabulary holds whole, so about 1 request in 30 also shares that word.
      const slack = (n: number) => n + Math.ceil(n * 0.1);
      assert.ok(prof.cachedTokens <= slack(prof.cachingRequests), lines.join('\n'));
      assert.ok(probes.cachedTokens <= slack(probes.sent), lines.join('\n'));
      // On a quiet machine (FLUIDCAP_PROOF_STRICT=1) the medians themselves must lie in the band; on
      // a CPU shared with other work, the 95% interval of the paired median must reach into it: a
      // cache serving the second run (ratios near 0.05, below) stays far outside either way.
      const within = (x: number[], lo: number, hi: number) => {
        if (process.env.FLUIDCAP_PROOF_STRICT === '1') return median(x) >= lo && median(x) <= hi;
        const [a, b] = medianInterval(x);
        return b >= lo && a <= hi;
      };
      assert.ok(within(prefillPairs, 0.8, 1.25), `prefill second/first\n${lines.join('\n')}`);
      assert.ok(within(ttftPairs, 0.8, 1.25), `TTFT second/first\n${lines.join('\n')}`);
      for (const p of PROFILE_LENGTHS) {
        for (const run of [prof.a, prof.b]) assert.ok(within(refPairs(run, p), 0.75, 1.25), `${p} tokens: profile vs cache_prompt:false\n${lines.join('\n')}`);
      }

      // Token-id prompts (this server adds no BOS to them): two runs share nothing the cache could serve.
      const idSetup = await preparePrompts({ baseUrl: server.url, api: 'completions', format: 'token-ids', cacheOff: false, checkLengths: [384, 1536], nonce: 'calibration' });
      assert.is(idSetup.format, 'token-ids');
      assert.ok(idSetup.content.tokenIdRange![1] <= 512, `${idSetup.content.tokenIdRange}`);
      const ids = await interleavedProfiles(server.url, idSetup, ['run-one-nonce-a1', 'run-two-nonce-b2'], false, 2);
      console.log(`  llama.cpp proof, token ids: cached tokens +${ids.cachedTokens} over ${ids.cachingRequests} requests`);
      assert.ok([...ids.a, ...ids.b].every((r) => r.usagePromptTokens === r.promptTokens));
      assert.ok(ids.cachedTokens <= Math.ceil(ids.cachingRequests * 0.05), `token ids: cached tokens grew by ${ids.cachedTokens}`);

      // The old prompts (no nonce, no stream): the second run's requests are served from the cache.
      const old = await interleavedProfiles(server.url, setup, null, false);
      const oldPairs = old.b.map((r, k) => r.prefillS / old.a[k].prefillS);
      const measuredTokens = old.b.reduce((n, r) => n + r.promptTokens, 0);
      console.log(`  llama.cpp proof, without the nonce: prefill median ${ms(allPrefill(old.a))} then ${ms(allPrefill(old.b))}, paired ratio ${show(oldPairs)}, cached tokens +${old.cachedTokens} over ${old.cachingRequests} requests`);
      assert.ok(old.cachedTokens > measuredTokens / 2, `without the nonce only ${old.cachedTokens} tokens were served from the cache`);
      assert.not.ok(within(oldPairs, 0.8, 1.25), `without the nonce the second run should be served from the cache: paired ratio ${show(oldPairs)}`);
    } finally {
      server.child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test.run();
