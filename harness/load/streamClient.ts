// The streaming HTTP client, on raw sockets (net, or tls for https) with its own HTTP/1.1 writer
// and response reader (httpResponse.ts). Hot path per read: read the clock (probeClock.ts), run the
// byte-level framing (chunk sizes only; data is copied, never looked at), note where the body now
// ends — nothing else, and nothing allocated: plain-TCP reads land in one preallocated buffer
// (net's `onread`). node:http did a stream push, a Buffer and an event emit per read, 13-17 µs of
// CPU per chunk against 7-8 µs for a raw-socket floor. Decoding happens after the request ends
// (decode.ts), on another thread when workers are used. Failures end as data in the RawExchange;
// it never throws.
import net from 'node:net';
import tls from 'node:tls';
import { HttpResponseReader } from './httpResponse.ts';
import { probeClock } from './probeClock.ts';
import type { EndReason, RawExchange } from './exchange.ts';
import { serverUrl } from './serverUrl.ts';

export interface StreamClientOptions {
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; never logged or archived. */
  apiKey?: string;
  requestTimeoutS: number;
  /** Longest silence allowed after sending before the request ends as `timeout`. */
  stallTimeoutS: number;
  /** The probe's start on this process's monotonic clock; all times are ns after it. */
  startNs: bigint;
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

/** What a connection tells the request that currently holds it. */
interface ConnUser {
  bytes(buf: Uint8Array, n: number): void;
  eof(): void;
  error(e: Error): void;
}

/** One keep-alive connection; `user` is the request on it (null while idle in the pool). */
interface Conn {
  socket: net.Socket;
  user: ConnUser | null;
  /** Responses completed on it: a request on a connection with one or more "reused" it. */
  served: number;
  /** Monotonic ns (probe clock) after which an idle connection is not reused (the server's Keep-Alive hint). */
  idleUntilNs: number;
  /** Monotonic ns (probe clock) when it last went idle. */
  idleSinceNs: number;
  gone: boolean;
}

/** How warm() found the connection the next request will be written on. */
export interface WarmConnection {
  /** An open connection from the pool was confirmed; false: a new one was opened. */
  reused: boolean;
  /** A new connection's set-up (TCP, plus TLS for https), seconds; null when one was reused. */
  connectS: number | null;
  /** The confirming GET's round trip on it, seconds; null when it got no answer. */
  confirmS: number | null;
  /** Why no connection is ready (the request will then connect as it is sent); null when one is. */
  error: string | null;
}

interface Active {
  sentNs: number;
  lastReadNs: number;
  finish: (reason: EndReason, error: string | null) => void;
}

// Plain-TCP reads of every connection land here and are consumed before the next read.
const READ_BUFFER_BYTES = 256 * 1024;
const MAX_IDLE_CONNECTIONS = 1024;

/** Sends streamed requests over pooled keep-alive connections and times every read; see the file comment. */
export class StreamClient {
  private readonly active = new Set<Active>();
  private readonly unfired = new Set<{ conn: Conn }>();
  private readonly idle: Conn[] = [];
  private readonly heads = new Map<string, string>();
  private readonly readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private sweeper: NodeJS.Timeout | null = null;
  private readonly base: URL;
  private readonly secure: boolean;
  private readonly host: string;
  private readonly port: number;
  private readonly hostHeader: string;
  private readonly authorization: string | null;
  private readonly timeoutNs: number;
  private readonly stallNs: number;
  private readonly now: () => number;

  constructor(private readonly options: StreamClientOptions) {
    this.base = new URL(options.baseUrl);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') throw new Error(`base URL ${JSON.stringify(options.baseUrl)}: protocol ${this.base.protocol} is neither http: nor https:`);
    this.secure = this.base.protocol === 'https:';
    this.host = this.base.hostname.replace(/^\[|\]$/g, '');
    this.port = this.base.port ? Number(this.base.port) : this.secure ? 443 : 80;
    this.hostHeader = this.base.host;
    if (options.apiKey !== undefined && options.apiKey !== '') {
      // A header value may not contain line breaks (they would end the header and start another).
      if (/[\r\n\0]/.test(options.apiKey)) throw new Error('the API key contains a line break or NUL, which cannot be sent in an HTTP header');
      this.authorization = `Bearer ${options.apiKey}`;
    } else if (this.base.username) {
      this.authorization = `Basic ${Buffer.from(`${decodeURIComponent(this.base.username)}:${decodeURIComponent(this.base.password)}`).toString('base64')}`;
    } else this.authorization = null;
    this.now = probeClock(options.startNs);
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
   * Builds the request's bytes and takes a connection for it (connecting if none is idle) without
   * writing anything; fire() then only writes, so the bytes leave at `sentNs`. `onEnd` is called
   * once, only if fired.
   */
  prepare(out: OutgoingRequest, onEnd: (raw: RawExchange) => void, retryOf?: { sentNs: number }): PreparedSend {
    const bodyBytes = Buffer.byteLength(out.body);
    const head = this.head(out.path, bodyBytes);
    const wire = Buffer.allocUnsafe(Buffer.byteLength(head, 'latin1') + bodyBytes);
    wire.write(out.body, wire.write(head, 0, 'latin1'), 'utf8');
    // A retry goes out on a connection of its own, never on another pooled one the server may have closed as well.
    const conn = (retryOf ? null : this.takeIdle()) ?? this.connect();
    const reused = conn.served > 0;
    // Sized for the whole answer up front (an SSE event is ~100-250 bytes per token), so the body
    // buffer rarely grows during the stream.
    const reader = new HttpResponseReader(Math.min(1 << 20, Math.max(4096, out.maxTokens * 256)));
    let times = new Float64Array(Math.min(1 << 16, out.maxTokens + 8));
    let readEnd = new Int32Array(times.length);
    let reads = 0;
    let fired = false;
    let done = false;
    let earlyError: string | null = null;
    const slot = { conn };
    this.unfired.add(slot);

    const entry: Active = {
      sentNs: 0,
      lastReadNs: 0,
      finish: (reason, error) => {
        if (done || !fired) return;
        done = true;
        this.active.delete(entry);
        if (reason === 'end') this.release(conn, reader);
        else this.discard(conn);
        const endNs = this.now();
        const started = reader.state !== 'head';
        onEnd({
          id: out.id,
          index: out.index,
          scheduledNs: out.scheduledNs,
          sentNs: entry.sentNs,
          slotWaitNs: out.slotWaitNs,
          httpStatus: started ? reader.status : null,
          contentType: started ? (reader.headers.get('content-type') ?? null) : null,
          // Views on this request's own ArrayBuffers (never a shared pool): transferable as they are.
          readNs: times.subarray(0, reads),
          readEnd: readEnd.subarray(0, reads),
          bytes: reader.body.subarray(0, reader.bodyLength),
          endNs,
          endReason: reason,
          error,
          promptTokens: out.promptTokens,
          maxTokens: out.maxTokens,
          retried: retryOf !== undefined,
        });
      },
    };
    // The server closed a reused connection before answering: it never read the request (its idle
    // timeout crossed our write), so send it again at once on a fresh connection. Its send time
    // stays the first one and TTFT still counts from the plan.
    const closedUnread = () => !done && fired && !retryOf && reused && !reader.started;
    const retry = () => {
      done = true;
      this.active.delete(entry);
      this.discard(conn);
      this.prepare(out, onEnd, { sentNs: entry.sentNs }).fire();
    };
    conn.user = {
      bytes: (buf, n) => {
        // The receive timestamp comes first, before anything touches the bytes.
        const t = this.now();
        if (!fired) {
          earlyError ??= 'the server sent bytes before the request';
          this.discard(conn);
          return;
        }
        if (done) return;
        const before = reader.bodyLength;
        reader.feed(buf, 0, n);
        entry.lastReadNs = t;
        if (reader.bodyLength > before) {
          if (reads === times.length) {
            times = grow(times, new Float64Array(reads * 2));
            readEnd = grow(readEnd, new Int32Array(reads * 2));
          }
          times[reads] = t;
          readEnd[reads++] = reader.bodyLength;
        }
        if (reader.state === 'done') entry.finish('end', null);
        else if (reader.state === 'failed') entry.finish('error', `malformed HTTP response: ${reader.error}`);
      },
      eof: () => {
        if (!fired) {
          earlyError ??= 'the server closed the connection before the request was sent';
          return;
        }
        if (closedUnread()) return retry();
        if (reader.eof()) entry.finish('end', null);
        else entry.finish('error', reader.started ? 'connection closed mid-response' : 'connection closed before any response');
      },
      error: (e) => {
        if (!fired) {
          earlyError ??= describeError(e);
          return;
        }
        if (closedUnread() && isCloseCrossing(e)) return retry();
        entry.finish('error', describeError(e));
      },
    };
    return {
      fire: () => {
        if (fired || !this.unfired.delete(slot)) return;
        if (earlyError !== null || conn.gone) {
          // Nothing was written (e.g. a keep-alive socket the server closed while we held it), so
          // sending afresh is safe; a failure of that send is the request's result.
          conn.user = null;
          this.discard(conn);
          this.prepare(out, onEnd).fire();
          return;
        }
        fired = true;
        entry.lastReadNs = this.now();
        entry.sentNs = retryOf?.sentNs ?? entry.lastReadNs;
        this.active.add(entry);
        this.ensureSweeper();
        conn.socket.write(wire);
      },
      abandon: () => {
        if (fired || !this.unfired.delete(slot)) return;
        conn.user = null;
        this.discard(conn);
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
    for (const slot of this.unfired) {
      slot.conn.user = null;
      this.discard(slot.conn);
    }
    this.unfired.clear();
    for (const c of this.idle.splice(0)) this.discard(c);
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** The request head for an API path, built once per path. */
  private head(path: string, contentLength: number): string {
    let h = this.heads.get(path);
    if (h === undefined) {
      const url = serverUrl(this.base.href, path);
      h = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${this.hostHeader}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n${this.authorization ? `Authorization: ${this.authorization}\r\n` : ''}Content-Length: `;
      this.heads.set(path, h);
    }
    return `${h}${contentLength}\r\n\r\n`;
  }

  /**
   * Leaves an open keep-alive connection, confirmed by a GET of `path` answered on it, at the top
   * of the pool, so the next request's send time is its write and not a connection set-up (over an
   * SSH tunnel a new connection is a new channel). A pooled connection idle longer than `maxIdleS`
   * is not trusted (servers close idle ones: vLLM after 5 s, often without a hint) and a new one is
   * opened instead. Never rejects.
   */
  async warm(path: string, maxIdleS = Infinity): Promise<WarmConnection> {
    const idle = this.takeIdle(maxIdleS * 1e9);
    if (idle) {
      const confirmS = await this.confirm(idle, path);
      if (confirmS !== null) return { reused: true, connectS: null, confirmS, error: null };
    }
    const conn = this.connect();
    const startNs = this.now();
    const connectS = await new Promise<number | null>((resolve) => {
      const ready = () => resolve((this.now() - startNs) / 1e9);
      conn.socket.once(this.secure ? 'secureConnect' : 'connect', ready);
      conn.socket.once('close', () => resolve(null));
    });
    if (connectS === null) {
      this.discard(conn);
      return { reused: false, connectS: null, confirmS: null, error: `cannot connect to ${this.hostHeader}` };
    }
    const confirmS = await this.confirm(conn, path);
    return { reused: false, connectS, confirmS, error: confirmS === null ? `no keep-alive answer to GET ${path} on a new connection` : null };
  }

  /** Sends GET `path` on an idle connection; resolves with its round trip once the connection is back in the pool, or null. */
  private confirm(conn: Conn, path: string): Promise<number | null> {
    const url = serverUrl(this.base.href, path);
    const head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n${this.authorization ? `Authorization: ${this.authorization}\r\n` : ''}\r\n`;
    const reader = new HttpResponseReader(4096);
    const t0 = this.now();
    return new Promise((resolve) => {
      const timer = setTimeout(() => end(false), Math.min(this.timeoutNs / 1e6, 10_000));
      const end = (ok: boolean) => {
        clearTimeout(timer);
        if (ok) {
          const roundTripS = (this.now() - t0) / 1e9;
          this.release(conn, reader);
          return resolve(this.idle[this.idle.length - 1] === conn ? roundTripS : null);
        }
        this.discard(conn);
        resolve(null);
      };
      conn.user = {
        bytes: (buf, n) => {
          reader.feed(buf, 0, n);
          if (reader.state === 'done') end(true);
          else if (reader.state === 'failed') end(false);
        },
        eof: () => end(reader.eof()),
        error: () => end(false),
      };
      conn.socket.write(head, 'latin1');
    });
  }

  /** The most recently used idle connection still alive, within the server's keep-alive hint and idle less than `maxIdleNs`. */
  private takeIdle(maxIdleNs = Infinity): Conn | null {
    const now = this.now();
    while (this.idle.length > 0) {
      const c = this.idle.pop()!;
      if (!c.gone && now < c.idleUntilNs && now - c.idleSinceNs < maxIdleNs) return c;
      this.discard(c);
    }
    return null;
  }

  private connect(): Conn {
    const conn: Conn = { socket: null as unknown as net.Socket, user: null, served: 0, idleUntilNs: Infinity, idleSinceNs: 0, gone: false };
    if (this.secure) {
      conn.socket = tls.connect({ host: this.host, port: this.port, servername: net.isIP(this.host) ? undefined : this.host, ALPNProtocols: ['http/1.1'] });
      conn.socket.on('data', (b: Buffer) => {
        if (conn.user) conn.user.bytes(b, b.length);
        else this.discard(conn);
      });
    } else {
      conn.socket = net.connect({
        host: this.host,
        port: this.port,
        onread: {
          buffer: this.readBuffer,
          callback: (n: number, buf: Uint8Array) => {
            if (conn.user) conn.user.bytes(buf, n);
            else this.discard(conn); // bytes on an idle connection: it is out of step, never reuse it
            return true;
          },
        },
      });
    }
    conn.socket.setNoDelay(true);
    conn.socket.on('end', () => {
      conn.gone = true;
      conn.user?.eof();
    });
    conn.socket.on('error', (e) => {
      conn.gone = true;
      conn.user?.error(e);
    });
    conn.socket.on('close', () => {
      conn.gone = true;
      const i = this.idle.indexOf(conn);
      if (i >= 0) this.idle.splice(i, 1);
      conn.user?.eof();
    });
    return conn;
  }

  /** After a complete response: back to the pool when the server allows reuse, else closed. */
  private release(conn: Conn, reader: HttpResponseReader): void {
    conn.user = null;
    if (conn.gone || !reader.reusable || this.idle.length >= MAX_IDLE_CONNECTIONS) return this.discard(conn);
    // As node:http's agent: a `Keep-Alive: timeout=N` hint retires the connection 1 s before the
    // server would (N = 1 means never reuse); without a hint the stale-connection retry covers it.
    const hintS = reader.keepAliveTimeoutS;
    if (hintS !== null && hintS <= 1) return this.discard(conn);
    conn.served++;
    conn.idleSinceNs = this.now();
    conn.idleUntilNs = hintS === null ? Infinity : conn.idleSinceNs + (hintS - 1) * 1e9;
    this.idle.push(conn);
  }

  private discard(conn: Conn): void {
    conn.user = null;
    conn.gone = true;
    conn.socket.destroy();
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
      const now = this.now();
      for (const a of [...this.active]) {
        if (now - a.sentNs > this.timeoutNs) a.finish('timeout', `no complete answer within the request timeout of ${this.options.requestTimeoutS}s`);
        else if (now - a.lastReadNs > this.stallNs) a.finish('stall', `stalled: no bytes for ${this.options.stallTimeoutS}s`);
      }
    }, periodMs);
    this.sweeper.unref();
  }
}

/** Copies `from` into the larger `to` and returns `to`. */
function grow<T extends Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}

/** A connection reset or broken pipe before any response byte: what a close crossing a request looks like. */
function isCloseCrossing(e: Error): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

function describeError(e: Error): string {
  const code = (e as NodeJS.ErrnoException).code;
  return code ? `${code}: ${e.message}` : e.message;
}
