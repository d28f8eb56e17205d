// Streams a container's output into the run's server.log (stdout and stderr demultiplexed from
// Docker's framed stream) and keeps the last lines for failure messages.
import { createWriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { openAppendIn } from '../util/confinedFs.ts';
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';

export interface LogFollower {
  /** The last `keep` lines seen (stdout and stderr interleaved as they arrived). */
  tail(): string[];
  /** Resolves when Docker ends the stream (the container stopped). */
  ended: Promise<void>;
  /** Stops following and flushes server.log. */
  close(): Promise<void>;
}

/** Follows `container`'s logs from its start into `logPath` (appending). */
export async function followLogs(docker: Docker, container: Docker.Container, logPath: string, keep = 50): Promise<LogFollower> {
  const file = createWriteStream(logPath, { fd: openAppendIn(dirname(logPath), logPath) });
  const lines: string[] = [];
  let partial = '';
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => {
    file.write(chunk);
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) lines.push(l);
    if (lines.length > keep) lines.splice(0, lines.length - keep);
  });
  const stream = (await container.logs({ follow: true, stdout: true, stderr: true })) as unknown as Readable;
  docker.modem.demuxStream(stream, sink, sink);
  const ended = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  let closing: Promise<void> | undefined;
  return {
    tail: () => (partial ? [...lines, partial].slice(-keep) : [...lines]),
    ended,
    close() {
      closing ??= (async () => {
        await Promise.race([ended, new Promise((r) => setTimeout(r, 1000).unref())]);
        stream.destroy();
        await new Promise<void>((resolve) => file.end(resolve));
      })();
      return closing;
    },
  };
}
