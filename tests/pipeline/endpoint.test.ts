// `engine: endpoint`: a run against a server fluidcap did not start (the simulated engine served
// from this test process) finishes with a capacity. Its GPUs are unknown, so capacity.json has no
// costUsd and no GPU-seconds, and both capacity.json and report.md say why; `--resume` of the
// finished run completes the same way.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import { fluidcap, onlyRunDir, readJson } from './support.ts';
import { shown } from '../support/hooks.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-endpoint-'));
const outDir = join(work, 'results');
let sim: SimServerHandle;
let recipeFile = '';

interface CapacityOnDisk {
  capacityQps: number;
  probes: unknown[];
  costUsd?: number;
  costNote?: string;
  gpuSeconds: number | null;
  gpuCount: number;
  cost: { usdPerHour: number | null; outputTokensPerS: number } | null;
}

test.before(shown(async () => {
  sim = await startSimServer({ model: 'llama-3-8b', maxNumSeqs: 8, port: 0 });
  await sim.ready;
  recipeFile = join(work, 'endpoint.yaml');
  writeFileSync(
    recipeFile,
    [
      'name: endpoint-sim',
      'target:',
      '  engine: endpoint',
      '  model: llama-3-8b',
      '  gpuProfile: h100-sxm-80gb   # priced, yet the endpoint\'s GPU count is unknown',
      `  endpoint: { url: "${sim.url}" }`,
      'workload:',
      '  api: completions',
      '  lengths:',
      '    prompt: { dist: uniform, min: 128, max: 256 }',
      '    output: { dist: uniform, min: 8, max: 16 }',
      '  arrivals: { process: poisson }',
      '  seed: 5',
      'profile:',
      '  promptLengths: [128, 512, 1024]',
      '  repeats: 2',
      '  minR2: 0',
      '  maxRepeatCv: 100',
      'search:',
      '  qps: { start: 4, min: 1, max: 16 }',
      '  tolerance: 0.5',
      '  maxProbes: 3',
      '  probe: { requests: 16, minDuration: 1s, duration: 10s, warmup: 10%, clientTolerance: 250ms }',
      'slo:',
      '  fluidity: { tbtDeadline: 50ms, ttftSlack: 0.2s, minFluidity: 0.9, percentile: 99 }',
      '',
    ].join('\n'),
  );
}));

test.after(async () => {
  await sim?.close();
  rmSync(work, { recursive: true, force: true });
});

test('endpoint run: capacity found, no costUsd, the note in capacity.json and report.md; --resume completes', async () => {
  const r = await fluidcap(['run', recipeFile, '--out', outDir, '--json'], { timeoutMs: 150_000 });
  assert.is(r.code, 0, r.stderr.slice(-3000));
  assert.not.match(r.stderr, /internal error/);
  const runDir = onlyRunDir(outDir);
  const cap = readJson<CapacityOnDisk>(join(runDir, 'capacity.json'));
  assert.ok(cap.probes.length >= 1, 'no probe recorded');
  assert.is(cap.costUsd, undefined);
  assert.is(cap.gpuSeconds, null);
  assert.is(cap.gpuCount, 0);
  assert.match(cap.costNote ?? '', /GPUs behind the endpoint http:\/\/127\.0\.0\.1:\d+ are unknown/);
  if (cap.cost) assert.is(cap.cost.usdPerHour, null);
  const md = readFileSync(join(runDir, 'report.md'), 'utf8');
  assert.ok(md.includes(`No cost: ${cap.costNote}.`), md.slice(md.indexOf('## Cost')));

  const resumed = await fluidcap(['run', '--resume', runDir, '--json'], { timeoutMs: 150_000 });
  assert.is(resumed.code, 0, resumed.stderr.slice(-3000));
  const again = JSON.parse(resumed.stdout) as CapacityOnDisk;
  assert.is(again.capacityQps, cap.capacityQps);
  assert.is(again.costUsd, undefined);
  assert.ok(existsSync(join(runDir, 'report.html')));
});

test.run();
