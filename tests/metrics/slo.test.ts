// The recipe's slo section: parsing to seconds with source text, overrides, and verdicts in which
// failed requests always count against the SLO.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { applySloOverrides, fluidityDeadlines, sloSchema, type Slo } from '../../harness/metrics/slo.ts';
import { sloKey } from '../../harness/runDir/configKey.ts';
import { evaluateSlo } from '../../harness/metrics/sloCheck.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';

const issues = (raw: unknown) => {
  const r = sloSchema.safeParse(raw);
  assert.is(r.success, false);
  return r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

test('parses the common-brief example to seconds with canonical source text', () => {
  const slo = sloSchema.parse({
    fluidity: { tbtDeadline: '25ms', ttftSlack: '0.3s', minFluidity: 0.9, percentile: 99 },
    ttft: { percentile: 90, max: '2s' },
    tbt: { percentile: 99, max: '200ms' },
    tpot: { percentile: 50, max: '50ms' },
    e2e: { percentile: 99, max: '60s' },
    schedulingDelay: { percentile: 99, max: '1s' },
  });
  assert.equal(slo.fluidity, {
    tbtDeadlineS: 0.025,
    ttftSlackS: 0.3,
    minFluidity: 0.9,
    percentile: 99,
    tieRule: 'met',
    source: 'fluidity p99 >= 0.9 (tbt deadline 25ms, ttft slack 0.3s)',
  });
  assert.equal(slo.ttft, { percentile: 90, maxS: 2, source: 'ttft p90 <= 2s' });
  assert.is(slo.tbt!.maxS, 0.2);
  assert.is(slo.tpot!.source, 'tpot p50 <= 50ms');
  assert.is(slo.schedulingDelay!.source, 'schedulingDelay p99 <= 1s');
});

test('keeps the text the user wrote: shorthand strings and an explicit source', () => {
  const slo = sloSchema.parse({ ttft: 'p90 <= 1.5s', fluidity: { source: 'Metron default' } });
  assert.equal(slo.ttft, { percentile: 90, maxS: 1.5, source: 'ttft p90 <= 1.5s' });
  assert.is(slo.fluidity!.source, 'Metron default');
  assert.is(slo.fluidity!.tbtDeadlineS, 0.025);
});

test('every problem is reported with its path and a "must be" message', () => {
  assert.equal(issues({}), [': must name at least one SLO (fluidity, ttft, tbt, tpot, e2e, schedulingDelay)']);
  const all = issues({
    fluidity: { tbtDeadline: 'soon', minFluidity: 2, percentile: 0 },
    ttft: { max: -1 },
    tbt: 'p99 < 1s',
  });
  assert.ok(all.includes('fluidity.tbtDeadline: must be a duration such as 25ms, 2s or 10m'), all.join('\n'));
  assert.ok(all.includes('fluidity.minFluidity: must be a number within 0..1'));
  assert.ok(all.includes('fluidity.percentile: must be a percentile: a number > 0 and <= 100'));
  assert.ok(all.includes('ttft.max: must be a duration such as 25ms, 2s or 10m >= 0'));
  assert.ok(all.some((m) => m.startsWith('tbt: must be { percentile, max }')));
  assert.ok(issues({ fluidity: { tbtDeadline: 0 } })[0].includes('> 0'));
  assert.ok(issues({ latency: {} })[0].includes('latency'));
});

test('CLI overrides create or adjust the fluidity SLO and say so in its source', () => {
  const base = sloSchema.parse({ ttft: 'p90 <= 2s' });
  const over = applySloOverrides(base, { tbtDeadlineS: 0.05, percentile: 90 });
  assert.is(over.fluidity!.tbtDeadlineS, 0.05);
  assert.is(over.fluidity!.percentile, 90);
  assert.is(over.fluidity!.ttftSlackS, 0.3);
  assert.match(over.fluidity!.source, /\[--tbt-deadline 50ms --percentile 90\]$/);
  assert.is(base.fluidity, undefined, 'input untouched');
  assert.equal(applySloOverrides(base, {}), base);
});

const req = (i: number, over: Partial<TimelineRecord> = {}): TimelineRecord => ({
  id: `r${i}`,
  scheduledS: i,
  sentS: i,
  promptTokens: 10,
  maxTokens: 3,
  outputTokens: 3,
  chunks: [
    [i + 0.25, 1],
    [i + 0.3125, 1],
    [i + 0.375, 1],
  ],
  status: 'ok',
  httpStatus: 200,
  error: null,
  ...over,
});

const slo: Slo = sloSchema.parse({
  fluidity: { tbtDeadline: '62.5ms', ttftSlack: 0, minFluidity: 0.9, percentile: 99 },
  ttft: 'p99 <= 0.5s',
  tbt: 'p99 <= 100ms',
  e2e: 'p99 <= 1s',
});
const metricsOf = (records: TimelineRecord[]) =>
  records.map((r) => computeRequestMetrics(r, { dpS: 0.5, tbtDeadlineS: 0.0625, prefillS: 0.25 }));

test('all requests good: every SLO passes, every request meets them', () => {
  const recs = Array.from({ length: 100 }, (_, i) => req(i));
  const ev = evaluateSlo(metricsOf(recs), slo);
  assert.is(ev.passed, true, JSON.stringify(ev.results));
  assert.is(ev.goodRequests, 100);
  assert.equal(
    ev.results.map((r) => [r.name, r.value]),
    [
      ['fluidity', 1],
      ['ttft', 0.25],
      ['tbt', 0.0625],
      ['e2e', 0.375],
    ],
  );
});

test('one failed request in 100 is tolerated at P99; two are not — and it fails every SLO', () => {
  const one = Array.from({ length: 100 }, (_, i) => (i === 7 ? req(i, { status: 'timeout', chunks: [] }) : req(i)));
  const ev1 = evaluateSlo(metricsOf(one), slo);
  assert.is(ev1.passed, true);
  assert.is(ev1.goodRequests, 99);
  assert.is(ev1.meets[7], false);
  const two = one.map((r, i) => (i === 8 ? req(i, { status: 'error', error: 'HTTP 500', httpStatus: 500 }) : r));
  const ev2 = evaluateSlo(metricsOf(two), slo);
  assert.is(ev2.passed, false);
  for (const r of ev2.results) assert.is(r.passed, false, r.name);
  assert.is(ev2.results.find((r) => r.name === 'fluidity')!.value, 0);
  assert.is(ev2.results.find((r) => r.name === 'ttft')!.value, Infinity);
  assert.is(ev2.results.find((r) => r.name === 'ttft')!.note, 'failed requests reach this percentile');
});

test('a slow request fails only the SLOs it breaks; linear method is reported', () => {
  const recs = Array.from({ length: 10 }, (_, i) => req(i));
  recs[3] = req(3, { chunks: [[3.75, 1], [3.8125, 1], [3.875, 1]] }); // TTFT 0.75 > 0.5
  const ev = evaluateSlo(metricsOf(recs), slo, { method: 'linear' });
  assert.is(ev.method, 'linear');
  const byName = Object.fromEntries(ev.results.map((r) => [r.name, r]));
  assert.is(byName.ttft.passed, false);
  assert.is(byName.tbt.passed, true);
  assert.is(byName.e2e.passed, true);
  assert.is(ev.meets[3], false);
  assert.is(ev.goodRequests, 9);
});

test('scheduling delay without a prefill prediction is reported as not measurable', () => {
  const s = sloSchema.parse({ schedulingDelay: 'p99 <= 1s' });
  const ms = [req(0)].map((r) => computeRequestMetrics(r, { dpS: 0.5, tbtDeadlineS: 0.025 }));
  const ev = evaluateSlo(ms, s);
  assert.is(ev.passed, false);
  assert.is(ev.results[0].value, null);
  assert.match(ev.results[0].note!, /prefill fit/);
  const withFit = evaluateSlo(metricsOf([req(0)]), s);
  assert.is(withFit.results[0].value, 0);
  assert.is(withFit.passed, true);
});

// Metron's Algorithm 1 counts a token exactly on its deadline as missed; its code (and fluidcap by
// default) as met. The recipe chooses; the choice is part of the SLO's text and of its key, but the
// default leaves both as they always were.
test('slo.fluidity.tieRule: met by default, missed when the recipe says so, anything else refused naming the field', () => {
  const met = sloSchema.parse({ fluidity: { tbtDeadline: '25ms' } });
  const missed = sloSchema.parse({ fluidity: { tbtDeadline: '25ms', tieRule: 'missed' } });
  assert.is(met.fluidity!.tieRule, 'met');
  assert.is(missed.fluidity!.tieRule, 'missed');
  assert.is(met.fluidity!.source, 'fluidity p99 >= 0.9 (tbt deadline 25ms, ttft slack 300ms)');
  assert.is(missed.fluidity!.source, 'fluidity p99 >= 0.9 (tbt deadline 25ms, ttft slack 300ms, a token on its deadline missed)');
  assert.is(fluidityDeadlines(missed).tieRule, 'missed');
  assert.is(fluidityDeadlines({ tbt: { percentile: 99, maxS: 0.1, source: 'x' } }).tieRule, 'met');
  assert.equal(issues({ fluidity: { tieRule: 'strict' } }), ['fluidity.tieRule: must be met (a token exactly on its deadline is on time, as Metron\u2019s code) or missed (as Algorithm 1 of the paper prints it)']);
  // The key of a run recorded before the rule existed (no tieRule) is the key of ties met.
  const { tieRule: _, ...old } = met.fluidity!;
  assert.is(sloKey({ fluidity: old }), sloKey(met));
  assert.is.not(sloKey(missed), sloKey(met));
  assert.match(sloKey(missed)!, /, ties missed\)$/);
  // An analyze flag overrides the run's rule and says so.
  const flagged = applySloOverrides(met, { tieRule: 'missed' });
  assert.is(flagged.fluidity!.tieRule, 'missed');
  assert.match(flagged.fluidity!.source, /a token on its deadline missed\) \[--tie-rule missed\]$/);
});

test.run();
