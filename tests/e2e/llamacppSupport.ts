// Shared by the llama.cpp end-to-end tests: where llama-server, its image and the model are
// (FLUIDCAP_LLAMA_* from .tmp/e2e/env, written by scripts/ci/setup-e2e.sh), a recipe sized for the
// tiny model, the CLI as a child process, and the checks every finished run must pass.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { e2eEnvFile } from './e2eEnv.ts';
import { BIN, ROOT, childEnv, fluidcap, readJson, readJsonl, untilProbeStarted, type CapacityFile } from '../pipeline/support.ts';

export { ROOT, BIN, childEnv, fluidcap, readJson, readJsonl, untilProbeStarted, type CapacityFile };

const SHARED_ENGINES = resolve(ROOT, '..', 'shared', 'engines');

export interface LlamaEnv {
  server: string;
  model: string;
  image: string;
}

/**
 * llama-server, its model and image, or null: a SKIP line when ../shared/engines is absent and no
 * server was named (a fresh clone has no engine to build), a failing test under FLUIDCAP_E2E=require
 * when it is there but setup-e2e.sh did not build the server.
 */
export function llamaEnv(what: string): LlamaEnv | null {
  const e = { ...e2eEnvFile(), ...process.env };
  if (!existsSync(join(SHARED_ENGINES, 'stories260K.gguf')) && !e.FLUIDCAP_LLAMA_SERVER) {
    console.log(`SKIP ${what}: no ../shared/engines beside the repository (llama.cpp's source and model live there) and no FLUIDCAP_LLAMA_SERVER`);
    return null;
  }
  const problems: string[] = [];
  if (!e.FLUIDCAP_LLAMA_SERVER || !existsSync(e.FLUIDCAP_LLAMA_SERVER)) problems.push(`FLUIDCAP_LLAMA_SERVER (${e.FLUIDCAP_LLAMA_SERVER ?? 'unset'}) is not a llama-server binary`);
  if (!e.FLUIDCAP_LLAMA_MODEL || !existsSync(e.FLUIDCAP_LLAMA_MODEL)) problems.push(`FLUIDCAP_LLAMA_MODEL (${e.FLUIDCAP_LLAMA_MODEL ?? 'unset'}) is not a model file`);
  if (problems.length > 0) {
    if (process.env.FLUIDCAP_E2E === 'require') {
      test(`${what}: llama-server built (FLUIDCAP_E2E=require)`, () => {
        assert.unreachable(`${problems.join('; ')}: run scripts/ci/setup-e2e.sh (it builds llama-server and writes .tmp/e2e/env)`);
      });
    } else {
      console.log(`SKIP ${what}: ${problems.join('; ')} (run scripts/ci/setup-e2e.sh)`);
    }
    return null;
  }
  return { server: e.FLUIDCAP_LLAMA_SERVER!, model: e.FLUIDCAP_LLAMA_MODEL!, image: e.FLUIDCAP_LLAMA_IMAGE ?? 'fluidcap/llama-server:dev' };
}

/**
 * The workload, profile, search and SLO both paths share: text prompts (this model's vocabulary has
 * 512 tokens, below the default token-id range), short probes, and a search that needs at least
 * four probes (doubling from 2 QPS up to a fail, then bisecting to within 25 %).
 */
export const SHARED_RECIPE_TAIL = `workload:
  api: completions
  prompts: { format: text }
  lengths:
    prompt: { dist: uniform, min: 32, max: 192 }
    output: { dist: uniform, min: 16, max: 48 }
  arrivals: { process: poisson }
  seed: 3
profile:
  promptLengths: [32, 96, 192, 384]
  repeats: 2
  minR2: 0
  maxRepeatCv: 100
search:
  qps: { start: 2, min: 0.5, max: 256 }
  tolerance: 0.25
  maxProbes: 9
  kneeWarmupMax: 2s
  probe: { requests: 24, minDuration: 4s, duration: 20s, warmup: 10%, clientTolerance: 250ms }
slo:
  fluidity: { tbtDeadline: 50ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }
`;

/** Starts `fluidcap <args>` in the background. */
export function startFluidcap(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('close', (code, signal) => done({ code, signal })));
  return { child, exited, stderr: () => err };
}

/** A native llama-server on a loopback port, started the way an operator would (prompt cache at its default). */
export async function startLlamaServer(l: LlamaEnv, port: number, log: string[]): Promise<ChildProcess> {
  const child = spawn(l.server, ['-m', l.model, '--host', '127.0.0.1', '--port', String(port), '--metrics', '-np', '4', '-c', '4096', '-t', '1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (b: Buffer) => {
    log.push(...b.toString().split('\n').filter(Boolean));
    if (log.length > 400) log.splice(0, log.length - 200);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const t0 = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`llama-server exited with ${child.exitCode}:\n${log.slice(-20).join('\n')}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return child;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > 60_000) {
      child.kill('SIGKILL');
      throw new Error(`llama-server not healthy after 60 s:\n${log.slice(-20).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The directories of a run's finished probes, from its journal (so a run without capacity.json still tells). */
export function finishedProbeDirs(runDir: string): string[] {
  return readJsonl(join(runDir, 'events.jsonl'))
    .filter((e) => e.type === 'probe-finished')
    .map((e) => String(e.dir));
}

/** Growth of llama.cpp's prompt-cache counter over every probe of a run (null: never scraped). */
export function cachedPromptTokens(runDir: string, probeDirs: string[]): { cached: number | null; requests: number } {
  let cached: number | null = null;
  let requests = 0;
  for (const dir of probeDirs) {
    requests += readJsonl(join(runDir, dir, 'timelines.jsonl')).length;
    const file = join(runDir, dir, 'server-metrics.jsonl');
    if (!existsSync(file)) continue;
    const v = readJsonl(file)
      .map((r) => (r.series as Record<string, number> | undefined)?.['llamacpp:prompt_tokens_cached_total'])
      .filter((x): x is number => typeof x === 'number');
    if (v.length > 1) cached = (cached ?? 0) + (v[v.length - 1] - v[0]);
  }
  return { cached, requests };
}

/**
 * What every finished llama.cpp run must hold: a profile, at least four judged probes, capacity.json
 * with a bracket, both reports, and `analyze` / `report` working on the directory afterwards.
 */
export async function checkFinishedRun(runDir: string): Promise<CapacityFile> {
  assert.ok(existsSync(join(runDir, 'profile', 'fit.json')), 'no profile/fit.json');
  const prefill = readJsonl(join(runDir, 'profile', 'prefill.jsonl'));
  assert.ok(prefill.length >= 8, `profile has ${prefill.length} prefills`);
  assert.ok(existsSync(join(runDir, 'capacity.json')), 'no capacity.json: the run did not finish');
  const capacity = readJson<CapacityFile>(join(runDir, 'capacity.json'));
  assert.ok(capacity.probes.length >= 4, `the search ran ${capacity.probes.length} probes, fewer than 4`);
  assert.ok(capacity.capacityQps > 0, `capacity ${capacity.capacityQps}`);
  assert.ok(capacity.bracket.passQps !== null, 'no passing probe');
  for (const p of capacity.probes) {
    const lines = readJsonl(join(runDir, p.dir, 'timelines.jsonl'));
    assert.ok(lines.length > 0, `${p.dir}: no timelines`);
    const ok = lines.filter((l) => l.status === 'ok');
    assert.ok(ok.length > 0, `${p.dir}: no request succeeded (${JSON.stringify(lines[0]).slice(0, 300)})`);
    assert.ok(ok.every((l) => (l.outputTokens as number) > 0 && (l.chunks as unknown[]).length > 0), `${p.dir}: a successful request without tokens`);
  }
  for (const f of ['report.md', 'report.html']) assert.ok(existsSync(join(runDir, f)), `no ${f}`);
  const md = readFileSync(join(runDir, 'report.md'), 'utf8');
  assert.ok(md.includes(String(capacity.capacityQps)), 'report.md does not quote the capacity');

  const analyzed = await fluidcap(['analyze', runDir, '--json'], { timeoutMs: 120_000 });
  assert.is(analyzed.code, 0, analyzed.stderr.slice(-2000));
  const out = JSON.parse(analyzed.stdout) as { requests: { ttftS: number | null }[]; summary: { probes: { probe: string }[] } };
  assert.ok(out.requests.length > 0, 'analyze found no requests');
  for (const p of capacity.probes) {
    assert.ok(out.summary.probes.some((a) => a.probe === p.dir.replace('probes/', '')), `analyze has no ${p.dir}`);
  }
  const reported = await fluidcap(['report', runDir], { timeoutMs: 120_000 });
  assert.is(reported.code, 0, reported.stderr.slice(-2000));
  assert.ok(readFileSync(join(runDir, 'report.html'), 'utf8').includes('<html'), 'report.html is not HTML');
  return capacity;
}

/** A recipe that launches llama-server from its image on the e2e host (model path from FLUIDCAP_LLAMA_MODEL), with the shared workload. */
export function llamaDockerRecipe(name: string, image: string, port: number): string {
  return `name: ${name}
target:
  engine: llamacpp
  image: ${image}
  model: stories260K
  host: e2e
  port: ${port}
  llamacpp: { modelFileEnv: FLUIDCAP_LLAMA_MODEL }
  engineArgs: { slots: 4, ctxSize: 4096, threads: 1 }
  readyTimeout: 90s
${SHARED_RECIPE_TAIL}`;
}
