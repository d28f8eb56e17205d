// `fluidcap run --rehearse`: the search runs on the simulated twin first and the real search's first
// probe goes to the twin's bracket instead of doubling up from search.qps.start, and starts with the
// knee warm-up. capacity.json and the report record what the rehearsal proposed (its probes, its
// interval) and how far the real search moved from it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, onlyRunDir, readJson, readJsonl } from './support.ts';
import { warmupRequestsOf } from '../../harness/capacity/runPlan.ts';
import type { CapacityJson } from '../../harness/runDir/schema.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-rehearse-'));

test.after(() => rmSync(work, { recursive: true, force: true }));

test('the first real probe is at the twin bracket, not at search.qps.start', async () => {
  const outDir = join(work, 'results');
  const r = await fluidcap(['run', FAST_RECIPE, '--rehearse', '--out', outDir], { timeoutMs: 150_000 });
  assert.is(r.code, 0, r.stderr.slice(-3000));
  const said = r.stderr.match(/rehearsal on the simulated twin: capacity [^;]*95% interval [^;]*; bracket pass ([\d.-]+) \/ fail ([\d.-]+) QPS, probes at ([^(]+) \((\w[\w-]*)\)/);
  assert.ok(said, r.stderr.slice(0, 2000));
  const twinPass = Number(said![1]);
  assert.is.not(twinPass, 12, 'fast.yaml starts at 12 QPS: a twin bracket there could not tell a warm start from a cold one');
  const events = readJsonl(join(onlyRunDir(outDir), 'events.jsonl'));
  const first = events.find((e) => e.type === 'probe-started');
  assert.ok(first, 'no probe started');
  assert.is(first!.qps, twinPass, 'the first probe is at the twin bracket\'s passing rate');
  // Near the knee from its first probe: it starts with the knee warm-up at its rate.
  const summary = readJson<{ planned: number; warmupRequests: number; qps: number; kneeWarmup: { requests: number; planned: number; warmupRequests: number; maxS: number } | null }>(join(onlyRunDir(outDir), first!.dir as string, 'summary.json'));
  const knee = summary.kneeWarmup;
  assert.ok(knee, 'the first probe has no knee warm-up');
  assert.is(knee!.maxS, 4, 'fast.yaml\'s search.kneeWarmupMax');
  assert.ok(knee!.requests > 0 && knee!.requests <= Math.ceil(summary.qps * knee!.maxS));
  assert.is(summary.planned, knee!.planned);
  assert.is(summary.warmupRequests, warmupRequestsOf(summary.planned, knee!.requests, 0.1));

  // What the rehearsal proposed is recorded, as the console said it, with how far the run moved from it.
  const runDir = onlyRunDir(outDir);
  const capacity = readJson<CapacityJson>(join(runDir, 'capacity.json'));
  const proposed = capacity.rehearsals?.[0];
  assert.ok(proposed, 'capacity.json records no rehearsal');
  assert.is(proposed!.twin, 'roofline');
  assert.is(proposed!.bracket.passQps, twinPass);
  assert.is(proposed!.outcome, said![4]);
  assert.equal(proposed!.probes.map((p) => `${p.qps}${p.passed ? '✓' : '✗'}`).join(' '), said![3].trim());
  assert.ok(proposed!.interval !== null && proposed!.interval.estimateQps !== null, JSON.stringify(proposed));
  assert.ok(proposed!.loadSeconds > 0);
  const moved = proposed!.movedBy!;
  assert.ok(capacity.interval?.estimateQps != null);
  assert.ok(Math.abs(moved.estimate! - (capacity.interval!.estimateQps! - proposed!.interval!.estimateQps!) / proposed!.interval!.estimateQps!) < 1e-3, JSON.stringify(moved));
  const report = readFileSync(join(runDir, 'report.md'), 'utf8');
  assert.match(report, /\*\*Rehearsal \(the simulated twin, uncalibrated\)\*\*: probes at /);
  assert.match(report, /The real search moved: the run's estimate is [+−]?[\d.]+% from it/);
});

test.run();
