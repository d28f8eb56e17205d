// `engine: endpoint` against a strict OpenAI-compatible server (the simulated engine under
// --strict-openai: Sarathi-Serve's request validation, no /health, no /tokenize), over real HTTP.
// The run finds the server's dialect before profiling, drops what it refused (min_tokens, the
// per-chunk usage fields), switches the token-id prompts it refused to text, finishes with a
// capacity, and says so in manifest.json, on the console and in report.md.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import type { Manifest } from '../../harness/runDir/schema.ts';
import { fluidcap, onlyRunDir, readJson } from './support.ts';
import { shown } from '../support/hooks.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-strict-'));
const outDir = join(work, 'results');
let sim: SimServerHandle;
let recipeFile = '';

test.before(shown(async () => {
  sim = await startSimServer({ model: 'llama-3-8b', maxNumSeqs: 8, port: 0, strictOpenai: true });
  await sim.ready;
  recipeFile = join(work, 'strict.yaml');
  writeFileSync(
    recipeFile,
    [
      'name: strict-endpoint',
      'target:',
      '  engine: endpoint',
      '  model: llama-3-8b   # a catalog model: its vocabulary is known, so token-id prompts are planned',
      `  endpoint: { url: "${sim.url}" }`,
      'workload:',
      '  api: completions',
      '  lengths:',
      '    prompt: { dist: uniform, min: 64, max: 128 }',
      '    output: { dist: uniform, min: 8, max: 16 }',
      '  arrivals: { process: poisson }',
      '  seed: 5',
      'profile:',
      '  promptLengths: [64, 256, 512]',
      '  repeats: 2',
      '  minR2: 0',
      '  maxRepeatCv: 100',
      'search:',
      '  qps: { start: 4, min: 1, max: 16 }',
      '  tolerance: 0.5',
      '  maxProbes: 2',
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

test('strict endpoint: refused fields dropped, text prompts, dialect in manifest, console and report', async () => {
  const health = await fetch(`${sim.url}/health`);
  assert.is(health.status, 404, 'the strict server has no /health, as Sarathi-Serve');
  const r = await fluidcap(['run', recipeFile, '--out', outDir, '--json'], { timeoutMs: 150_000 });
  assert.is(r.code, 0, r.stderr.slice(-3000));
  const runDir = onlyRunDir(outDir);
  const manifest = readJson<Manifest>(join(runDir, 'manifest.json'));
  const prompts = manifest.prompts!;
  assert.ok('dialect' in prompts && prompts.dialect, 'manifest.prompts.dialect is recorded');
  const found = prompts.dialect!;
  assert.equal([...found.dialect.omitFields].sort(), ['min_tokens', 'stream_options.continuous_usage_stats', 'timings_per_token']);
  assert.is(found.dialect.promptFormat, 'text');
  assert.is(found.requestedFormat, 'token-ids');
  assert.is(found.attempts, 3, 'one refusal of the extra fields, one of token ids, then accepted');
  assert.is(prompts.format, 'text');
  assert.match(r.stderr, /server dialect: it refused fields fluidcap adds, so requests go without min_tokens, timings_per_token, stream_options\.continuous_usage_stats; prompts are text/);
  assert.match(r.stderr, /output length pinned by ignore_eos alone/);
  const md = readFileSync(join(runDir, 'report.md'), 'utf8');
  assert.ok(md.includes('server dialect: it refused fields fluidcap adds'), 'report.md states the dialect');
  const cap = readJson<{ capacityQps: number; probes: unknown[] }>(join(runDir, 'capacity.json'));
  assert.ok(cap.probes.length >= 1, 'no probe recorded');
});

test.run();
