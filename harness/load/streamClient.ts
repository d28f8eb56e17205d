// The streaming HTTP client. Hot path per read: take process.hrtime.bigint(), copy the bytes into
// the request's buffer, refresh the stall clock — nothing else. Decoding happens after the request ends (decode.ts),
// on another thread when workers are used. Failures end as data in the RawExchange; it never throws.
import http from 'node:http';
import https from 'node:https';
import type { EndReason, RawExchange } from './exchange.ts';

export interface StreamClientOptions {
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; never logged or archived. */
  apiKey?: string;
  requestTimeoutS: number;
  /** Longest silence allowed after sending before the request ends as `timeout`. */
  stallTimeoutS: number;
  /** The probe's start on this process's monotonic clock; all times are ns after it. */
  startNs: bigint;
  maxSockets?: number;
}

/** What to send: the planned request, its path and its already-built body. */
export interface OutgoingRequest {
  id: string;
  index: number;
  scheduledNs: number;
  slotWaitNs: number;
  promptTokens: number;
  maxTokens: number;
  path: string;
  body: string;
}

/** A request with its socket, not yet written: fire() sends it now, abandon() drops it unsent. */
export interface PreparedSend {
  fire(): void;
  abandon(): void;
}

interface Active {
  req: http.ClientRequest;
  sentNs: number;
  lastReadNs: number;
  finish: (reason: EndReason, error: string | null) => void;
}

/** Sends streamed requests over one keep-alive agent and times every read; see the file comment. */
export class StreamClient {
  private readonly agent: http.Agent;
  private readonly active = new Set<Active>();
  private readonly unfired = new Set<http.ClientRequest>();
  private readonly targets = new Map<string, http.RequestOptions>();
  private sweeper: NodeJS.Timeout | null = null;
  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  private readonly timeoutNs: number;
  private readonly stallNs: number;

  constructor(private readonly options: StreamClientOptions) {
    this.base = new URL(options.baseUrl);
    this.transport = this.base.protocol === 'https:' ? https : http;
    const AgentClass = this.base.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new AgentClass({ keepAlive: true, maxSockets: options.maxSockets ?? 100_000, maxFreeSockets: 1024, scheduling: 'lifo' });
    this.timeoutNs = options.requestTimeoutS * 1e9;
    this.stallNs = options.stallTimeoutS * 1e9;
  }

  get inFlight(): number {
    return this.active.size;
  }

  /** Sends one request now; `onEnd` gets its raw exchange exactly once. */
  send(out: OutgoingRequest, onEnd: (raw: RawExchange) => void): void {
    this.prepare(out, onEnd).fire();
  }

  /**
   * Builds the request and lets the agent give it a socket (connecting if none is free) without
   * writing anything; fire() then only writes. Measured here: building a ClientRequest on a loop
   * that was idle for 15 ms took ~180-230 µs (30 µs when warm), so doing it at the send instant
   * put the bytes on the wire ~0.5 ms after `sentNs`. `onEnd` is called once, only if fired.
   */
  prepare(out: OutgoingRequest, onEnd: (raw: RawExchange) => void, retryOf?: { sentNs: number }): PreparedSend {
    const startNs = this.options.startNs;
    // Each read is copied into one growing buffer and its time into a growing typed array, so the
    // read's Buffer dies young: keeping every Buffer made the worker's scavenges take up to 14 ms.
    let buf = new Uint8Array(4096);
    let times = new Float64Array(64);
    let readEnd = new Int32Array(64);
    let reads = 0;
    let bytes = 0;
    let httpStatus: number | null = null;
    let contentType: string | null = null;
    let fired = false;
    let done = false;
    let earlyError: string | null = null;
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'content-length': Buffer.byteLength(out.body),
    };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    // A retry goes out on a connection of its own (agent: false), never on another pooled socket
    // that the server may have closed as well.
    const req = this.transport.request({ ...this.target(out.path), method: 'POST', agent: retryOf ? false : this.agent, headers });
    this.unfired.add(req);
    const entry: Active = {
      req,
      sentNs: 0,
      lastReadNs: 0,
      finish: (reason, error) => {
        if (done || !fired) return;
        done = true;
        this.active.delete(entry);
        if (reason !== 'end') req.destroy();
        const endNs = Number(process.hrtime.bigint() - startNs);
        onEnd({
          id: out.id,
          index: out.index,
          scheduledNs: out.scheduledNs,
          sentNs: entry.sentNs,
          slotWaitNs: out.slotWaitNs,
          httpStatus,
          contentType,
          // Views on this request's own ArrayBuffers (never Node's shared pool): transferable as they are.
          readNs: times.subarray(0, reads),
          readEnd: readEnd.subarray(0, reads),
          bytes: buf.subarray(0, bytes),
          endNs,
          endReason: reason,
          error,
          promptTokens: out.promptTokens,
          maxTokens: out.maxTokens,
          retried: retryOf !== undefined,
        });
      },
    };
    req.on('response', (res) => {
      httpStatus = res.statusCode ?? null;
      contentType = (res.headers['content-type'] as string | undefined) ?? null;
      res.on('data', (b: Buffer) => {
        // The receive timestamp comes first, before anything touches the bytes.
        const t = Number(process.hrtime.bigint() - startNs);
        if (reads === times.length) {
          times = grow(times, new Float64Array(reads * 2));
          readEnd = grow(readEnd, new Int32Array(reads * 2));
        }
        if (bytes + b.length > buf.length) buf = grow(buf, new Uint8Array(Math.max(buf.length * 2, bytes + b.length)));
        buf.set(b, bytes);
        bytes += b.length;
        times[reads] = t;
        readEnd[reads++] = bytes;
        entry.lastReadNs = t;
      });
      res.on('end', () => entry.finish('end', null));
      res.on('error', (e) => entry.finish('error', describeError(e)));
      res.on('close', () => {
        if (!res.complete) entry.finish('error', 'connection closed mid-response');
      });
    });
    req.on('error', (e) => {
      if (!fired) {
        earlyError ??= describeError(e);
        return;
      }
      if (!done && !retryOf && req.reusedSocket && httpStatus === null && bytes === 0 && closedUnread(e)) {
        // The server closed the pooled keep-alive connection as the request went out (its idle
        // timeout crossed our write), so it never read the request: send it again at once on a
        // fresh connection. Its send time stays the first one and TTFT still counts from the plan.
        done = true;
        this.active.delete(entry);
        this.prepare(out, onEnd, { sentNs: entry.sentNs }).fire();
        return;
      }
      entry.finish('error', describeError(e));
    });
    return {
      fire: () => {
        if (fired || !this.unfired.delete(req)) return;
        if (earlyError !== null) {
          // Nothing was written (e.g. a keep-alive socket the server closed while we held it), so
          // sending afresh is safe; a failure of that send is the request's result.
          this.prepare(out, onEnd).fire();
          return;
        }
        fired = true;
        entry.lastReadNs = Number(process.hrtime.bigint() - startNs);
        entry.sentNs = retryOf?.sentNs ?? entry.lastReadNs;
        this.active.add(entry);
        this.ensureSweeper();
        req.end(out.body);
      },
      abandon: () => {
        if (fired || !this.unfired.delete(req)) return;
        req.destroy();
      },
    };
  }

  /** Ends every request in flight as `cancelled` (Ctrl-C, early stop), keeping what was received. */
  cancelAll(reason = 'cancelled'): void {
    for (const a of [...this.active]) a.finish('cancelled', reason);
  }

  /** Cancels what is left, drops what was prepared, and releases sockets and the sweeper. */
  close(): void {
    this.cancelAll('client closed');
    for (const req of this.unfired) req.destroy();
    this.unfired.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.agent.destroy();
  }

  /** Host, port and path for an API path, computed once (a `new URL` cost ~55 µs on a cold loop). */
  private target(path: string): http.RequestOptions {
    let t = this.targets.get(path);
    if (!t) {
      const url = new URL(joinPath(this.base.pathname, path), this.base);
      t = { protocol: url.protocol, hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || undefined, path: url.pathname + url.search };
      if (url.username) t.auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      this.targets.set(path, t);
    }
    return t;
  }

  /** One timer checks every request's deadlines, so the per-read path never touches a timer. */
  private ensureSweeper(): void {
    if (this.sweeper) return;
    const periodMs = Math.min(250, Math.max(10, Math.min(this.timeoutNs, this.stallNs) / 1e6 / 10));
    this.sweeper = setInterval(() => {
      if (this.active.size === 0) {
        clearInterval(this.sweeper!);
        this.sweeper = null;
        return;
      }
      const now = Number(process.hrtime.bigint() - this.options.startNs);
      for (const a of [...this.active]) {
        if (now - a.sentNs > this.timeoutNs) a.finish('timeout', `no complete answer within the request timeout of ${this.options.requestTimeoutS}s`);
        else if (now - a.lastReadNs > this.stallNs) a.finish('stall', `stalled: no bytes for ${this.options.stallTimeoutS}s`);
      }
    }, periodMs);
    this.sweeper.unref();
  }
}

/** Joins a base URL's path and an API path; a base ending in /v1 (OpenAI style) is not doubled. */
function joinPath(basePath: string, path: string): string {
  const base = basePath.replace(/\/+$/, '');
  return base.endsWith('/v1') && path.startsWith('/v1/') ? base + path.slice(3) : base + path;
}

/** Copies `from` into the larger `to` and returns `to`. */
function grow<T extends Uint8Array | Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}

/** A connection reset or broken pipe before any response byte: what a close crossing a request looks like. */
function closedUnread(e: Error): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

function describeError(e: Error): string {
  const code = (e as NodeJS.ErrnoException).code;
  return code ? `${code}: ${e.message}` : e.message;
}
