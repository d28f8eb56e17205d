// Shared by the pipeline tests: run the real CLI as a child process, read a run directory's files.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'fluidcap.js');
export const FAST_RECIPE = join(ROOT, 'tests', 'fixtures', 'recipes', 'fast.yaml');

/** The child sees no colour settings: NO_COLOR next to the runner's FORCE_COLOR makes node warn. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.FORCE_COLOR;
  delete env.NO_COLOR;
  return env;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `node bin/fluidcap.js <args>` to completion (killed after timeoutMs so a hang fails, not stalls, the run). */
export function fluidcap(args: string[], opts: { timeoutMs: number; cwd?: string; env?: Record<string, string> }): Promise<CliResult> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? ROOT, env: childEnv(opts.env), timeout: opts.timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
      done({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout, stderr });
    });
  });
}

/** The directories a results folder holds (beside them it keeps index.jsonl, a line per finished run). */
export function runDirsIn(outDir: string): string[] {
  return readdirSync(outDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
}

/** The one run directory a fresh `--out` directory holds. */
export function onlyRunDir(outDir: string): string {
  const entries = runDirsIn(outDir);
  if (entries.length !== 1) throw new Error(`expected one run directory in ${outDir}, found ${entries.join(', ') || 'none'}`);
  return join(outDir, entries[0]);
}

export function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** Every line of a JSON-lines file, parsed (a line that does not parse fails the test). */
export function readJsonl(path: string): Record<string, unknown>[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`${path}:${i + 1} is not JSON: ${l.slice(0, 120)}`);
      }
    });
}

/** Whether a process exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface CapacityFile {
  capacityQps: number;
  outcome: string;
  reason: string;
  tolerance: number;
  slo: { fluidity?: { tbtDeadlineS: number } };
  bracket: { passQps: number | null; failQps: number | null };
  probes: { index: number; qps: number; passed: boolean; valid: boolean; requests: number; durationS: number; earlyStop: string | null; dir: string }[];
  probeTimeS: number;
}

/** Polls the run's journal until `count` probes have started; returns the run directory. */
export async function untilProbeStarted(outDir: string, count: number, exited: Promise<unknown>, stderr: () => string, opts: { timeoutMs?: number; pollMs?: number } = {}): Promise<string> {
  const { timeoutMs = 240_000, pollMs = 100 } = opts;
  let gone = false;
  void exited.then(() => (gone = true));
  const t0 = performance.now();
  for (;;) {
    const runs = existsSync(outDir) ? runDirsIn(outDir) : [];
    if (runs.length === 1) {
      const events = join(outDir, runs[0], 'events.jsonl');
      if (existsSync(events)) {
        const started = readFileSync(events, 'utf8').split('\n').filter((l) => l.includes('"type":"probe-started"')).length;
        if (started >= count) return join(outDir, runs[0]);
      }
    }
    if (gone) throw new Error(`fluidcap exited before probe ${count} started:\n${stderr().slice(-3000)}`);
    if (performance.now() - t0 > timeoutMs) throw new Error(`probe ${count} did not start within ${timeoutMs} ms:\n${stderr().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
