// `fluidcap analyze` states each probe's statistical decision beside its nearest-rank verdict,
// under the SLO it judges with (the run's, or the flags'), on the archived example run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { analyzeTarget, type AnalyzeOptions } from '../../harness/analyze/analyzeRun.ts';

const EXAMPLE = join(resolve(import.meta.dirname, '..', '..'), 'results', 'examples', 'sim-quickstart');

async function analyze(over: Partial<AnalyzeOptions> = {}) {
  let text = '';
  const outcome = await analyzeTarget(
    { target: EXAMPLE, json: false, method: 'nearest-rank', overrides: {}, ...over },
    { write: async (t) => void (text += t), warn: () => {} },
  );
  return { outcome, text };
}

test('every probe carries a decision; 100 requests cannot pass a P99 but a 16% miss rate fails', async () => {
  const { outcome, text } = await analyze();
  const byQps = new Map(outcome.probes.map((p) => [p.qps, p.statistics]));
  assert.is(outcome.probes.length, 3);
  // 2 QPS: nothing missed, yet 100 requests cannot show a miss fraction below the zone's 1.5%.
  assert.is(byQps.get(2)?.decision, 'undecided');
  assert.is(byQps.get(2)?.leaning, 'pass');
  // 6 QPS: over half the requests below the fluidity minimum.
  assert.is(byQps.get(6)?.decision, 'fail');
  assert.ok(byQps.get(6)!.confidence >= 0.95);
  // The decision is a column of the probe's row: `fail 97%` beside its nearest-rank FAIL.
  assert.match(text, /^03-qps-6 .* FAIL .* fail \d+%$/m);
  assert.match(text, /^01-qps-2 .* pass .* undecided \(pass \d+%\)$/m);
});

test('each probe states the arrival rate its measured requests realized, from their planned times', async () => {
  const { outcome } = await analyze();
  for (const dir of readdirSync(join(EXAMPLE, 'probes'))) {
    const judged = readFileSync(join(EXAMPLE, 'probes', dir, 'timelines.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { scheduledS: number; warmup?: boolean }).filter((r) => r.warmup !== true);
    const times = judged.map((r) => r.scheduledS);
    const expected = (times.length - 1) / (Math.max(...times) - Math.min(...times));
    const got = outcome.probes.find((p) => p.probe === dir)?.statistics?.arrivalQps;
    assert.ok(got !== undefined && Math.abs(got / expected - 1) < 1e-5, `${dir}: ${got} against ${expected}`);
  }
});

test('the rate a probe\'s bursts put it at comes from its summary.json (a property of its plan, not of the SLO), and the interval reads it', async () => {
  const copy = join(mkdtempSync(join(tmpdir(), 'fluidcap-bursts-')), 'run');
  cpSync(EXAMPLE, copy, { recursive: true });
  const before = await analyze({ target: copy, capacity: true });
  assert.is(before.outcome.probes.find((p) => p.probe === '02-qps-4')?.statistics?.burstQps, undefined);
  const file = join(copy, 'probes', '02-qps-4', 'summary.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), statistics: { burstQps: 4.8 } }));
  const after = await analyze({ target: copy, capacity: true });
  assert.is(after.outcome.probes.find((p) => p.probe === '02-qps-4')?.statistics?.burstQps, 4.8);
  // Its arrival rate is still the timelines' own.
  assert.is(after.outcome.probes.find((p) => p.probe === '02-qps-4')?.statistics?.arrivalQps, before.outcome.probes.find((p) => p.probe === '02-qps-4')?.statistics?.arrivalQps);
  rmSync(dirname(copy), { recursive: true, force: true });
});

test('a looser SLO from the flags is what the decision judges', async () => {
  // With 80% of requests allowed to miss, the 4 QPS probe's misses are far inside the allowance.
  const { outcome } = await analyze({ overrides: { percentile: 20 } });
  const at4 = outcome.probes.find((p) => p.qps === 4)!.statistics!;
  assert.is(at4.decision, 'pass', at4.evidence);
});

test.run();
