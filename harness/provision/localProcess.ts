// Runs the simulated engine as a child process of this machine (recipes with `engine: sim` and no
// image): no Docker needed, so the quickstart works on any fresh clone. Logs go to server.log.
import { execa, type ResultPromise } from 'execa';
import { createWriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { openAppendIn } from '../util/confinedFs.ts';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { InfraError } from '../util/errors.ts';
import { httpRequest } from '../util/httpRequest.ts';

const BIN = fileURLToPath(new URL('../../bin/fluidcap.js', import.meta.url));
// The engine dies with fluidcap even when fluidcap is SIGKILLed (no handler runs then): the child's
// stdin is a pipe only fluidcap holds, so its end-of-file means fluidcap is gone; the child then
// sends itself SIGTERM (the sim's graceful shutdown). Unref'd, so it never keeps the child alive.
const EXIT_WITH_PARENT =
  'data:text/javascript,' +
  encodeURIComponent(
    "process.stdin.on('end',()=>process.kill(process.pid,'SIGTERM'));process.stdin.on('error',()=>process.kill(process.pid,'SIGTERM'));process.stdin.resume();process.stdin.unref();",
  );
// The engine runs in a process group of its own: Ctrl-C at a terminal (or `timeout -s INT`) signals
// fluidcap's whole group, and an engine that got it too would exit on its own, mid-probe, looking
// like a crash. fluidcap stops it itself once the probe has stopped; the stdin hook above still
// takes it along if fluidcap dies.
const LISTENING_RE = /listening on (http:\/\/[^\s]+)/;

export interface LocalEngine {
  baseUrl: string;
  pid: number;
  timeToReadyS: number;
  /** Resolves when the process exits, for whatever reason. */
  exited: Promise<{ exitCode: number | null; signal: string | null }>;
  /** SIGTERM, then SIGKILL after `graceS`; resolves once the process is gone. Idempotent. */
  stop(graceS?: number): Promise<void>;
}

/** Starts `fluidcap sim serve <args>` and resolves once /health answers 200. */
export async function startLocalSim(
  serveArgs: readonly string[],
  opts: { logPath: string; readyTimeoutS?: number },
): Promise<LocalEngine> {
  const t0 = performance.now();
  const readyTimeoutS = opts.readyTimeoutS ?? 120;
  const log = createWriteStream(opts.logPath, { fd: openAppendIn(dirname(opts.logPath), opts.logPath) });
  const child: ResultPromise = execa(process.execPath, ['--import', EXIT_WITH_PARENT, BIN, 'sim', 'serve', ...serveArgs], {
    reject: false,
    stdin: 'pipe',
    buffer: false,
    detached: true,
  });
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    log.write(chunk);
    for (const line of chunk.toString().split('\n')) if (line) tail.push(line);
    if (tail.length > 50) tail.splice(0, tail.length - 50);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let alive = true;
  const exited = child.then((r) => {
    alive = false;
    log.end();
    return { exitCode: r.exitCode ?? null, signal: r.signal ?? null };
  });

  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        const m = LISTENING_RE.exec(chunk.toString());
        if (m) {
          child.stdout?.off('data', onData);
          resolve(m[1].replace(/\/$/, ''));
        }
      };
      child.stdout?.on('data', onData);
      void exited.then(({ exitCode, signal }) => reject(engineExit(exitCode, signal, tail)));
      setTimeout(() => reject(new InfraError(`simulated engine printed no "listening on" line within ${readyTimeoutS} s`)), readyTimeoutS * 1000).unref();
    });

    const deadline = t0 + readyTimeoutS * 1000;
    for (;;) {
      if (!alive) {
        const { exitCode, signal } = await exited;
        throw engineExit(exitCode, signal, tail);
      }
      try {
        if ((await httpRequest(`${baseUrl}/health`, { timeoutS: 2 })).status === 200) break;
      } catch {
        // not accepting connections yet
      }
      if (performance.now() > deadline) {
        throw new InfraError(`simulated engine not ready after ${readyTimeoutS} s at ${baseUrl}/health; last log lines:\n${tail.join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }

    let stopping: Promise<void> | null = null;
    return {
      baseUrl,
      pid: child.pid ?? -1,
      timeToReadyS: (performance.now() - t0) / 1000,
      exited,
      stop(graceS = 5) {
        stopping ??= (async () => {
          if (!alive) return;
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), graceS * 1000);
          await exited;
          clearTimeout(timer);
        })();
        return stopping;
      },
    };
  } catch (err) {
    if (alive) {
      child.kill('SIGKILL');
      await exited;
    }
    throw err;
  }
}

function engineExit(exitCode: number | null, signal: string | null, tail: string[]): InfraError {
  return new InfraError(
    `simulated engine exited before it was ready (exit code ${exitCode ?? 'none'}${signal ? `, signal ${signal}` : ''}); last log lines:\n${tail.slice(-50).join('\n')}`,
    { host: 'local', lastLogLines: tail.slice(-50) },
  );
}
