// `fluidcap probe` resolves the recipe exactly as `run` does: the same context length, probe
// settings, client tolerance and run-id format (its --dry-run prints what would run; nothing is sent).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FAST_RECIPE, fluidcap } from './support.ts';

interface RunPlanShown {
  runId: string;
  maxContextTokens: number;
  probe: { requests: number; minDurationS: number; durationLimitS: number; clientToleranceS: number | null; warmupFraction: number };
  slo: unknown;
}
interface ProbeShown {
  runDir: string;
  maxContextTokens: number;
  clientToleranceS: number | null;
  warmupFraction: number;
  slo: unknown;
  plan: { requests: unknown[]; durationLimitS: number };
}

test('probe --dry-run uses the run plan: context, probe size, tolerance, SLO and run-id format', async () => {
  const [run, probe] = await Promise.all([
    fluidcap(['run', FAST_RECIPE, '--dry-run', '--json'], { timeoutMs: 60_000 }),
    fluidcap(['probe', FAST_RECIPE, '--qps', '30', '--url', 'http://127.0.0.1:9', '--dry-run', '--json'], { timeoutMs: 60_000 }),
  ]);
  assert.is(run.code, 0, run.stderr);
  assert.is(probe.code, 0, probe.stderr);
  const plan = JSON.parse(run.stdout) as RunPlanShown;
  const shown = JSON.parse(probe.stdout) as ProbeShown;
  assert.is(shown.maxContextTokens, plan.maxContextTokens);
  assert.is(shown.clientToleranceS, plan.probe.clientToleranceS);
  assert.is(shown.warmupFraction, plan.probe.warmupFraction);
  assert.equal(shown.slo, plan.slo);
  // As a run plans a probe at 30 QPS: max(64 requests, 30 QPS × 3 s) = 90.
  assert.is(shown.plan.requests.length, Math.max(plan.probe.requests, Math.ceil(30 * plan.probe.minDurationS)));
  assert.is(shown.plan.requests.length, 90);
  assert.is(shown.plan.durationLimitS, plan.probe.durationLimitS);
  assert.match(shown.runDir, /^results\/fast-\d{8}-\d{6}(-\d+)?$/);
  assert.match(plan.runId, /^fast-\d{8}-\d{6}(-\d+)?$/);
});

test.run();
