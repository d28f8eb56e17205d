// Runs the calling thread's receive path once before the probe's clock starts: the dispatcher, the
// stream client and the HTTP reader, against a loopback server in this same thread that answers
// like a streaming engine (chunked SSE, keep-alive, all streams stepping together). A receiving
// worker is a fresh V8 isolate each probe; without this, V8 compiled its hot functions during the
// ramp and then threw several away mid-probe (type feedback that only the end of a request or the
// pool's reuse brings), recompiling while bursts of chunks waited. Traced at 500 streams on one
// core: a V8 helper thread held the core 2-3 ms during bursts early in the probe and again when
// the requests ended.
import net from 'node:net';
import { startDispatch } from './dispatcher.ts';
import type { PromptOptions } from './prompt.ts';
import type { PlannedRequest } from './plan.ts';

export interface WarmUpOptions {
  /** Streams in flight together; each runs `tokens` events, then a second round reuses the connections. */
  streams: number;
  tokens: number;
  /** The probe's own prompt options, so request bodies are built by the same path with the same shapes. */
  prompt: PromptOptions;
}

/** What the warm-up streamed: requests that ended complete (HTTP 200, whole body) and the reads they took. */
export interface WarmUpResult {
  requests: number;
  complete: number;
  reads: number;
}

/** Streams `streams` × 2 requests through the receive path and resolves once all have ended. */
export async function warmReceivePath(options: WarmUpOptions): Promise<WarmUpResult> {
  const result: WarmUpResult = { requests: 0, complete: 0, reads: 0 };
  // A probe hands each ended exchange's buffers to the decoder by transfer, which detaches them.
  // The first detach in an isolate invalidates a V8 protector, throwing away all compiled code
  // that reads typed arrays (the whole read path), so it happens here, before anything compiles.
  const detached = new ArrayBuffer(8);
  structuredClone(detached, { transfer: [detached] });
  const server = loopbackEngine(options.tokens);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  try {
    const { port } = server.address() as net.AddressInfo;
    // Two rounds: the second goes out on the pooled connections the first left idle. The first runs
    // on a clock started long ago, so times are past V8's small-integer range from the first read
    // (as a probe's are after 2.1 s, which otherwise threw compiled code away mid-probe); the
    // second, like a probe, starts 20 ms ahead.
    for (const clockOffsetNs of [-10_000_000_000n, 20_000_000n]) {
      const requests: PlannedRequest[] = Array.from({ length: options.streams }, (_, i) => ({
        id: `warm-${clockOffsetNs}-${i}`,
        index: i,
        scheduledS: (i / options.streams) * 0.005,
        promptTokens: 16,
        maxTokens: options.tokens,
      }));
      const dispatch = startDispatch(
        requests,
        { client: { baseUrl: `http://127.0.0.1:${port}`, requestTimeoutS: 30, stallTimeoutS: 10, startNs: process.hrtime.bigint() + clockOffsetNs }, prompt: options.prompt },
        {
          onSent: () => {},
          onEnd: (raw) => {
            result.requests++;
            result.reads += raw.readNs.length;
            if (raw.endReason === 'end' && raw.httpStatus === 200) result.complete++;
          },
        },
      );
      await dispatch.done;
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return result;
}

/**
 * A server that answers each request on a connection (keep-alive) with `tokens` SSE events in
 * chunked encoding, one event per stream per step, every open stream stepping together the way an
 * engine's batch does; the events carry an emit stamp like the simulated engine's.
 */
function loopbackEngine(tokens: number): net.Server {
  const streams = new Set<{ socket: net.Socket; left: number }>();
  let stepping = false;
  const step = () => {
    for (const s of streams) {
      if (s.socket.destroyed) {
        streams.delete(s);
        continue;
      }
      s.left--;
      const event = `data: {"id":"cmpl-warm","object":"text_completion","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":${s.left === 0 ? '"length"' : 'null'}}],"fluidcap_emit_ns":"${process.hrtime.bigint()}"}\n\n`;
      let out = `${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`;
      if (s.left === 0) {
        out += 'e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n';
        streams.delete(s);
      }
      s.socket.write(out);
    }
    if (streams.size > 0) setImmediate(step);
    else stepping = false;
  };
  return net.createServer((socket) => {
    socket.setNoDelay(true);
    let pending = '';
    socket.on('data', (b) => {
      pending += b.toString('latin1');
      // Requests are whole once their Content-Length of body has arrived; answer each in turn.
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const length = Number(/content-length:\s*(\d+)/i.exec(pending.slice(0, headEnd))?.[1] ?? 0);
        if (pending.length < headEnd + 4 + length) return;
        pending = pending.slice(headEnd + 4 + length);
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n');
        streams.add({ socket, left: tokens });
        if (!stepping) {
          stepping = true;
          setImmediate(step);
        }
      }
    });
    socket.on('error', () => socket.destroy());
  });
}
