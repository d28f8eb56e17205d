// `fluidcap run --rehearse`: the search runs on the simulated twin first and the real search's first
// probe goes to the twin's bracket instead of doubling up from search.qps.start, and starts with the
// knee warm-up.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, onlyRunDir, readJson, readJsonl } from './support.ts';
import { warmupRequestsOf } from '../../harness/capacity/runPlan.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-rehearse-'));

test.after(() => rmSync(work, { recursive: true, force: true }));

test('the first real probe is at the twin bracket, not at search.qps.start', async () => {
  const outDir = join(work, 'results');
  const r = await fluidcap(['run', FAST_RECIPE, '--rehearse', '--out', outDir], { timeoutMs: 150_000 });
  assert.is(r.code, 0, r.stderr.slice(-3000));
  const said = r.stderr.match(/rehearsal on the simulated twin: capacity [\d.]+ QPS, bracket pass ([\d.-]+) \/ fail ([\d.-]+) QPS/);
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
});

test.run();
