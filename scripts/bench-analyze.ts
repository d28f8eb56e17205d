// npm run bench:analyze — how long `fluidcap analyze` takes, and its peak memory, on a generated
// timelines file (default 100,000 requests × 200 tokens). Targets: < 30 s and < 1 GiB, reached by
// streaming the file. Runs the real CLI as a child process, in --json mode (100k request objects
// streamed to a pipe this script drains and counts) and in table mode. Peak RSS is the child's
// VmHWM from /proc/<pid>/status, sampled until it exits.
// Options: --requests N --tokens N --keep (leave the generated file in place).
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRng } from '../harness/util/rng.ts';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const REQUESTS = opt('requests', 100_000);
const TOKENS = opt('tokens', 200);
const ROOT = resolve(import.meta.dirname, '..');

// Seeded so every run produces the same data (the project's one seeded generator).
function rng(seed: number): () => number {
  const r = createRng(seed);
  return () => r.next();
}

async function generate(path: string): Promise<void> {
  const rand = rng(7);
  const out = createWriteStream(path);
  const us = (s: number) => Math.round(s * 1e6) / 1e6;
  let scheduledS = 0;
  for (let i = 0; i < REQUESTS; i++) {
    scheduledS += -Math.log(1 - rand()) / 50;
    const sentS = scheduledS + 0.0002;
    let t = sentS + 0.05 + rand() * 0.3;
    const chunks: string[] = [];
    for (let k = 0; k < TOKENS; k++) {
      chunks.push(`[${us(t)},1]`);
      t += 0.015 + rand() * 0.02 + (rand() < 0.01 ? 0.2 : 0);
    }
    const status = rand() < 0.002 ? 'timeout' : 'ok';
    const line = `{"id":"01-${i}","scheduledS":${us(scheduledS)},"sentS":${us(sentS)},"promptTokens":${128 + Math.floor(rand() * 2000)},"maxTokens":${TOKENS},"outputTokens":${TOKENS},"chunks":[${chunks.join(',')}],"status":"${status}","httpStatus":200,"error":null}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

interface Measured {
  wallS: number;
  peakRssMiB: number;
  code: number | null;
  stdoutBytes: number;
  requestLines: number;
  stderrTail: string;
}

async function measure(cliArgs: string[]): Promise<Measured> {
  const start = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'analyze', ...cliArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let peakKiB = 0;
  const sample = () => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) peakKiB = Math.max(peakKiB, Number(m[1]));
    } catch {
      // The child has exited between samples; the last sample stands.
    }
  };
  const timer = setInterval(sample, 50);
  let stdoutBytes = 0;
  let requestLines = 0;
  let stderr = '';
  let carry = '';
  child.stdout.on('data', (b: Buffer) => {
    stdoutBytes += b.length;
    // Each request object starts its own line in --json output; carry covers a split marker.
    const text = carry + b.toString('latin1');
    for (let i = text.indexOf('{"id":'); i !== -1; i = text.indexOf('{"id":', i + 1)) requestLines += 1;
    carry = text.slice(-5);
  });
  child.stderr.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-2000);
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(timer);
  return { wallS: (performance.now() - start) / 1000, peakRssMiB: peakKiB / 1024, code, stdoutBytes, requestLines, stderrTail: stderr.trim() };
}

const dir = mkdtempSync(join(tmpdir(), 'fluidcap-bench-analyze-'));
const file = join(dir, 'timelines.jsonl');
try {
  const g0 = performance.now();
  await generate(file);
  const sizeMiB = statSync(file).size / 2 ** 20;
  console.log(`generated ${REQUESTS} requests × ${TOKENS} tokens: ${sizeMiB.toFixed(1)} MiB in ${((performance.now() - g0) / 1000).toFixed(1)} s (${file})`);
  for (const mode of [['--json'], []]) {
    const r = await measure([file, '--ttft-deadline', '1s', ...mode]);
    const label = mode.length ? 'analyze --json' : 'analyze (table)';
    console.log(
      `${label}: wall ${r.wallS.toFixed(2)} s, peak RSS ${r.peakRssMiB.toFixed(0)} MiB, exit ${r.code}, stdout ${(r.stdoutBytes / 2 ** 20).toFixed(1)} MiB` +
        (mode.length ? `, ${r.requestLines} request objects` : '') +
        `  [target < 30 s, < 1024 MiB: ${r.wallS < 30 && r.peakRssMiB < 1024 ? 'met' : 'NOT met'}]`,
    );
    if (r.code !== 0) console.log(`  stderr: ${r.stderrTail}`);
  }
} finally {
  if (!args.includes('--keep')) rmSync(dir, { recursive: true, force: true });
}
