// One agent's end of the protocol as the orchestrator holds it: messages out on its stdin, checked
// messages in from its stdout, and one promise that settles when the agent can no longer be heard
// (it exited, its connection dropped, or it sent something that is not the protocol).
import type { Readable, Writable } from 'node:stream';
import { LineSplitter, decodeFromAgent, encodeMessage, type FromAgent, type ToAgent } from './protocol.ts';

export interface AgentLink {
  /** Names the agent in messages: `agent 1 on hostB`. */
  name: string;
  send(m: ToAgent): void;
  /** Messages in the order sent; only one listener. */
  onMessage(cb: (m: FromAgent) => void): void;
  /** Resolves with why the agent is gone; never rejects. */
  gone: Promise<string>;
  /** The last lines the agent wrote to stderr (its own errors), for messages. */
  stderrTail(): string[];
  /** Ends the agent's stdin: an agent that has not finished cancels its probe and exits. */
  close(): void;
}

/** How long an agent's exit notice waits for its output to drain before the link is gone. */
export const EXIT_DRAIN_MS = 2000;

/** A link over an agent's stdin/stdout/stderr; `ended` resolves with why the agent or its transport ended. */
export function linkOverStreams(name: string, io: { stdin: Writable; stdout: Readable; stderr?: Readable; ended?: Promise<string> }): AgentLink {
  let listener: ((m: FromAgent) => void) | null = null;
  const queued: FromAgent[] = [];
  let settle!: (why: string) => void;
  let isGone = false;
  const gone = new Promise<string>((resolve) => (settle = resolve));
  const end = (why: string) => {
    if (isGone) return;
    isGone = true;
    settle(why);
  };
  const tail: string[] = [];
  const errLines = new LineSplitter();
  io.stderr?.setEncoding('utf8');
  io.stderr?.on('data', (t: string) => {
    for (const l of errLines.push(t)) tail.push(l.slice(0, 500));
    tail.splice(0, Math.max(0, tail.length - 20));
  });
  const lines = new LineSplitter();
  io.stdout.setEncoding('utf8');
  io.stdout.on('data', (t: string) => {
    if (isGone) return;
    try {
      for (const line of lines.push(t)) {
        const m = decodeFromAgent(line);
        if (listener === null) queued.push(m);
        else listener(m);
      }
    } catch (err) {
      end(`${name} broke the protocol: ${(err as Error).message}`);
    }
  });
  // The transport's notice that the agent ended can come before the agent's last output has been
  // read: a child's 'exit' fires before its pipes close, and Docker's wait can answer before the
  // attach stream delivers its tail. The last lines are its results, so the notice waits for the
  // output to end (at most EXIT_DRAIN_MS) and keeps its own reason.
  let exitNotice: string | null = null;
  io.stdout.on('end', () => end(exitNotice ?? `${name} closed its output`));
  io.stdout.on('close', () => end(exitNotice ?? `${name} closed its output`));
  io.stdout.on('error', (err) => end(`${name}'s output failed: ${err.message}`));
  io.stdin.on('error', (err) => end(`${name}'s input failed: ${err.message}`));
  void io.ended?.then((why) => {
    exitNotice = why;
    if (io.stdout.readableEnded || io.stdout.destroyed) return end(why);
    setTimeout(() => end(why), EXIT_DRAIN_MS);
  });
  return {
    name,
    send(m) {
      if (isGone || io.stdin.destroyed || io.stdin.writableEnded) return;
      io.stdin.write(encodeMessage(m));
    },
    onMessage(cb) {
      listener = cb;
      for (const m of queued.splice(0)) cb(m);
    },
    gone,
    stderrTail: () => [...tail],
    close() {
      if (!io.stdin.writableEnded) io.stdin.end();
    },
  };
}
