// The simulated engine's OpenAI-compatible HTTP server (node:http). `startSimServer` runs it in
// process for tests and for `fluidcap sim serve`. Tokens stream as SSE, one chunk per request per
// iteration (with --stream vllm some without text, some merged with the next), each stamped with
// `fluidcap_emit_ns` (CLOCK_MONOTONIC) at the moment it is written.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createWriteStream, openSync, type WriteStream } from 'node:fs';
import { UserError } from '../util/errors.ts';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { resolveSimConfig, type SimConfig, type SimServerOptions } from './config.ts';
import { engineConfigOf, type IterationTrace } from './engine.ts';
import { createEngine } from './pipeline.ts';
import { faultPlanner, type FaultPlan } from './faults.ts';
import { errorBody, parseCompletionRequest, type ApiError, type ParsedRequest } from './openaiRequest.ts';
import { fireAt } from './preciseTimer.ts';
import { strictRefusal } from './strictOpenai.ts';
import { newSimRequest, type SimRequest } from './request.ts';
import type { ScheduledBatch, TokenEvent } from './scheduler.ts';
import { naturalLength, outputToken, wordIds, countWords, tokenDraw } from './text.ts';
import { createVllmMetrics } from './vllmMetrics.ts';
import { receivedRequestLine } from './requestLog.ts';
import { reserveDescriptors } from '../util/descriptorTable.ts';

/** What `/version` answers and the start-up line names. */
const SIM_VERSION = 'fluidcap-sim-0.1.0';

export type { SimServerOptions } from './config.ts';

// What startSimServer returns.
export interface SimServerHandle {
  url: string;
  port: number;
  config: SimConfig;
  /** Resolves when the engine is ready (after --start-delay). */
  ready: Promise<void>;
  /** Resolves with why the server stopped: `closed` by close(), `crashed` by --fault-crash-after. */
  done: Promise<'closed' | 'crashed'>;
  close(): Promise<void>;
}

// Thrown when --fault-exit-at-start makes start-up fail the way an out-of-memory engine does.
export class SimStartupError extends Error {
  override name = 'SimStartupError';
}

// Opened before listening, so a path that cannot be written is a start-up error, not an unhandled
// 'error' event after "listening"; a later write failure (disk full) stops tracing with a log line.
function openTrace(path: string, log: (line: string) => void): WriteStream {
  let fd: number;
  try {
    fd = openSync(path, 'w');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new UserError(`--trace-iterations: cannot write ${JSON.stringify(path)} (${e.code ?? e.message})`);
  }
  const stream = createWriteStream(path, { fd });
  stream.on('error', (err) => log(`fluidcap sim: iteration trace ${path} stopped: ${err.message}`));
  return stream;
}

// A listen failure in words: which address and port, and what to change.
function listenProblem(err: NodeJS.ErrnoException, host: string, port: number): string {
  switch (err.code) {
    case 'EADDRINUSE':
      return `port ${port} on ${host} is already in use (pick another --port, or --port 0 for a free one)`;
    case 'EACCES':
      return `no permission to listen on port ${port} on ${host} (ports below 1024 need privileges; pick another --port)`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EINVAL':
      return `--host ${JSON.stringify(host)} is not an address of this machine (${err.code}); use 127.0.0.1, 0.0.0.0 or one of its interface addresses`;
    default:
      return `cannot listen on ${host}:${port}: ${err.message}`;
  }
}

// Per-HTTP-request callback for one engine request's tokens; returns the emit time when it wrote.
type TokenHandler = (event: TokenEvent) => bigint | null;

const MAX_BODY_BYTES = 64 * 1024 * 1024;

// Starts the server (port 0 picks a free one) and resolves once it listens. Rejects with UserError
// on bad options and SimStartupError under --fault-exit-at-start.
export async function startSimServer(options: SimServerOptions = {}): Promise<SimServerHandle> {
  const config = resolveSimConfig(options);
  const log = options.log ?? (() => {});
  // A longer interval would overflow Node's timer and log every millisecond instead.
  if (config.logStatsIntervalS * 1000 > 2 ** 31 - 1) {
    throw new UserError(`--log-stats-interval must be at most ${(2 ** 31 - 1) / 1000} seconds (Node's timer limit), got ${config.logStatsIntervalS}`);
  }
  if (config.faults.exitAtStart) {
    throw new SimStartupError(
      `torch.OutOfMemoryError: CUDA out of memory while loading ${config.model.name} on ${config.gpu.name} (simulated by --fault-exit-at-start)`,
    );
  }
  const created = Math.floor(Date.now() / 1000);
  const handlers = new Map<SimRequest, TokenHandler>();
  const arrivalNs = new Map<SimRequest, bigint>();
  const lastTokenNs = new Map<SimRequest, bigint>();
  let traceStream: WriteStream | null = config.traceIterations ? openTrace(config.traceIterations, log) : null;
  let seq = 0;
  let completedRequests = 0;
  let promptTokensSinceLog = 0;
  let generationTokensSinceLog = 0;
  let crashed = false;
  let closed = false;
  let resolveDone: (why: 'closed' | 'crashed') => void = () => {};
  const done = new Promise<'closed' | 'crashed'>((r) => (resolveDone = r));

  const metrics = createVllmMetrics(config.servedModelName, {
    running: () => engine.scheduler.running.length,
    waiting: () => engine.scheduler.waiting.length,
    kvUsedFraction: () => engine.scheduler.kv.usedFraction,
  }, config.metricsNaming);

  const sink = (events: TokenEvent[], batch: ScheduledBatch) => {
    const nowNs = process.hrtime.bigint();
    for (const r of batch.firstScheduled) {
      metrics.prefixCacheQueries?.inc(r.promptTokens);
      const a = arrivalNs.get(r);
      if (a !== undefined) metrics.queueTime.observe(Number(nowNs - a) / 1e9);
    }
    const prefillTokens = batch.prefills.reduce((s, p) => s + p.chunkTokens, 0);
    metrics.promptTokens.inc(prefillTokens);
    metrics.generationTokens.inc(events.length);
    metrics.iterationTokens.observe(prefillTokens + batch.decodes.length);
    if (batch.preempted.length) metrics.preemptions.inc(batch.preempted.length);
    promptTokensSinceLog += prefillTokens;
    generationTokensSinceLog += events.length;
    let firstWriteNs: bigint | null = null;
    let lastWriteNs: bigint | null = null;
    for (const ev of events) {
      const a = arrivalNs.get(ev.req);
      if (a !== undefined) {
        if (ev.tokenIndex === 0) metrics.ttft.observe(Number(nowNs - a) / 1e9);
        else {
          const prev = lastTokenNs.get(ev.req) ?? a;
          metrics.tpot.observe(Number(nowNs - prev) / 1e9);
          metrics.interTokenLatency.observe(Number(nowNs - prev) / 1e9);
        }
        lastTokenNs.set(ev.req, nowNs);
        if (ev.finished) {
          metrics.e2e.observe(Number(nowNs - a) / 1e9);
          metrics.requestSuccess.inc(1, { finished_reason: ev.req.endReason });
          metrics.promptTokensPerRequest.observe(ev.req.promptTokens);
          metrics.generationTokensPerRequest.observe(ev.req.generatedTokens);
        }
      }
      const handler = handlers.get(ev.req);
      const emitted = handler ? handler(ev) : null;
      if (emitted !== null) {
        if (firstWriteNs === null) firstWriteNs = emitted;
        lastWriteNs = emitted;
      }
      if (ev.finished) {
        handlers.delete(ev.req);
        arrivalNs.delete(ev.req);
        lastTokenNs.delete(ev.req);
      }
    }
    return firstWriteNs !== null && lastWriteNs !== null ? { firstWriteNs, lastWriteNs } : undefined;
  };

  const onIteration = (t: IterationTrace) => {
    metrics.iterationLateness.observe(Number(t.actualStartNs - t.plannedStartNs) / 1e9);
    if (traceStream) {
      traceStream.write(
        JSON.stringify({
          index: t.index,
          plannedStartNs: String(t.plannedStartNs),
          actualStartNs: String(t.actualStartNs),
          durationNs: String(t.durationNs),
          actualEndNs: t.actualEndNs === undefined ? null : String(t.actualEndNs),
          firstWriteNs: t.firstWriteNs === undefined ? null : String(t.firstWriteNs),
          lastWriteNs: t.lastWriteNs === undefined ? null : String(t.lastWriteNs),
          prefillTokens: t.prefillTokens,
          prefills: t.prefills,
          decodes: t.decodes,
          preempted: t.preempted,
        }) + '\n',
      );
    }
  };

  const engine = createEngine(
    engineConfigOf(config),
    { nowNs: () => process.hrtime.bigint(), fireAt, defer: (fn) => setImmediate(fn) },
    sink,
    onIteration,
  );

  const planFaults = faultPlanner(config.faults);

  const requestFinished = () => {
    completedRequests += 1;
    if (config.faults.crashAfter !== null && completedRequests >= config.faults.crashAfter && !crashed) {
      crashed = true;
      // Let the last response's bytes leave before the "process" dies.
      setImmediate(() => {
        log(`fluidcap sim: simulated crash after ${completedRequests} requests (--fault-crash-after ${config.faults.crashAfter})`);
        void shutdown('crashed');
      });
    }
  };

  const sendJson = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const sendError = (res: ServerResponse, err: ApiError) => sendJson(res, err.status, errorBody(err));

  const handleGenerate = (api: 'completions' | 'chat', body: unknown, res: ServerResponse) => {
    const refused = config.strictOpenai ? strictRefusal(api, body) : null;
    if (refused !== null) return sendJson(res, 400, refused);
    const parsed = parseCompletionRequest(api, body, {
      servedModelName: config.servedModelName,
      maxModelLen: config.maxModelLen,
      vocabSize: config.model.vocabSize,
    });
    if ('status' in parsed) return sendError(res, parsed);
    if (config.logRequests) log(receivedRequestLine(`${api === 'chat' ? 'chatcmpl' : 'cmpl'}-${seq}`, body, config.model.vocabSize));
    const fault = planFaults();
    if (fault.httpStatus === 429) {
      return sendError(res, { status: 429, type: 'RateLimitError', message: 'Too many requests (simulated by --fault-http-429-fraction)' });
    }
    if (fault.httpStatus === 500) {
      return sendError(res, { status: 500, type: 'InternalServerError', message: 'Internal server error (simulated by --fault-http-500-fraction)' });
    }
    serveGeneration(parsed, fault, res);
  };

  const serveGeneration = (req: ParsedRequest, fault: FaultPlan, res: ServerResponse) => {
    const id = (req.api === 'chat' ? 'chatcmpl-' : 'cmpl-') + randomBytes(12).toString('hex');
    const object = req.api === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const head = `{"id":"${id}","object":"${object}","created":${created},"model":${JSON.stringify(config.servedModelName)},"choices":[`;
    const usageNull = req.includeUsage ? ',"usage":null' : '';
    const nowNs = process.hrtime.bigint();
    const engineReqs = req.prompts.map((p) => {
      const natural = Math.max(req.minTokens, naturalLength(p.seed));
      const stops = !req.ignoreEos && natural < req.maxTokens;
      const r = newSimRequest(seq++, p.promptTokens, stops ? natural : req.maxTokens, stops ? 'stop' : 'length');
      arrivalNs.set(r, nowNs);
      return r;
    });
    const texts = engineReqs.map(() => [] as string[]);
    // Per choice: tokens generated so far, whether chat's role chunk went out, and (--stream vllm)
    // the text of tokens streamed without it and of tokens held for the next chunk.
    const counts = engineReqs.map(() => 0);
    const roleSent = engineReqs.map(() => false);
    const deferred = engineReqs.map(() => '');
    const heldText = engineReqs.map(() => '');
    let remaining = engineReqs.length;
    let finishedAll = false;
    const malformedAt = fault.malformed ? Math.max(1, Math.floor(engineReqs[0].targetOutputTokens / 2)) : -1;
    let stallUntilNs: bigint | null = null;
    const held: Array<() => void> = [];
    let stallTimer: NodeJS.Timeout | null = null;

    const usageJson = () => {
      const promptTokens = engineReqs.reduce((s, r) => s + r.promptTokens, 0);
      const completionTokens = engineReqs.reduce((s, r) => s + r.generatedTokens, 0);
      return `{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens}}`;
    };

    if (req.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.flushHeaders();
    }

    const finishStream = () => {
      if (req.includeUsage) {
        writeNow(res, `data: {"id":"${id}","object":"${object}","created":${created},"model":${JSON.stringify(config.servedModelName)},"choices":[],"usage":${usageJson()},"fluidcap_emit_ns":"${process.hrtime.bigint()}"}\n\n`);
      }
      res.end('data: [DONE]\n\n');
    };

    // vLLM's continuous_usage_stats: each chunk states its choice's running count.
    const usageOf = (choice: number, completion: number) => {
      if (!req.continuousUsage) return usageNull;
      const p = engineReqs[choice].promptTokens;
      return `,"usage":{"prompt_tokens":${p},"total_tokens":${p + completion},"completion_tokens":${completion}}`;
    };

    const writeToken = (choice: number, ev: TokenEvent, text: string): bigint => {
      const finish = ev.finished ? `"${ev.req.endReason}"` : 'null';
      let emitNs: bigint;
      if (req.api === 'chat') {
        if (!roleSent[choice]) {
          roleSent[choice] = true;
          emitNs = process.hrtime.bigint();
          writeNow(res, `data: ${head}{"index":${choice},"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]${usageOf(choice, 0)},"fluidcap_emit_ns":"${emitNs}"}\n\n`);
        }
        emitNs = process.hrtime.bigint();
        writeNow(res, `data: ${head}{"index":${choice},"delta":{"content":${JSON.stringify(text)}},"logprobs":null,"finish_reason":${finish}}]${usageOf(choice, counts[choice])},"fluidcap_emit_ns":"${emitNs}"}\n\n`);
      } else {
        emitNs = process.hrtime.bigint();
        writeNow(res, `data: ${head}{"index":${choice},"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${finish},"stop_reason":null}]${usageOf(choice, counts[choice])},"fluidcap_emit_ns":"${emitNs}"}\n\n`);
      }
      return emitNs;
    };

    // The text of a token's chunk, or null when the token waits for the next chunk. --stream vllm
    // streams a drawn fraction of tokens with empty text, their words coming with the next text
    // (as vLLM's detokenizer holds back half a UTF-8 character; a last token's word is lost, as a
    // special token's text is), and merges a token into the next chunk when drawn or while the
    // client has not taken the last chunk (as vLLM merges the outputs of steps its API server has
    // not yet sent). A request's last token always goes out.
    const chunkText = (choice: number, ev: TokenEvent, word: string): string | null => {
      const s = config.stream;
      if (s.style !== 'vllm') return word;
      const seed = req.prompts[choice].seed;
      let text: string;
      if (tokenDraw(seed, ev.tokenIndex, 1) < s.emptyTextFraction) {
        deferred[choice] += word;
        text = '';
      } else {
        text = deferred[choice] + word;
        deferred[choice] = '';
      }
      if (!ev.finished && (tokenDraw(seed, ev.tokenIndex, 2) < s.mergeFraction || res.writableLength > 0)) {
        heldText[choice] += text;
        return null;
      }
      const out = heldText[choice] + text;
      heldText[choice] = '';
      return out;
    };

    const onAllFinished = () => {
      finishedAll = true;
      if (req.stream) finishStream();
      else {
        const choices = engineReqs.map((r, i) => {
          const text = texts[i].join('');
          return req.api === 'chat'
            ? { index: i, message: { role: 'assistant', content: text, tool_calls: [] }, logprobs: null, finish_reason: r.endReason, stop_reason: null }
            : { index: i, text, logprobs: null, finish_reason: r.endReason, stop_reason: null, prompt_logprobs: null };
        });
        const body = JSON.stringify({
          id,
          object: req.api === 'chat' ? 'chat.completion' : 'text_completion',
          created,
          model: config.servedModelName,
          choices,
          usage: JSON.parse(usageJson()),
        });
        sendJson(res, 200, body);
      }
      requestFinished();
    };

    engineReqs.forEach((r, choice) => {
      const seed = req.prompts[choice].seed;
      handlers.set(r, (ev) => {
        const text = outputToken(seed, ev.tokenIndex);
        // Only a non-streamed answer needs the whole text; streams keep nothing (less GC work).
        if (!req.stream) texts[choice].push(text);
        if (ev.finished) remaining -= 1;
        const last = remaining === 0;
        if (!req.stream) {
          if (last) onAllFinished();
          return null;
        }
        // Whether a chunk went out (a token held for the next chunk writes nothing).
        const write = (): boolean => {
          counts[choice] += 1;
          let wrote = true;
          if (choice === 0 && ev.tokenIndex === malformedAt) {
            res.write(`data: {"id":"${id}","object":"${object}","choices":[{"index":${choice},"te\n\n`);
          } else {
            const out = chunkText(choice, ev, text);
            if (out !== null) writeToken(choice, ev, out);
            else wrote = false;
          }
          if (last) onAllFinished();
          return wrote;
        };
        if (stallUntilNs !== null && process.hrtime.bigint() < stallUntilNs) {
          held.push(write);
          return null;
        }
        const before = process.hrtime.bigint();
        const wrote = write();
        if (fault.stallS > 0 && stallUntilNs === null && ev.tokenIndex === 0 && choice === 0 && !last) {
          stallUntilNs = before + BigInt(Math.round(fault.stallS * 1e9));
          stallTimer = setTimeout(() => {
            stallTimer = null;
            for (const w of held.splice(0)) if (!res.destroyed) w();
          }, fault.stallS * 1000);
        }
        return wrote ? before : null;
      });
      engine.submit(r);
    });

    res.on('close', () => {
      if (stallTimer) clearTimeout(stallTimer);
      if (finishedAll) return;
      for (const r of engineReqs) {
        handlers.delete(r);
        arrivalNs.delete(r);
        lastTokenNs.delete(r);
        engine.abort(r);
      }
    });
  };

  const handleTokenize = (body: unknown, res: ServerResponse) => {
    const b = (body ?? {}) as { prompt?: unknown; messages?: Array<{ content?: unknown }> };
    let text: string;
    if (typeof b.prompt === 'string') text = b.prompt;
    else if (Array.isArray(b.messages)) text = b.messages.map((m) => (typeof m?.content === 'string' ? m.content : '')).join(' ');
    else return sendError(res, { status: 400, type: 'BadRequestError', message: 'tokenize needs a string prompt or messages' });
    const tokens = wordIds(text, config.model.vocabSize);
    sendJson(res, 200, JSON.stringify({ count: countWords(text), max_model_len: config.maxModelLen, tokens }));
  };

  let ready = false;
  const heldUntilReady: Array<() => void> = [];

  const route = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/health' && !config.strictOpenai) return void res.writeHead(200).end();
    if (method === 'GET' && path === '/metrics') {
      const text = metrics.registry.render();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      return void res.end(text);
    }
    if (method === 'GET' && path === '/version') return sendJson(res, 200, JSON.stringify({ version: SIM_VERSION }));
    if (method === 'GET' && path === '/v1/models') {
      return sendJson(
        res,
        200,
        JSON.stringify({
          object: 'list',
          data: [{ id: config.servedModelName, object: 'model', created, owned_by: 'fluidcap-sim', root: config.model.hfId, parent: null, max_model_len: config.maxModelLen }],
        }),
      );
    }
    const isPost = method === 'POST';
    const apiPath = path === '/v1/completions' ? 'completions' : path === '/v1/chat/completions' ? 'chat' : path === '/tokenize' && !config.strictOpenai ? 'tokenize' : null;
    if (!apiPath) return sendJson(res, 404, JSON.stringify({ detail: 'Not Found' }));
    if (!isPost) return sendJson(res, 405, JSON.stringify({ detail: 'Method Not Allowed' }));
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_BODY_BYTES) {
        sendError(res, { status: 413, type: 'BadRequestError', message: 'request body too large' });
        req.destroy();
      } else parts.push(b);
    });
    req.on('end', () => {
      if (res.headersSent || closed) return;
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8'));
      } catch (err) {
        return sendError(res, { status: 400, type: 'BadRequestError', message: `request body is not valid JSON: ${(err as Error).message}` });
      }
      if (apiPath === 'tokenize') handleTokenize(body, res);
      else handleGenerate(apiPath, body, res);
    });
  };

  const server = createServer((req, res) => {
    if (ready) route(req, res);
    else heldUntilReady.push(() => route(req, res));
  });
  server.keepAliveTimeout = 5000;

  let statsTimer: NodeJS.Timeout | null = null;
  let readyTimer: NodeJS.Timeout | null = null;

  const shutdown = async (why: 'closed' | 'crashed') => {
    if (closed) return;
    closed = true;
    engine.stop();
    if (statsTimer) clearInterval(statsTimer);
    if (readyTimer) clearTimeout(readyTimer);
    const closing = new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    await closing;
    if (traceStream) {
      const s = traceStream;
      traceStream = null;
      await new Promise<void>((r) => s.end(() => r()));
    }
    resolveDone(why);
  };

  // Room for a full batch and as many waiting, so accept() never stalls on the descriptor table
  // growing (a real engine would; ours keeps its token times its scheduler's).
  reserveDescriptors(2 * config.maxNumSeqs + 64);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await shutdown('closed');
    throw new UserError(listenProblem(err as NodeJS.ErrnoException, config.host, config.port), { cause: err });
  }
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${hostForUrl}:${port}`;

  // The start-up lines vLLM prints (engine generation, its config, the chunk budget), so what a
  // launch reads back from a real engine's log is read the same way from the simulated one's.
  if (config.scheduler !== 'llamacpp') {
    const chunked = config.scheduler === 'sarathi';
    const budget = chunked ? config.chunkSize : config.maxNumBatchedTokens;
    log(`INFO fluidcap sim: Initializing a V0 LLM engine (${SIM_VERSION}) with config: model='${config.model.hfId}', served_model_name=${config.servedModelName}, max_num_seqs=${config.maxNumSeqs}, max_num_batched_tokens=${budget}, chunked_prefill_enabled=${chunked ? 'True' : 'False'}`);
    if (chunked) log(`INFO fluidcap sim: Chunked prefill is enabled with max_num_batched_tokens=${budget}.`);
  }
  const readyPromise = new Promise<void>((resolve) => {
    const becomeReady = () => {
      readyTimer = null;
      if (closed) return resolve();
      ready = true;
      log(`fluidcap sim: listening on ${url} (model ${config.servedModelName}, gpu ${config.gpu.name}, scheduler ${config.scheduler})`);
      for (const h of heldUntilReady.splice(0)) h();
      resolve();
    };
    if (config.startDelayS > 0) {
      log(`fluidcap sim: loading ${config.model.name} on ${config.gpu.name}; ready in ${config.startDelayS} s (port ${port} bound, requests held until then, as vLLM does)`);
      readyTimer = setTimeout(becomeReady, config.startDelayS * 1000);
    } else becomeReady();
  });

  if (config.logStatsIntervalS > 0) {
    let lastNs = process.hrtime.bigint();
    statsTimer = setInterval(() => {
      const now = process.hrtime.bigint();
      const s = Number(now - lastNs) / 1e9;
      lastNs = now;
      // Like vLLM, stay quiet while idle.
      if (promptTokensSinceLog === 0 && generationTokensSinceLog === 0 && engine.scheduler.idle) return;
      log(
        `fluidcap sim: avg prompt throughput: ${(promptTokensSinceLog / s).toFixed(1)} tokens/s, avg generation throughput: ${(generationTokensSinceLog / s).toFixed(1)} tokens/s, ` +
          `running: ${engine.scheduler.running.length} reqs, waiting: ${engine.scheduler.waiting.length} reqs, KV cache usage: ${(engine.scheduler.kv.usedFraction * 100).toFixed(1)}%, ` +
          `preemptions: ${engine.scheduler.preemptionsTotal}`,
      );
      promptTokensSinceLog = 0;
      generationTokensSinceLog = 0;
    }, config.logStatsIntervalS * 1000);
    statsTimer.unref();
  }

  return { url, port, config, ready: readyPromise, done, close: () => shutdown('closed') };
}

/**
 * Writes one chunk of a streamed response to the socket now. node:http corks a socket on each
 * chunked write and uncorks it on the next tick, so every chunk of an engine step left only after
 * the whole step was formatted: at 500 streams a chunk's fluidcap_emit_ns was 2-4 ms ahead of its
 * write, and that engine-side wait was counted as every client's receive − emit.
 */
export function writeNow(res: ServerResponse, chunk: string): void {
  res.write(chunk);
  res.socket?.uncork();
}
