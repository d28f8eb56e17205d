// Prompts no prefix cache can serve: over a whole simulated run (profile attempts, warm-ups, every
// probe) and across two runs, no two prompts share more than a few leading tokens; content is a
// function of (nonce, stream, index, length) alone; text prompts hit their planned count exactly
// under a measured sizing; a deliberate shared prefix is shared by the requested fraction only.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planProbe, planPromptContent, probeStream } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { planProfile, profileStream } from '../../harness/capacity/profilePlan.ts';
import { requestBody, textPrompt, tokenIdPrompt, tokenIdRangeFor, DEFAULT_TOKEN_ID_RANGE, type PromptOptions } from '../../harness/load/prompt.ts';
import { PROMPT_WORDS, composeText, predictTextTokens, type TextSizing } from '../../harness/load/textSizing.ts';
import { createRng } from '../../harness/util/rng.ts';

const workload = workloadSchema.parse({ lengths: { prompt: { min: 64, max: 400 }, output: 8 }, seed: 42 });

/** Every prompt one simulated run sends: two profile attempts (one resumed), then six probes. */
function runPrompts(nonce: string | undefined, build: (o: PromptOptions, index: number, tokens: number) => (number | string)[], base: Partial<PromptOptions> = {}) {
  const out: { who: string; seq: (number | string)[] }[] = [];
  const opts = (stream: string | undefined): PromptOptions => ({ api: 'completions', model: 'm', format: 'token-ids', seed: workload.seed, ...base, nonce, stream });
  const profile = planProfile({ promptLengths: [64, 128, 256, 400], repeats: 3, warmup: 2 }, { maxContextTokens: 4096 });
  for (const attempt of [1, 2]) {
    for (const r of profile.requests) out.push({ who: `profile-${attempt}#${r.seq}`, seq: build(opts(nonce === undefined ? undefined : profileStream(attempt)), r.seq, r.promptTokens) });
  }
  const rates = [1, 2, 4, 8, 6, 7];
  rates.forEach((rate, i) => {
    const prefix = String(i + 1).padStart(2, '0');
    const plan = planProbe({ workload, rateQps: rate, requests: 150, maxContextTokens: 4096, idPrefix: prefix, promptNonce: nonce });
    const content = nonce === undefined ? {} : planPromptContent(plan.prompts);
    for (const r of plan.requests) out.push({ who: `${plan.prompts.stream}#${r.index}`, seq: build({ ...opts(undefined), ...content }, r.index, r.promptTokens) });
  });
  return out;
}

function lcp(a: readonly unknown[], b: readonly unknown[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** The longest prefix any two sequences share (adjacent after sorting suffices) and who shares it. */
function longestShared(seqs: { who: string; seq: (number | string)[] }[]): { tokens: number; pair: string } {
  const sorted = [...seqs].sort((x, y) => {
    const n = lcp(x.seq, y.seq);
    if (n === x.seq.length || n === y.seq.length) return x.seq.length - y.seq.length;
    return x.seq[n] < y.seq[n] ? -1 : 1;
  });
  let best = { tokens: 0, pair: '' };
  for (let i = 1; i < sorted.length; i++) {
    const n = lcp(sorted[i - 1].seq, sorted[i].seq);
    if (n > best.tokens) best = { tokens: n, pair: `${sorted[i - 1].who} / ${sorted[i].who}` };
  }
  return best;
}

const ids = (range: [number, number]) => (o: PromptOptions, index: number, tokens: number) => tokenIdPrompt({ ...o, tokenIdRange: range }, index, tokens);

test('token ids: no two prompts of a run share more than 2 leading tokens, even in a 512-token vocabulary', () => {
  for (const range of [DEFAULT_TOKEN_ID_RANGE, tokenIdRangeFor(512)]) {
    const run = runPrompts('a1b2c3d4e5f60718', ids(range));
    assert.is(run.length, 2 * (2 + 12) + 6 * 150);
    const shared = longestShared(run);
    assert.ok(shared.tokens <= 2, `range ${range}: ${shared.tokens} tokens shared by ${shared.pair}`);
  }
});

test('token ids: two runs of the same recipe share no more than 2 leading tokens (different nonces)', () => {
  const range = tokenIdRangeFor(512);
  const a = runPrompts('0000000000000001', ids(range));
  const b = runPrompts('0000000000000002', ids(range));
  const shared = longestShared([...a.map((x) => ({ ...x, who: `A:${x.who}` })), ...b.map((x) => ({ ...x, who: `B:${x.who}` }))]);
  assert.ok(shared.tokens <= 2, `${shared.tokens} tokens shared by ${shared.pair}`);
});

test('without a nonce and streams (the old prompts), probes resend the same prompts: the check above can fail', () => {
  const run = runPrompts(undefined, ids(tokenIdRangeFor(512)));
  const shared = longestShared(run);
  assert.ok(shared.tokens >= 64, `expected whole prompts repeated, longest shared prefix ${shared.tokens}`);
});

test('content is a function of nonce, stream, index and length; arrivals and lengths ignore the nonce', () => {
  const o: PromptOptions = { api: 'completions', model: 'm', format: 'token-ids', seed: 7, nonce: 'n1', stream: 'probe-01-qps-2' };
  assert.equal(tokenIdPrompt(o, 3, 50), tokenIdPrompt({ ...o }, 3, 50));
  assert.is(requestBody(o, 3, 50, 4), requestBody({ ...o }, 3, 50, 4));
  assert.not.equal(tokenIdPrompt(o, 3, 50), tokenIdPrompt({ ...o, nonce: 'n2' }, 3, 50));
  assert.not.equal(tokenIdPrompt(o, 3, 50), tokenIdPrompt({ ...o, stream: 'probe-02-qps-2' }, 3, 50));
  // Lengths of one index share no prefix (token-id prompts used to be prefixes of each other).
  assert.ok(lcp(tokenIdPrompt(o, 3, 50), tokenIdPrompt(o, 3, 80)) <= 1);
  const a = planProbe({ workload, rateQps: 3, requests: 40, maxContextTokens: 4096, promptNonce: 'x' });
  const b = planProbe({ workload, rateQps: 3, requests: 40, maxContextTokens: 4096, promptNonce: 'y' });
  assert.equal(a.requests, b.requests);
  assert.is(a.prompts.stream, probeStream('00', 3));
  assert.is.not(a.prompts.nonce, b.prompts.nonce);
});

test('token-id ranges fit the vocabulary; the server-added tokens are left out of the ids sent', () => {
  const r = tokenIdRangeFor(512);
  assert.ok(r[0] >= 3 && r[1] <= 512 && r[1] - r[0] > 400, `${r}`);
  assert.equal(tokenIdRangeFor(128256), DEFAULT_TOKEN_ID_RANGE);
  assert.throws(() => tokenIdRangeFor(10), /too small/);
  const o: PromptOptions = { api: 'completions', model: 'm', format: 'token-ids', seed: 1, tokenIdRange: r, idOverheadTokens: 1 };
  const p = tokenIdPrompt(o, 0, 100);
  assert.is(p.length, 99);
  assert.ok(p.every((id) => id >= r[0] && id < r[1]));
});

/** A tokenizer-like sizing: words of 1–3 tokens, and a BOS the server adds to every prompt. */
const sizing: TextSizing = {
  words: PROMPT_WORDS,
  wordTokens: PROMPT_WORDS.map((w) => 1 + (w.length > 3 ? 1 : 0) + (w.length > 6 ? 1 : 0)),
  firstTokens: PROMPT_WORDS.map((w) => 2 + (w.length > 3 ? 1 : 0) + (w.length > 6 ? 1 : 0)),
  source: 'test',
};

test('text: composed prompts count exactly the planned tokens under the sizing, for every length', () => {
  const rng = createRng(5);
  for (let tokens = 2; tokens <= 700; tokens += 7) {
    const c = composeText(rng, tokens, sizing, true);
    assert.is(c.tokens, tokens);
    assert.is(predictTextTokens(c.text, sizing), tokens, c.text);
  }
  // Shorter than any first word: the shortest one, and the count says so.
  assert.is(composeText(rng, 1, sizing, true).tokens, 2);
});

test('text: no two prompts of a run share more than 2 leading words, and each has its planned count', () => {
  const run = runPrompts('feedfacecafebeef', (o, index, tokens) => {
    const text = textPrompt({ ...o, format: 'text', textSizing: sizing }, index, tokens);
    assert.is(predictTextTokens(text, sizing), tokens);
    return text.split(' ');
  });
  const shared = longestShared(run);
  assert.ok(shared.tokens <= 2, `${shared.tokens} words shared by ${shared.pair}`);
});

test('shared prefix (cache on): that fraction of a probe opens with one prefix of exactly that many tokens', () => {
  const w = workloadSchema.parse({ lengths: { prompt: { min: 100, max: 300 }, output: 4 }, promptCache: { sharedPrefix: { tokens: 64, fraction: 0.3 } } });
  const plan = planProbe({ workload: w, rateQps: 2, requests: 400, maxContextTokens: 4096, promptNonce: 'n', idPrefix: '01' });
  const o: PromptOptions = { api: 'completions', model: 'm', format: 'token-ids', seed: w.seed, tokenIdRange: [3, 500], ...planPromptContent(plan.prompts) };
  const prompts = plan.requests.map((r) => tokenIdPrompt(o, r.index, r.promptTokens));
  prompts.forEach((p, i) => assert.is(p.length, plan.requests[i].promptTokens));
  const first = prompts.find((p, i) => lcp(p, prompts.find((q, j) => j !== i && lcp(p, q) >= 64) ?? []) >= 64)!;
  const sharing = prompts.filter((p) => lcp(p, first) >= 64).length;
  assert.ok(Math.abs(sharing / prompts.length - 0.3) < 0.06, `${sharing} of ${prompts.length} share the prefix`);
  assert.ok(prompts.every((p) => { const n = lcp(p, first); return n <= 2 || (n >= 64 && (p === first || n <= 66)); }));
  // Off: the same plan has no shared prefix.
  assert.is(planPromptContent({ ...plan.prompts, cache: { mode: 'off', sharedPrefix: null } }).sharedPrefix, null);
});

test('workload.promptCache: off by default; on; a shared prefix implies on; a prefix with off is refused', () => {
  const base = { lengths: { prompt: 100, output: 10 } };
  assert.equal(workloadSchema.parse(base).promptCache, { mode: 'off', sharedPrefix: null });
  assert.equal(workloadSchema.parse({ ...base, promptCache: 'on' }).promptCache, { mode: 'on', sharedPrefix: null });
  assert.equal(workloadSchema.parse({ ...base, promptCache: { sharedPrefix: { tokens: 32, fraction: 0.5 } } }).promptCache, { mode: 'on', sharedPrefix: { tokens: 32, fraction: 0.5 } });
  const bad = workloadSchema.safeParse({ ...base, promptCache: { mode: 'off', sharedPrefix: { tokens: 32, fraction: 0.5 } } });
  assert.ok(!bad.success && bad.error.issues.some((i) => i.path.join('.') === 'promptCache.sharedPrefix'));
  const range = workloadSchema.safeParse({ ...base, prompts: { tokenIdRange: [10, 12] } });
  assert.ok(!range.success && range.error.issues.some((i) => i.path.join('.') === 'prompts.tokenIdRange'));
});

test.run();
