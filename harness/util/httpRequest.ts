// One HTTP request to an engine, outside the load's hot path (readiness, liveness, the model list,
// calibration). WHATWG fetch refuses the ports its spec calls bad (6000, 6665-6669, 10080 among
// those a server may sit on) with a bare "fetch failed", so an engine on such a port would never
// look ready; node:http has no such list and names the socket's own error (ECONNREFUSED ...).
import http from 'node:http';
import https from 'node:https';

export interface HttpAnswer {
  status: number;
  text: string;
}

export interface HttpRequestOptions {
  method?: 'GET' | 'POST';
  /** A JSON body (sent with its content type and length). */
  body?: string | null;
  apiKey?: string;
  /** The whole exchange's limit, from asking to the body's last byte. */
  timeoutS: number;
}

/** Sends one request on a fresh connection (a pooled one the server closed while idle would fail it) and reads the whole answer. */
export function httpRequest(url: string | URL, opts: HttpRequestOptions): Promise<HttpAnswer> {
  const u = typeof url === 'string' ? new URL(url) : url;
  const transport = u.protocol === 'https:' ? https : http;
  const body = opts.body ?? null;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (body !== null) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    const req = transport.request(u, { method: opts.method ?? 'GET', headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer from ${u.origin} within ${opts.timeoutS} s`)), opts.timeoutS * 1000);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body ?? undefined);
  });
}
