// metron-fig5d as the paper ran it, the pure parts: the reading at a 10% miss rate (the smallest
// target TBT whose miss rate is at most 10%, between grid deadlines by bisection), the figure's
// files from two endpoints' requests (the paper's public-endpoint claims not comparable here), and
// the endpoints file refused naming the file, the entry and the field.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { READ_AT_MISS_RATE, TARGET_TBT_GRID_S, metronFig5d, tbtAtMissRate, type EndpointProbe } from '../../harness/figures/metronFig5d.ts';
import { parseEndpointsFile, shownUrl } from '../../harness/figures/endpointsFile.ts';
import { figurePaper, parsePaperNumbers } from '../../harness/figures/paperNumbers.ts';
import { atDeadline } from '../../harness/report/probeDetail.ts';
import { computeRequestMetrics, type RequestMetrics } from '../../harness/metrics/request.ts';
import { UserError } from '../../harness/util/errors.ts';

const FILE = join(resolve(import.meta.dirname, '..', '..'), 'harness', 'figures', 'paperNumbers.json');
const paper = figurePaper(parsePaperNumbers(JSON.parse(readFileSync(FILE, 'utf8')), FILE), 'metron-fig5d', { trace: 'endpoints', onHosts: true }, { readAtMissRate: 0.1 });

// A request whose first token lands exactly on its first-token deadline (no slack banked), then
// `tokens` − 1 more, `gapsS[i % n]` apart: chunk times in microseconds, as timelines hold them.
function request(id: string, tokens: number, gapsS: readonly number[]): RequestMetrics {
  const chunks: [number, number][] = [];
  let us = 100_000;
  for (let i = 0; i < tokens; i++) {
    chunks.push([us / 1e6, 1]);
    us += Math.round(gapsS[i % gapsS.length] * 1e6);
  }
  const record = { id, scheduledS: 0, sentS: 0, promptTokens: 100, maxTokens: tokens, outputTokens: tokens, chunks, status: 'ok' as const, httpStatus: 200, error: null };
  return computeRequestMetrics(record, { dpS: 0.1, tbtDeadlineS: 0.025 });
}

test('a steady 20 ms stream crosses 10% at 20 ms; faster than the grid reads at its smallest deadline; slower than it has no reading', () => {
  const steady = Array.from({ length: 5 }, (_, i) => request(`s${i}`, 40, [0.02]));
  const r = tbtAtMissRate(steady, READ_AT_MISS_RATE);
  assert.is(r.where, 'within');
  assert.ok(Math.abs(r.tbtS! - 0.02) / 0.02 < 0.002, `read at ${r.tbtS}`);
  // Just below 20 ms every later token is late; just above none is (at 20 ms itself, the float gaps decide).
  assert.ok(atDeadline(steady, 0.0199, 50).missRate > 0.9);
  assert.is(atDeadline(steady, 0.0201, 50).missRate, 0);
  assert.equal(tbtAtMissRate([request('f', 40, [0.0005])], 0.1), { tbtS: TARGET_TBT_GRID_S[0], where: 'below-grid' });
  assert.equal(tbtAtMissRate([request('s', 5, [2])], 0.1), { tbtS: null, where: 'above-grid' });
});

test('a mixed stream is read where its miss rate first falls to 10%: at most 10% there, more just below', () => {
  // Mostly 8 ms gaps, and every fifth a 60 ms one (a prefill joining the batch): misses fall in steps.
  const mixed = Array.from({ length: 8 }, (_, i) => request(`m${i}`, 60, [0.008, 0.008, 0.008, 0.008, 0.06]));
  const r = tbtAtMissRate(mixed, 0.1);
  assert.is(r.where, 'within');
  const t = r.tbtS!;
  assert.ok(atDeadline(mixed, t, 50).missRate <= 0.1, `at ${t}: ${atDeadline(mixed, t, 50).missRate}`);
  assert.ok(atDeadline(mixed, t * 0.997, 50).missRate > 0.1, `just below ${t}: ${atDeadline(mixed, t * 0.997, 50).missRate}`);
});

test('the figure: a curve and a reading per endpoint, its value in claims.csv by the endpoint\u2019s name, the paper\u2019s public endpoints not comparable here', async () => {
  const endpoint = (key: string, gapS: number, clientErrorS: number | null): EndpointProbe => ({
    key, label: key.toUpperCase(), model: 'm', url: 'http://127.0.0.1:1', rateQps: 2, clientErrorS,
    metrics: Array.from({ length: 4 }, (_, i) => request(`${key}${i}`, 30, [gapS])),
  });
  const a = metronFig5d({ endpoints: [endpoint('fast', 0.01, null), endpoint('slow', 0.04, 0.005)], percentile: 99, minFluidity: 0.9, paper, setup: [] });
  const table = (name: string) => a.files.find((f) => f.file === name)!.text.trimEnd().split('\n').map((l) => l.split(','));
  const by = table('by-deadline.csv');
  assert.equal(by[0], ['endpoint', 'model', 'rateQps', 'targetTbtS', 'missRate', 'fluidityP99', 'aboveClientError']);
  assert.is(by.length - 1, 2 * TARGET_TBT_GRID_S.length);
  // Deadlines at or below the slow endpoint's client error (5 ms) are kept in the CSV, marked.
  assert.is(by.filter((r) => r[0] === 'slow' && r[6] === 'false').length, TARGET_TBT_GRID_S.filter((d) => d <= 0.005).length);
  const read = table('read-at-10pct.csv');
  const at = (k: string) => Number(read.find((r) => r[0] === k)![4]);
  assert.ok(Math.abs(at('fast') - 0.01) / 0.01 < 0.002 && Math.abs(at('slow') - 0.04) / 0.04 < 0.002, read.join(' | '));
  const claims = a.claims;
  assert.is(claims.find((c) => c.id === 'M-23' && c.kind === 'ordering')!.verdict, 'not comparable here');
  assert.match(claims.find((c) => c.id === 'M-23' && c.kind === 'ordering')!.reason, /^public endpoint: /);
  for (const id of ['M-17', 'M-18']) assert.is(claims.find((c) => c.id === id)!.verdict, 'not comparable here');
  const readme = a.files.find((f) => f.file === 'README.md')!.text;
  assert.match(readme, /not comparable here \(public endpoint\)/);
  assert.match(a.summary.join('\n'), /FAST @ 2 QPS: misses 10% of its deadlines at a target TBT of 10 ms/);
});

test('an endpoints file is refused naming the file, the entry and the field; a URL is shown without credentials', () => {
  const ok = { endpoints: [{ name: 'a', url: 'http://127.0.0.1:8000' }, { name: 'b', url: 'https://x.example/v1', model: 'm', apiKeyEnv: 'B_KEY' }] };
  assert.is(parseEndpointsFile(ok, 'e.yaml').endpoints.length, 2);
  const refused = (raw: unknown, re: RegExp) => assert.throws(() => parseEndpointsFile(raw, 'e.yaml'), (e: Error) => e instanceof UserError && re.test(e.message));
  refused({ endpoints: [] }, /e\.yaml: endpoints must list at least one endpoint/);
  refused({ endpoints: [{ name: 'a', url: 'ftp://x' }] }, /e\.yaml: endpoints\[0\]\.url must be an http\(s\) URL/);
  refused({ endpoints: [{ name: 'a b', url: 'http://x' }] }, /e\.yaml: endpoints\[0\]\.name must be 1-40 letters/);
  refused({ endpoints: [{ name: 'a', url: 'http://x', apiKeyEnv: 'sk-live-123' }] }, /endpoints\[0\]\.apiKeyEnv must be an environment variable name/);
  refused({ endpoints: [{ name: 'a', url: 'http://x', apiKey: 'sk-live-123' }] }, /e\.yaml: endpoints\[0\]/);
  refused({ endpoints: [{ name: 'a', url: 'http://x' }, { name: 'A', url: 'http://y' }] }, /e\.yaml: endpoints\[1\]\.name "A" is used twice/);
  assert.is(shownUrl('https://user:secret@api.example.com/openai?key=sk-1#x'), 'https://api.example.com/openai');
  assert.is(shownUrl('http://127.0.0.1:8000/'), 'http://127.0.0.1:8000');
});

test.run();
