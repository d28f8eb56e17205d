// A small real OpenAI-style streaming server for the load tests (not the simulated engine): streams
// `max_tokens` chunks at a fixed interval with fluidcap_emit_ns, and misbehaves on request through
// the `fault` query parameter or the options (stall, 429/500, malformed SSE, crash, split events).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EmitterOptions {
  tokenIntervalMs?: number;
  /** Applied to every request unless the request's model names another fault (`model: "fault:stall"`). */
  fault?: Fault;
  lineEnd?: '\n' | '\r\n';
  withMetrics?: boolean;
  /** Usage on every chunk (vLLM continuous_usage_stats) */
  continuousUsage?: boolean;
  /** Each chunk's fluidcap_emit_ns is stated this much earlier than it was sent: a known receive − emit error. */
  emitSkewMs?: number;
}

export type Fault = 'none' | 'stall' | '429' | '500' | 'malformed' | 'crash-mid' | 'split' | 'no-done' | 'error-event' | 'json';

export interface Emitter {
  url: string;
  requests: { body: Record<string, unknown>; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

export async function startEmitter(o: EmitterOptions = {}): Promise<Emitter> {
  const requests: Emitter['requests'] = [];
  const sockets = new Set<import('node:net').Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const nl = o.lineEnd ?? '\n';
  const server = http.createServer((req, res) => {
    if (req.url === '/metrics') {
      if (!o.withMetrics) {
        res.writeHead(404).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('# HELP vllm:num_requests_running x\nvllm:num_requests_running{model="m"} 3\nvllm:num_requests_waiting{model="m"} 1\nvllm:kv_cache_usage_perc{model="m"} 0.25\nvllm:num_preemptions_total{model="m"} 0\n');
      return;
    }
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
      requests.push({ body, headers: req.headers });
      const model = String(body.model ?? '');
      const fault: Fault = model.startsWith('fault:') ? (model.slice(6) as Fault) : (o.fault ?? 'none');
      if (fault === '429' || fault === '500') {
        res.writeHead(Number(fault), { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: fault === '429' ? 'rate limited' : 'engine exploded', code: Number(fault) } }));
        return;
      }
      const n = Number(body.max_tokens ?? 1);
      const promptTokens = Array.isArray(body.prompt) ? body.prompt.length : String(body.prompt ?? (body.messages as { content: string }[])?.[0]?.content ?? '').split(/\s+/).filter(Boolean).length;
      const chat = Array.isArray(body.messages);
      if (fault === 'json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ text: 'x '.repeat(n), finish_reason: 'length' }], usage: { prompt_tokens: promptTokens, completion_tokens: n } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const chunk = (k: number, last: boolean) => {
        const choice = chat ? { index: 0, delta: { content: ` t${k}` }, finish_reason: last ? 'length' : null } : { index: 0, text: ` t${k}`, finish_reason: last ? 'length' : null };
        const obj: Record<string, unknown> = { id: 'x', object: 'text_completion', choices: [choice], fluidcap_emit_ns: (process.hrtime.bigint() - BigInt(Math.round((o.emitSkewMs ?? 0) * 1e6))).toString() };
        if (o.continuousUsage) obj.usage = { prompt_tokens: promptTokens, completion_tokens: k + 1 };
        return `data: ${JSON.stringify(obj)}${nl}${nl}`;
      };
      const step = () => {
        if (fault === 'stall' && i === 2) return; // never sends another byte
        if (fault === 'crash-mid' && i === 2) {
          req.socket.destroy();
          return;
        }
        if (i < n) {
          let text = chunk(i, i === n - 1);
          if (fault === 'malformed' && i === 1) text = `data: {"choices": [oops${nl}${nl}`;
          if (fault === 'error-event' && i === 1) text = `data: {"error": {"message": "out of memory"}}${nl}${nl}`;
          i++;
          const next = () => {
            const t = setTimeout(() => {
              timers.delete(t);
              step();
            }, o.tokenIntervalMs ?? 5);
            timers.add(t);
          };
          if (fault === 'split') {
            // One event written in three pieces with pauses in between. The next event waits for
            // the last piece: timed from the first, a late timer on a busy machine wrote it inside
            // this one.
            const a = text.slice(0, 7);
            const b = text.slice(7, 30);
            const c = text.slice(30);
            res.write(a);
            const t1 = setTimeout(() => {
              timers.delete(t1);
              res.write(b);
              const t2 = setTimeout(() => {
                timers.delete(t2);
                res.write(c);
                next();
              }, 2);
              timers.add(t2);
            }, 2);
            timers.add(t1);
          } else {
            res.write(text);
            next();
          }
          return;
        }
        if (!o.continuousUsage) res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: promptTokens, completion_tokens: n } })}${nl}${nl}`);
        if (fault !== 'no-done') res.write(`data: [DONE]${nl}${nl}`);
        res.end();
      };
      step();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
