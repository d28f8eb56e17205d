// The whole `fluidcap run` as a user runs it (a real child process) on the simulated engine with a
// fast recipe: capacity.json with a bracket the search's outcome explains, report.md, every probe's
// archived timelines (one parseable line per sent request) and summary, manifest completed,
// `fluidcap analyze --json` agreeing with the probes' verdicts, and no simulated engine left behind.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, isAlive, onlyRunDir, readJson, readJsonl, type CapacityFile } from './support.ts';
import { shown } from '../support/hooks.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { planOf } from '../../harness/twin/rehearse.ts';
import { burstQps } from '../../harness/capacity/burstRate.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-run-'));
const outDir = join(work, 'results');
let runDir = '';
let capacity: CapacityFile;
let stderr = '';

test.before(shown(async () => {
  const r = await fluidcap(['run', FAST_RECIPE, '--out', outDir, '--json'], { timeoutMs: 150_000 });
  if (r.code !== 0) throw new Error(`fluidcap run exited ${r.code}:\n${r.stderr.slice(-3000)}`);
  runDir = onlyRunDir(outDir);
  capacity = JSON.parse(r.stdout) as CapacityFile;
  stderr = r.stderr;
}));

test('the console spells the SLO out once, then one short line per probe: verdict, latencies, and why it stopped early', () => {
  const source = 'fluidity: { tbtDeadline: 50ms, ttftSlack: 0.1s, minFluidity: 0.9, percentile: 99 }';
  assert.is(stderr.split(source).length - 1, 0, 'the recipe text is not repeated');
  assert.is(stderr.split('SLO fluidity = { tbtDeadline: 50ms, ttftSlack: 0.1s, minFluidity: 0.9, percentile: 99 }').length - 1, 1);
  const lines = stderr.split('\n').filter((l) => /^probe \d+: /.test(l));
  assert.is(lines.length, capacity.probes.length, stderr);
  for (const [i, p] of capacity.probes.entries()) {
    const line = lines[i];
    assert.ok(line.length <= 160, `${line.length} characters: ${line}`);
    assert.match(line, new RegExp(`^probe ${p.index}: ${p.qps} QPS ${p.valid ? (p.passed ? 'PASS' : 'FAIL') : 'INVALID'} · `));
    if (p.valid) assert.match(line, /p99 TTFT [\d.]+ m?s, TBT [\d.]+ m?s/);
    if (p.earlyStop) assert.match(line, / — stopped early: fluidity cannot pass( \(\d+ failing > \d+ allowed\)|, the queue grows \(\d+→\d+ waiting\))$/);
  }
});

test('capacity.json: positive capacity, the same object printed with --json', () => {
  const onDisk = readJson<CapacityFile>(join(runDir, 'capacity.json'));
  assert.equal(onDisk, capacity);
  assert.ok(capacity.capacityQps > 0, `capacityQps ${capacity.capacityQps}`);
  assert.ok(capacity.probes.length >= 2, `only ${capacity.probes.length} probes`);
  assert.ok(capacity.slo.fluidity, 'the resolved SLO is recorded');
  assert.is(capacity.slo.fluidity!.tbtDeadlineS, 0.05);
});

test('the bracket is what the outcome says: within tolerance when converged, maxProbes probes otherwise', () => {
  const { passQps, failQps } = capacity.bracket;
  const valid = capacity.probes.filter((p) => p.valid);
  if (passQps !== null) {
    assert.is(capacity.capacityQps, passQps);
    assert.ok(valid.some((p) => p.qps === passQps && p.passed), `no passing valid probe at ${passQps}`);
  }
  if (failQps !== null) assert.ok(valid.some((p) => p.qps === failQps && !p.passed), `no failing valid probe at ${failQps}`);
  // The fail end is the lowest rate a valid probe failed at; the pass end the highest passing rate
  // below it. A pass at or above the fail end is possible near the knee (a rate probed again draws
  // a new sample) and does not move the bracket.
  const fails = valid.filter((p) => !p.passed).map((p) => p.qps);
  assert.is(failQps, fails.length > 0 ? Math.min(...fails) : null, `fail end ${failQps}, failing probes at ${fails}`);
  const passesBelow = valid.filter((p) => p.passed && (failQps === null || p.qps < failQps)).map((p) => p.qps);
  assert.is(passQps, passesBelow.length > 0 ? Math.max(...passesBelow) : null, `pass end ${passQps}, passing probes below the fail end at ${passesBelow}`);
  switch (capacity.outcome) {
    case 'converged':
      assert.ok(passQps !== null && failQps !== null);
      assert.ok((failQps! - passQps!) / passQps! <= capacity.tolerance + 1e-9, `bracket ${passQps}-${failQps} wider than ${capacity.tolerance}`);
      break;
    case 'max-probes':
      assert.is(capacity.probes.length, readJson<{ plan: { search: { maxProbes: number } } }>(join(runDir, 'manifest.json')).plan.search.maxProbes);
      break;
    default:
      assert.unreachable(`unexpected outcome ${capacity.outcome}: ${capacity.reason}`);
  }
});

test('every probe states its statistical decision; the decided bracket rests on decided probes only', () => {
  type Stats = { decision: string; confidence: number; leaning: string; evidence: string };
  const c = capacity as CapacityFile & { decidedBracket: { passQps: number | null; failQps: number | null }; probes: { statistics?: Stats }[] };
  for (const p of c.probes as (CapacityFile['probes'][number] & { statistics?: Stats })[]) {
    assert.ok(p.statistics, `probe ${p.index} has no statistics`);
    assert.ok(['pass', 'fail', 'undecided'].includes(p.statistics!.decision), p.statistics!.decision);
    assert.ok(p.statistics!.confidence >= 0 && p.statistics!.confidence <= 1);
    assert.match(p.statistics!.evidence, / misses in \d+ requests/);
  }
  // The baseline SLOs are decided by the same test, in each probe's summary.
  for (const p of c.probes) {
    const summary = readJson<{ baselines: Record<string, { statistics?: Stats }> }>(join(runDir, p.dir, 'summary.json'));
    assert.ok(Object.keys(summary.baselines).length > 0, `probe ${p.index} has no baselines`);
    for (const [name, b] of Object.entries(summary.baselines)) assert.ok(b.statistics && ['pass', 'fail', 'undecided'].includes(b.statistics.decision), `probe ${p.index} baseline ${name}`);
  }
  const { passQps, failQps } = c.decidedBracket;
  const decidedAt = (qps: number, d: string) => (c.probes as { qps: number; valid: boolean; statistics?: Stats }[]).some((p) => p.qps === qps && p.valid && p.statistics?.decision === d);
  if (passQps !== null) assert.ok(decidedAt(passQps, 'pass'), `no decided pass at ${passQps}`);
  if (failQps !== null) assert.ok(decidedAt(failQps, 'fail'), `no decided fail at ${failQps}`);
  if (passQps !== null && failQps !== null) assert.ok(passQps < failQps);
});

test('capacity.json carries the estimate with its 95% interval, from the valid probes\' evidence', () => {
  type Interval = { estimateQps: number | null; loQps: number | null; hiQps: number | null; level: number; method: string; probesUsed: number; loadSeconds: number; open: string };
  const iv = (capacity as CapacityFile & { interval?: Interval }).interval;
  assert.ok(iv, 'no interval in capacity.json');
  assert.is(iv!.level, 0.95);
  assert.ok(['none', 'lo', 'hi', 'both'].includes(iv!.open), iv!.open);
  assert.is(iv!.loQps === null, iv!.open === 'lo' || iv!.open === 'both');
  assert.is(iv!.hiQps === null, iv!.open === 'hi' || iv!.open === 'both');
  if (iv!.loQps !== null && iv!.hiQps !== null) assert.ok(iv!.loQps <= iv!.hiQps, JSON.stringify(iv));
  const valid = capacity.probes.filter((p) => p.valid);
  assert.is(iv!.probesUsed, valid.length);
  assert.ok(Math.abs(iv!.loadSeconds - valid.reduce((t, p) => t + p.durationS, 0)) < 1e-6);
  assert.match(iv!.method, /monotone/);
  // Every probe's statistics carry the counts the interval pooled.
  for (const p of capacity.probes as { statistics?: { parts?: { observed: number; misses: number; tau: number }[] } }[]) {
    assert.ok(p.statistics?.parts?.length, 'a probe without counts');
    for (const e of p.statistics!.parts!) assert.ok(e.observed >= e.misses && e.tau >= 1, JSON.stringify(e));
  }
  assert.match(readFileSync(join(runDir, 'report.md'), 'utf8'), /Estimate: .*95% interval/);
});

test('each probe states the arrival rate its judged requests realized, where the interval reads it', () => {
  let checked = 0;
  for (const p of capacity.probes as { qps: number; dir: string; kneeWarmup?: unknown; statistics?: { arrivalQps?: number } }[]) {
    const realized = p.statistics?.arrivalQps;
    assert.ok(realized !== undefined && Math.abs(realized / p.qps - 1) < 0.3, `probe at ${p.qps} QPS realized ${realized}`);
    // Without a knee warm-up's cut, the judged requests are the timeline's lines not marked warm-up.
    if (p.kneeWarmup) continue;
    const judged = readJsonl(join(runDir, p.dir, 'timelines.jsonl')).filter((r) => r.warmup !== true).map((r) => r.scheduledS as number);
    const span = Math.max(...judged) - Math.min(...judged);
    assert.ok(Math.abs(realized! - (judged.length - 1) / span) <= 1e-5 * realized!, `probe at ${p.qps} QPS: ${realized} against ${(judged.length - 1) / span} from its timelines`);
    checked++;
  }
  assert.ok(checked > 0, 'no probe without a knee warm-up to recompute');
});

test('each probe states the rate its judged requests\' bursts put it at, recomputed from its timelines against the planner\'s draws', async () => {
  const plan = planOf(await loadRecipe(FAST_RECIPE));
  let checked = 0;
  for (const p of capacity.probes as { qps: number; dir: string; kneeWarmup?: unknown; statistics?: { burstQps?: number } }[]) {
    const bursts = p.statistics?.burstQps;
    assert.ok(bursts !== undefined && Math.abs(bursts / p.qps - 1) < 0.5, `probe at ${p.qps} QPS: bursts at ${bursts}`);
    if (p.kneeWarmup) continue;
    const judged = readJsonl(join(runDir, p.dir, 'timelines.jsonl')).filter((r) => r.warmup !== true) as { scheduledS: number; promptTokens: number; maxTokens: number }[];
    const expected = burstQps(judged, p.qps, plan.workload, undefined, plan.maxContextTokens)!;
    assert.ok(Math.abs(bursts! - expected) <= 1e-5 * expected, `probe at ${p.qps} QPS: ${bursts} against ${expected} from its timelines`);
    checked++;
  }
  assert.ok(checked > 0, 'no probe without a knee warm-up to recompute');
});

test('report.md quotes the capacity, the bracket and the SLO as written', () => {
  const md = readFileSync(join(runDir, 'report.md'), 'utf8');
  assert.ok(md.includes(String(capacity.capacityQps)), 'capacity missing from report.md');
  assert.ok(md.includes('tbtDeadline: 50ms'), 'the SLO text as written is missing from report.md');
  for (const p of capacity.probes) assert.ok(md.includes(`| ${p.index} |`), `probe ${p.index} missing from the report's table`);
});

test('every probe directory: one parseable timeline line per sent request, and summary.json', () => {
  const dirs = readdirSync(join(runDir, 'probes'));
  assert.equal(dirs.sort(), capacity.probes.map((p) => p.dir.replace('probes/', '')).sort());
  for (const dir of dirs) {
    const path = join(runDir, 'probes', dir);
    const summary = readJson<{ sent: number; planned: number; requests: number; warmupRequests: number; qps: number }>(join(path, 'summary.json'));
    const lines = readJsonl(join(path, 'timelines.jsonl'));
    assert.ok(summary.sent > 0 && summary.sent <= summary.planned, `${dir}: sent ${summary.sent} of ${summary.planned}`);
    assert.is(lines.length, summary.sent, `${dir}: ${lines.length} timeline lines for ${summary.sent} sent requests`);
    const ids = new Set<string>();
    for (const l of lines) {
      assert.type(l.id, 'string');
      ids.add(l.id as string);
      assert.type(l.scheduledS, 'number');
      assert.ok(Array.isArray(l.chunks), `${dir}/${l.id}: chunks`);
      assert.ok(['ok', 'error', 'timeout', 'cancelled'].includes(l.status as string), `${dir}/${l.id}: status ${l.status}`);
      if (l.status === 'ok') assert.is((l.chunks as [number, number][]).reduce((n, c) => n + c[1], 0), l.outputTokens);
    }
    assert.is(ids.size, lines.length, `${dir}: duplicate request ids`);
    assert.ok(existsSync(join(path, 'plan.json')), `${dir}: plan.json`);
  }
});

test('after the first fail, probes warm up until the queue is stationary: on the simulated engine below its knee, before the recipe\'s bound', () => {
  type Knee = { reason: string; endS: number; maxS: number; requests: number; planned: number; warmupRequests: number };
  const probes = [...capacity.probes].sort((a, b) => a.index - b.index);
  const firstFail = probes.findIndex((p) => p.valid && !p.passed);
  assert.ok(firstFail >= 0 && firstFail < probes.length - 1, 'the search had probes after its first fail');
  const events = readJsonl(join(runDir, 'events.jsonl')).filter((e) => e.type === 'probe-finished');
  const maxS = readJson<{ plan: { probe: { kneeWarmupMaxS: number } } }>(join(runDir, 'manifest.json')).plan.probe.kneeWarmupMaxS;
  assert.is(maxS, 4, 'fast.yaml\'s search.kneeWarmupMax');
  const stationary: { qps: number; knee: Knee }[] = [];
  probes.forEach((p, i) => {
    const summary = readJson<{ planned: number; warmupRequests: number; kneeWarmup: Knee | null }>(join(runDir, p.dir, 'summary.json'));
    const journalled = events.find((e) => e.index === p.index)?.kneeWarmup;
    if (i <= firstFail) {
      assert.is(summary.kneeWarmup, null, `probe ${p.index} before the first fail warmed up`);
      assert.is(journalled, undefined);
      return;
    }
    const k = summary.kneeWarmup!;
    assert.ok(k, `probe ${p.index} at ${p.qps} QPS has no knee warm-up`);
    assert.equal(journalled, k, 'the journal records the warm-up as the summary does');
    assert.is(k.maxS, maxS);
    assert.is(summary.planned, k.planned);
    assert.is(summary.warmupRequests, k.warmupRequests);
    if (k.reason === 'stationary') {
      // The bound holds the arrivals due in its first maxS seconds and ends when the next one is
      // due: a request ending between the two (late on a loaded machine) can still find the queue
      // stationary, so endS may pass maxS but not that next arrival, and the warm-up then holds
      // every arrival of the bound.
      const boundRequests = Math.ceil(p.qps * k.maxS);
      const plan = readJson<{ requests: { scheduledS: number }[] }>(join(runDir, p.dir, 'plan.json'));
      assert.ok(k.requests <= boundRequests && k.endS < plan.requests[boundRequests].scheduledS, JSON.stringify(k));
      if (k.requests === boundRequests) assert.ok(k.endS >= plan.requests[boundRequests - 1].scheduledS, JSON.stringify(k));
      stationary.push({ qps: p.qps, knee: k });
    }
    // The console's probe line says how long it lasted and why it ended.
    assert.ok(stderr.includes(`probe ${p.index}: ${p.qps} QPS`) && new RegExp(`probe ${p.index}: [^\\n]*\\(${k.endS.toFixed(1)} s warm-up${k.reason === 'stationary' ? '' : `, its ${maxS} s bound`}\\)`).test(stderr), stderr.slice(-2000));
  });
  assert.ok(stationary.length > 0, 'no probe after the first fail ended its warm-up as stationary');
});

test('manifest: completed, seed and host facts recorded; the profile fit is archived', () => {
  const m = readJson<Record<string, any>>(join(runDir, 'manifest.json'));
  assert.is(m.status, 'completed');
  assert.is(m.seed, 11);
  assert.type(m.host?.pid, 'number');
  assert.ok(m.endedAt && m.startedAt);
  const fit = readJson<{ a: number; b: number; c: number; r2: number; n: number }>(join(runDir, 'profile', 'fit.json'));
  assert.is(fit.n, 9);
  assert.ok(fit.c >= 0 && Number.isFinite(fit.a) && Number.isFinite(fit.b));
  assert.is(readJsonl(join(runDir, 'profile', 'prefill.jsonl')).length, 11);
  const events = readJsonl(join(runDir, 'events.jsonl')).map((e) => e.type);
  assert.equal(events.slice(0, 3), ['run-started', 'engine-ready', 'profile-finished']);
  assert.equal(events.slice(-3), ['search-finished', 'engine-stopped', 'run-finished']);
});

test('fluidcap analyze <runDir> --json recomputes every probe and agrees with its verdict', async () => {
  const r = await fluidcap(['analyze', runDir, '--json'], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    requests: { id: string; fluidity: number }[];
    summary: { warmupExcluded: number; probes: { probe: string; requests: number; slo: { passed: boolean } }[] };
  };
  let lines = 0;
  for (const p of capacity.probes) lines += readJsonl(join(runDir, p.dir, 'timelines.jsonl')).length;
  assert.is(out.requests.length + out.summary.warmupExcluded, lines);
  for (const p of capacity.probes) {
    const name = p.dir.replace('probes/', '');
    const a = out.summary.probes.find((x) => x.probe === name);
    assert.ok(a, `analyze has no probe ${name}`);
    assert.is(a!.requests, p.requests, `${name}: evaluated requests`);
    const summary = readJson<{ slo: { passed: boolean } }>(join(runDir, p.dir, 'summary.json'));
    assert.is(a!.slo.passed, summary.slo.passed, `${name}: analyze and the run disagree on the SLO verdict`);
  }
});

test('no simulated engine is left running (pid from manifest.host.pid)', () => {
  const pid = readJson<{ host: { pid: number } }>(join(runDir, 'manifest.json')).host.pid;
  assert.not.ok(isAlive(pid), `simulated engine pid ${pid} is still alive`);
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
