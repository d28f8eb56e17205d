// Streams a container's output into the run's server.log (stdout and stderr demultiplexed from
// Docker's framed stream) and keeps the last lines for failure messages. The relay is bounded:
// an engine that logs every request's whole prompt (vLLM 0.8.5's default) can write megabytes a
// second, and every byte relayed costs the thread that also receives the load's tokens. Reading
// pauses when the relay runs ahead of its byte rate (the rest waits in Docker's own log), and
// server.log keeps at most its byte cap, then the last lines at the end.
import { createWriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { openAppendIn } from '../util/confinedFs.ts';
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';

/** What following the log has cost so far (cumulative; a probe reports the difference). */
export interface LogRelayCost {
  /** Bytes read from Docker's log stream (its framing included). */
  bytes: number;
  lines: number;
  /** Main-thread time spent relaying: the log connection's reads, decryption and this module's handler. */
  busyS: number;
  /** Time reading was paused by the byte-rate bound. */
  pausedS: number;
  /** Bytes read but not kept in server.log (past its cap). */
  droppedBytes: number;
}

export interface LogBounds {
  /** Most bytes server.log keeps of the engine's output (default 64 MiB); past it, a note and, at the end, the last lines. */
  maxBytes?: number;
  /** Most bytes relayed per second, on average (default 256 KiB/s); a burst of up to maxBurstBytes (64 KiB) passes at once. */
  maxBytesPerS?: number;
  maxBurstBytes?: number;
  /** Lines kept for failure messages (default 50). */
  keep?: number;
  /** Main-thread seconds spent on the log's transport so far (its own SSH connection); default: this module's handler time only. */
  transportBusyS?: () => number;
}

export interface LogFollower {
  /** The last `keep` lines seen (stdout and stderr interleaved as they arrived). */
  tail(): string[];
  /** Resolves when Docker ends the stream (the container stopped). */
  ended: Promise<void>;
  /** What the relay has cost so far. */
  cost(): LogRelayCost;
  /** The engine stopped: lifts the rate bound so what Docker still holds is read at once; resolves as `ended`. */
  catchUp(): Promise<void>;
  /** Stops following and flushes server.log. */
  close(): Promise<void>;
}

// 256 KiB/s: the relay took 20-25 ms of the main thread per MB here (loopback sshd, 2 shared
// cores), so a bounded relay costs at most ~0.6% of it; vLLM 0.8.5's request lines (tens of KB
// each) pass in full up to ~10 QPS of 4K-token prompts, beyond which the log lags instead.
export const DEFAULT_LOG_BOUNDS = { maxBytes: 64 * 2 ** 20, maxBytesPerS: 256 * 2 ** 10, maxBurstBytes: 64 * 2 ** 10, keep: 50 };

/** Follows `container`'s logs from its start into `logPath` (appending), within `bounds`. */
export async function followLogs(docker: Docker, container: Docker.Container, logPath: string, bounds: LogBounds = {}): Promise<LogFollower> {
  const stream = (await container.logs({ follow: true, stdout: true, stderr: true })) as unknown as Readable;
  return relayLog(stream, logPath, bounds, (src, sink) => docker.modem.demuxStream(src, sink, sink));
}

/**
 * Relays an engine's output stream into `logPath` (appending) within `bounds`; `demux` splits a
 * framed stream (Docker's) into the plain bytes it carries (default: the stream is plain).
 */
export function relayLog(stream: Readable, logPath: string, bounds: LogBounds = {}, demux: (src: Readable, sink: PassThrough) => void = (src, sink) => void src.pipe(sink)): LogFollower {
  const { maxBytes, maxBytesPerS, maxBurstBytes, keep } = { ...DEFAULT_LOG_BOUNDS, ...stripUndefined(bounds) };
  const file = createWriteStream(logPath, { fd: openAppendIn(dirname(logPath), logPath) });
  const lines: string[] = [];
  let partial = '';
  let kept = 0;
  let truncated = false;
  const cost: LogRelayCost = { bytes: 0, lines: 0, busyS: 0, pausedS: 0, droppedBytes: 0 };
  let handlerS = 0;
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => {
    const t0 = performance.now();
    if (!truncated && kept + chunk.length <= maxBytes) {
      file.write(chunk);
      kept += chunk.length;
    } else {
      if (!truncated) {
        truncated = true;
        file.write(`\n# fluidcap: this log reached its cap of ${maxBytes} bytes; the engine's further output is not kept here except its last lines, written when following ends\n`);
      }
      cost.droppedBytes += chunk.length;
    }
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    cost.lines += parts.length;
    for (const l of parts) lines.push(l);
    if (lines.length > keep) lines.splice(0, lines.length - keep);
    handlerS += (performance.now() - t0) / 1000;
  });

  // A token bucket (refilled continuously, not per second, so no bursts at second boundaries):
  // past its bytes, reading pauses until the deficit has drained at maxBytesPerS.
  let tokens = maxBurstBytes;
  let refilledAt = performance.now();
  let resumeTimer: NodeJS.Timeout | null = null;
  let unbounded = false;
  stream.on('data', (chunk: Buffer) => {
    cost.bytes += chunk.length;
    if (unbounded) return;
    const now = performance.now();
    tokens = Math.min(maxBurstBytes, tokens + ((now - refilledAt) / 1000) * maxBytesPerS) - chunk.length;
    refilledAt = now;
    if (tokens < 0 && resumeTimer === null) {
      stream.pause();
      const waitMs = (-tokens / maxBytesPerS) * 1000;
      resumeTimer = setTimeout(() => {
        resumeTimer = null;
        cost.pausedS += (performance.now() - now) / 1000;
        stream.resume();
      }, waitMs);
      resumeTimer.unref();
    }
  });
  demux(stream, sink);
  const ended = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  let closing: Promise<void> | undefined;
  const tail = () => (partial ? [...lines, partial].slice(-keep) : [...lines]);
  const catchUp = () => {
    unbounded = true;
    if (resumeTimer) clearTimeout(resumeTimer);
    resumeTimer = null;
    stream.resume();
    return ended;
  };
  return {
    tail,
    ended,
    cost: () => ({ ...cost, busyS: bounds.transportBusyS ? bounds.transportBusyS() : handlerS }),
    catchUp,
    close() {
      closing ??= (async () => {
        // The run is over: what Docker still holds is read at full speed for the last lines.
        await Promise.race([catchUp(), new Promise((r) => setTimeout(r, 1000).unref())]);
        stream.destroy();
        if (truncated) {
          const last = lastBytes(tail().join('\n'), Math.min(MAX_TAIL_BYTES, maxBytes));
          file.write(`# fluidcap: ${cost.droppedBytes} bytes of the engine's output were not kept; its last ${Buffer.byteLength(last)} bytes:\n${last}\n`);
        }
        await new Promise<void>((resolve) => file.end(resolve));
      })();
      return closing;
    },
  };
}

// The last lines written after a truncation are bounded too: a vLLM request line can be 40 KB.
const MAX_TAIL_BYTES = 256 * 2 ** 10;

/** The end of `text`, at most `max` bytes of it. */
function lastBytes(text: string, max: number): string {
  const b = Buffer.from(text, 'utf8');
  return b.length <= max ? text : b.subarray(b.length - max).toString('utf8');
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
