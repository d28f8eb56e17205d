// A configurable misbehaving OpenAI-compatible streaming server for tests: real TCP on 127.0.0.1
// (ephemeral port), HTTP/1.1 written by hand so that framing, keep-alive and usage reporting can
// each be bent one way at a time, as real servers and gateways bend them. It knows the true number
// of tokens it sent in every event and stamps each event with `fluidcap_emit_ns` (this process's
// monotonic clock), so tests can check token counts, TPOT and client timing exactly. Plain HTTP,
// or HTTPS when given a key and certificate.
//
// Every response streams `max_tokens` tokens (token k's text is " ü<k>", two UTF-8 bytes in each)
// on /v1/completions or /v1/chat/completions, one event per `tokenIntervalMs`; `/health` answers
// 200 and anything else 404. Usage follows `stream_options.include_usage` unless the behaviour
// says otherwise.
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';

/** One way of misbehaving; 'none' is a well-behaved vLLM-like server. */
export type Misbehaviour =
  | 'none'
  /** CRLF line ends in the event stream. */
  | 'crlf'
  /** SSE comment lines (`: ping`) between and inside event blocks. */
  | 'comments'
  /** An empty `data:` event before every event, as some proxies send to keep a stream alive. */
  | 'empty-data-keepalive'
  /** `data:{...}` without the optional space. */
  | 'data-no-space'
  /** Each event written in three pieces 1 ms apart, split inside a UTF-8 character and inside `data:`. */
  | 'split-anywhere'
  /** Three events in one write (tokens still made one per interval). */
  | 'coalesced'
  /** No `data: [DONE]`; the last content event has a finish_reason. */
  | 'no-done'
  /** No chunked encoding, no Content-Length: the body ends when the server closes the connection. */
  | 'close-delimited'
  /** Chunked, with `Connection: close`, and the connection closed after the response. */
  | 'connection-close'
  /** Keep-alive, idle connections closed after `idleCloseMs` without a hint. */
  | 'idle-close'
  /** As idle-close, with a `Keep-Alive: <keepAliveHint>` header on every response. */
  | 'idle-close-hinted'
  /** Every 5th event carries two tokens (sent when its second token is made: a double gap). */
  | 'two-token-events'
  /** The first content event carries `usage` with `completion_tokens: 0` (as some gateways send). */
  | 'usage-first-chunk'
  /** Every content event carries usage counting only its own tokens; no final total (1 or 2 each: two-token events as above). */
  | 'usage-deltas'
  /** A content event after `data: [DONE]`. */
  | 'content-after-done'
  /** `Content-Type: Text/Event-Stream; Charset=UTF-8`. */
  | 'mixed-case-content-type'
  /** The final usage says `completion_tokens: lieCompletionTokens`. */
  | 'lying-usage'
  /** vLLM's continuous_usage_stats when asked for: cumulative usage on every event; two-token events as above. */
  | 'continuous-usage';

export interface TestServerOptions {
  behaviour?: Misbehaviour;
  /** Time between tokens (default 20 ms). */
  tokenIntervalMs?: number;
  /** idle-close*: how long a connection may sit idle after a response (default 170 ms). */
  idleCloseMs?: number;
  /**
   * idle-close-hinted: the Keep-Alive header value (default `timeout=5`, over-promising the real
   * close as whole seconds must; Node's agent keeps a socket for the hint minus 1 s, so `timeout=1`
   * means it never reuses one).
   */
  keepAliveHint?: string;
  /** lying-usage: the completion_tokens reported (default 1e9). */
  lieCompletionTokens?: number;
  /** Serve HTTPS with this key and certificate (PEM) instead of plain HTTP. */
  tls?: { key: string; cert: string };
}

/** What the server did for one request, the ground truth tests compare the client with. */
export interface ServedRequest {
  path: string;
  body: Record<string, unknown>;
  /** Which TCP connection (1, 2, ...) and whether it had served a request before. */
  connection: number;
  reusedConnection: boolean;
  /** Tokens in each content event, in order (only events before any [DONE]). */
  eventTokens: number[];
  /** fluidcap_emit_ns of each content event. */
  emitNs: string[];
  tokensSent: number;
  completed: boolean;
}

export interface TestServer {
  url: string;
  served: ServedRequest[];
  /** Requests that reached a connection already past its idle close and were dropped unread. */
  droppedUnread: number;
  connections: number;
  close(): Promise<void>;
}

const TOKEN = (k: number) => ` ü${k}`;

/** Starts the server on an ephemeral port of 127.0.0.1. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const behaviour = options.behaviour ?? 'none';
  const intervalMs = options.tokenIntervalMs ?? 20;
  const idleCloseMs = options.idleCloseMs ?? 170;
  const served: ServedRequest[] = [];
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const state = { droppedUnread: 0, connections: 0 };
  const later = (ms: number, f: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      f();
    }, ms);
    timers.add(t);
  };

  const onConnection = (socket: net.Socket) => {
    const connection = ++state.connections;
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => {
      sockets.delete(socket);
      if (idleTimer) clearTimeout(idleTimer);
    });
    socket.on('error', () => {});
    let pending: Buffer = Buffer.alloc(0);
    let busy = false;
    let requestsHere = 0;
    let idleSinceMs: number | null = null;
    let idleTimer: NodeJS.Timeout | null = null;

    const onIdle = () => {
      idleSinceMs = performance.now();
      if (behaviour !== 'idle-close' && behaviour !== 'idle-close-hinted') return;
      // The close itself comes a little after the idle limit; a request arriving in between finds
      // a server that has already decided to close, as when a close and a request cross on the wire.
      idleTimer = setTimeout(() => socket.end(), idleCloseMs + 150);
    };

    const tryRequest = () => {
      if (busy) return;
      const headEnd = pending.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = pending.subarray(0, headEnd).toString('latin1');
      const [requestLine, ...headerLines] = head.split('\r\n');
      const headers = new Map(headerLines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const length = Number(headers.get('content-length') ?? 0);
      if (pending.length < headEnd + 4 + length) return;
      const bodyText = pending.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
      pending = pending.subarray(headEnd + 4 + length);
      busy = true;
      const [method, path] = requestLine.split(' ');
      const reused = requestsHere++ > 0;
      respond(socket, method, path, bodyText, headers, connection, reused, () => {
        busy = false;
        onIdle();
        tryRequest();
      });
    };

    socket.on('data', (b: Buffer) => {
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = null;
      if ((behaviour === 'idle-close' || behaviour === 'idle-close-hinted') && idleSinceMs !== null && !busy && pending.length === 0 && performance.now() - idleSinceMs >= idleCloseMs) {
        state.droppedUnread++;
        socket.destroy();
        return;
      }
      idleSinceMs = null;
      pending = pending.length === 0 ? b : Buffer.concat([pending, b]);
      tryRequest();
    });
  };
  const server = options.tls ? tls.createServer(options.tls, onConnection) : net.createServer(onConnection);

  function respond(
    socket: net.Socket,
    method: string,
    path: string,
    bodyText: string,
    reqHeaders: Map<string, string>,
    connection: number,
    reused: boolean,
    done: () => void,
  ): void {
    const closeAfter = behaviour === 'close-delimited' || behaviour === 'connection-close' || reqHeaders.get('connection')?.toLowerCase() === 'close';
    const simple = (status: number, text: string) => {
      socket.write(`HTTP/1.1 ${status} ${status === 200 ? 'OK' : 'Not Found'}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${closeAfter ? 'connection: close\r\n' : ''}\r\n${text}`);
      if (closeAfter) socket.end();
      else done();
    };
    if (method === 'GET' && path === '/health') return simple(200, 'ok');
    if (method !== 'POST' || (path !== '/v1/completions' && path !== '/v1/chat/completions')) return simple(404, 'not found');
    const body = JSON.parse(bodyText) as Record<string, unknown>;
    const chat = path === '/v1/chat/completions';
    const record: ServedRequest = { path, body, connection, reusedConnection: reused, eventTokens: [], emitNs: [], tokensSent: 0, completed: false };
    served.push(record);
    const maxTokens = Number(body.max_tokens ?? 16);
    // Token-id prompts count their ids; text counts whitespace-separated words, as the simulated engine does.
    const promptText = chat ? (body.messages as { content?: unknown }[] | undefined)?.map((m) => String(m.content ?? '')).join(' ') ?? '' : String(body.prompt ?? '');
    const promptTokens = Array.isArray(body.prompt) ? body.prompt.length : promptText.split(/\s+/).filter(Boolean).length;
    const streamOptions = (body.stream_options ?? {}) as { include_usage?: boolean; continuous_usage_stats?: boolean };
    const includeUsage = streamOptions.include_usage === true;
    const continuous = behaviour === 'continuous-usage' && streamOptions.continuous_usage_stats === true;
    const nl = behaviour === 'crlf' ? '\r\n' : '\n';
    const dataField = behaviour === 'data-no-space' ? 'data:' : 'data: ';
    const chunked = behaviour !== 'close-delimited';

    const headerLines = [
      'HTTP/1.1 200 OK',
      `content-type: ${behaviour === 'mixed-case-content-type' ? 'Text/Event-Stream; Charset=UTF-8' : 'text/event-stream'}`,
      'cache-control: no-cache',
    ];
    if (chunked) headerLines.push('transfer-encoding: chunked');
    if (closeAfter) headerLines.push('connection: close');
    else headerLines.push('connection: keep-alive');
    if (behaviour === 'idle-close-hinted') headerLines.push(`keep-alive: ${options.keepAliveHint ?? 'timeout=5'}`);
    socket.write(headerLines.join('\r\n') + '\r\n\r\n');

    const writeBody = (text: string | Buffer) => {
      const b = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
      if (b.length === 0 || socket.destroyed) return;
      socket.write(chunked ? Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]) : b);
    };
    const finish = () => {
      record.completed = true;
      if (chunked) socket.write('0\r\n\r\n');
      if (closeAfter) socket.end();
      else done();
    };
    const event = (obj: Record<string, unknown> | '[DONE]') => {
      const data = obj === '[DONE]' ? obj : JSON.stringify(obj);
      const comment = behaviour === 'comments' ? `: ping${nl}` : '';
      const keepAlive = behaviour === 'empty-data-keepalive' ? `${dataField}${nl}${nl}` : '';
      return `${keepAlive}${comment}${dataField}${data}${nl}${comment}${nl}`;
    };
    const usageObj = (completion: number) => ({ prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion });
    const contentEvent = (text: string, finishReason: string | null) => {
      const choice = chat ? { index: 0, delta: { content: text }, finish_reason: finishReason } : { index: 0, text, finish_reason: finishReason };
      return { id: 'cmpl-test', object: chat ? 'chat.completion.chunk' : 'text_completion', created: 0, model: String(body.model ?? ''), choices: [choice] } as Record<string, unknown>;
    };

    let made = 0; // tokens made so far
    let eventsSent = 0;
    let batch = ''; // coalesced: events waiting for their shared write
    const multiToken = behaviour === 'two-token-events' || behaviour === 'usage-deltas' || behaviour === 'continuous-usage';
    const step = () => {
      if (socket.destroyed) return;
      if (made >= maxTokens) return end();
      const eventNo = eventsSent + 1;
      let tokens = multiToken && eventNo % 5 === 0 && made + 2 <= maxTokens ? 2 : 1;
      // A two-token event is sent when its second token is made: one more interval of silence.
      const emit = () => {
        let text = '';
        for (let j = 0; j < tokens; j++) text += TOKEN(made + j);
        made += tokens;
        eventsSent++;
        const last = made >= maxTokens;
        const obj = contentEvent(text, last ? 'length' : null);
        if (behaviour === 'usage-first-chunk' && eventNo === 1) obj.usage = usageObj(0);
        if (behaviour === 'usage-deltas') obj.usage = usageObj(tokens);
        if (continuous) obj.usage = usageObj(made);
        const emitNs = process.hrtime.bigint().toString();
        obj.fluidcap_emit_ns = emitNs;
        record.eventTokens.push(tokens);
        record.emitNs.push(emitNs);
        record.tokensSent += tokens;
        const text2 = event(obj);
        if (behaviour === 'coalesced') {
          batch += text2;
          if (eventsSent % 3 === 0 || last) {
            writeBody(batch);
            batch = '';
          }
        } else if (behaviour === 'split-anywhere') {
          const bytes = Buffer.from(text2, 'utf8');
          const inChar = bytes.indexOf(Buffer.from('ü')) + 1; // between the two bytes of ü
          writeBody(bytes.subarray(0, 3)); // "dat"
          later(1, () => writeBody(bytes.subarray(3, inChar)));
          later(2, () => writeBody(bytes.subarray(inChar)));
        } else writeBody(text2);
        later(intervalMs, step);
      };
      later(intervalMs * tokens, emit);
    };
    const end = () => {
      const tail: string[] = [];
      if (behaviour === 'lying-usage') tail.push(event({ id: 'cmpl-test', choices: [], usage: usageObj(options.lieCompletionTokens ?? 1e9) }));
      else if (behaviour !== 'usage-deltas' && (includeUsage || behaviour === 'usage-first-chunk')) tail.push(event({ id: 'cmpl-test', choices: [], usage: usageObj(made) }));
      if (behaviour !== 'no-done') tail.push(event('[DONE]'));
      if (behaviour === 'content-after-done') tail.push(event({ ...contentEvent(TOKEN(made), null), fluidcap_emit_ns: process.hrtime.bigint().toString() }));
      // split-anywhere writes its last pieces up to 2 ms after the event: the tail waits for them.
      later(behaviour === 'split-anywhere' ? 3 : 0, () => {
        writeBody(tail.join(''));
        finish();
      });
    };
    step();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    served,
    get droppedUnread() {
      return state.droppedUnread;
    },
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
