// The load agent: fluidcap's probe runner (load/runProbe.ts, unchanged) in a container beside the
// engine. It reads the orchestrator's messages on stdin and answers on stdout (protocol.ts); every
// time it reports is taken here. stdout carries only protocol lines: anything else printed goes to
// stderr. When stdin ends (the orchestrator or its connection is gone) the probe is cancelled and
// the agent exits, so a lost orchestrator never leaves load running.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProbe, type ProbeControl } from '../load/runProbe.ts';
import { LineSplitter, decodeToAgent, encodeMessage, type FromAgent, type ToAgent } from './protocol.ts';

// The runner's own copy of the timelines lands here and is dropped: the orchestrator keeps what it receives.
const OUT_DIR = mkdtempSync(join(tmpdir(), 'fluidcap-agent-'));

const send = (m: FromAgent) => process.stdout.write(encodeMessage(m));
// No one left to answer to: stop at once (the container is then removed by its owner).
process.stdout.on('error', () => process.exit(1));
console.log = (...args: unknown[]) => console.error(...args);

const abort = new AbortController();
let control: ProbeControl | null = null;
const pending: ToAgent[] = [];
let go: () => void = () => {};
const goReceived = new Promise<void>((r) => (go = r));
let probing = false;

function onMessage(m: ToAgent): void {
  if (m.type === 'probe') {
    if (probing) throw new Error('a second probe message');
    probing = true;
    void probe(m);
  } else if (m.type === 'go') go();
  else if (m.type === 'cancel') abort.abort();
  else if (control === null) pending.push(m);
  else if (m.type === 'stop') control.stop(m.reason);
  else if (m.type === 'limit') control.limit(m.planned);
}

async function probe(m: Extract<ToAgent, { type: 'probe' }>): Promise<void> {
  try {
    const { content, ...options } = m.options;
    const result = await runProbe(m.plan, {
      ...options,
      content: content as never,
      outDir: OUT_DIR,
      signal: abort.signal,
      beforeStart: async () => {
        send({ type: 'ready' });
        await Promise.race([goReceived, new Promise((_, reject) => abort.signal.addEventListener('abort', () => reject(new Error('cancelled before the start')), { once: true }))]);
      },
      onControl: (c) => {
        control = c;
        for (const p of pending.splice(0)) onMessage(p);
      },
      onRecord: (index, record, sent) => send({ type: 'record', index, record, sent }),
    }, { log: (line) => send({ type: 'log', line }) });
    const { timelinesFile: _t, ...rest } = result;
    const serverMetrics = result.serverMetrics.file ? readFileSync(result.serverMetrics.file, 'utf8') : null;
    send({ type: 'result', result: rest, serverMetrics });
    process.exitCode = 0;
  } catch (err) {
    send({ type: 'failed', message: (err as Error).message });
    process.exitCode = 1;
  }
  rmSync(OUT_DIR, { recursive: true, force: true });
  process.stdin.destroy();
}

// The agent is PID 1 in its container, where the kernel gives it no default signal actions: without
// these a `docker stop` waits out its whole grace period before it kills.
process.once('SIGTERM', () => process.exit(143));
process.once('SIGINT', () => process.exit(130));

const version = process.env.FLUIDCAP_AGENT_VERSION ?? 'unknown';
send({ type: 'hello', version });
const lines = new LineSplitter();
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text: string) => {
  try {
    for (const line of lines.push(text)) onMessage(decodeToAgent(line));
  } catch (err) {
    send({ type: 'failed', message: (err as Error).message });
    abort.abort();
  }
});
process.stdin.on('end', () => abort.abort());
