// `fluidcap probe` resolves the recipe exactly as `run` does: the same context length, probe
// settings, client tolerance and run-id format (its --dry-run prints what would run; nothing is sent).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { BIN, FAST_RECIPE, ROOT, childEnv, fluidcap } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-probe-'));

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

test('probe --dry-run needs no --url and prints YAML, as run --dry-run does', async () => {
  const r = await fluidcap(['probe', FAST_RECIPE, '--qps', '30', '--dry-run'], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  assert.not.match(r.stdout.trimStart(), /^\{/, 'not JSON');
  const shown = parse(r.stdout) as { baseUrl: string | null; plan: { requests: string } };
  assert.is(shown.baseUrl, null);
  assert.is(shown.plan.requests, '90 requests');
});

test('a standalone probe against the simulated engine prints the SLO once and its verdict with latencies', async () => {
  const sim = spawn(process.execPath, [BIN, 'sim', 'serve', '--host', '127.0.0.1', '--port', '0', '--model', 'llama-3-8b', '--max-num-seqs', '8', '--max-model-len', '4096'], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await new Promise<string>((done, fail) => {
      let text = '';
      sim.stdout.on('data', (c: Buffer) => {
        text += c.toString();
        const m = /listening on (http:\/\/\S+)/.exec(text);
        if (m) done(m[1].replace(/\/$/, ''));
      });
      sim.on('exit', (code) => fail(new Error(`sim exited ${code}: ${text}`)));
    });
    const r = await fluidcap(['probe', FAST_RECIPE, '--qps', '4', '--requests', '24', '--url', url, '--out', join(work, 'p')], { timeoutMs: 120_000 });
    assert.ok(r.code === 0 || r.code === 3, r.stderr);
    const lines = r.stdout.split('\n');
    assert.is(lines[0], 'SLO fluidity = { tbtDeadline: 50ms, ttftSlack: 0.1s, minFluidity: 0.9, percentile: 99 }');
    if (r.code === 0) assert.match(lines[1], /^probe 0: 4 QPS (PASS|FAIL) · p99 TTFT [\d.]+ m?s, TBT [\d.]+ m?s, fluidity p99 [\d.]+ · \d+ req, [\d.]+ s$/);
    // A client error beyond tolerance on a loaded machine is exit 3, and the line says so and why.
    else assert.match(lines[1], /^probe 0: 4 QPS INVALID · \d+ req, [\d.]+ s — client error .* tolerance; fix: /);
  } finally {
    sim.kill('SIGTERM');
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
