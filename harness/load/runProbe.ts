// Runs one load probe from its plan: receiving workers send on schedule, a decoding worker at the
// lowest CPU priority decodes each finished exchange, this thread appends its timeline line at
// once, scrapes /metrics, calls the early-stop hook, and returns counts, client health and token
// drift. A probe ends when every planned request
// has ended, or at an early stop / abort (in flight → `cancelled`, everything received kept).
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { TimelineWriter } from '../timeline/writer.ts';
import { InfraError } from '../util/errors.ts';
import type { RequestStatus, TimelineRecord } from '../timeline/record.ts';
import { decodeExchange } from './decode.ts';
import { startDispatch, type DispatchOptions } from './dispatcher.ts';
import { startScraper } from './metricsScraper.ts';
import { outputPinned } from './dialect.ts';
import { serverUrl } from './serverUrl.ts';
import { defaultClientToleranceS, judgeClientHealth, judgeTokenDrift, logRelayShare, tunnelRelayShare, type ClientHealth, type LogRelayCounters, type TokenDrift, type TunnelRelayCounters } from './health.ts';
import type { RawExchange } from './exchange.ts';
import { planPromptContent, type PlannedRequest, type ProbePlan } from './plan.ts';
import type { PromptContent, PromptOptions } from './prompt.ts';
import type { FromDecoder, FromWorker, ToDecoder, ToWorker } from './workerProtocol.ts';
import { readThreadCpu, threadCpuSince, type ThreadCpu } from './threadCpu.ts';
import { sizeWorkerHeaps, watchGcPauses } from './gcPauses.ts';
import { prioritiseReceivers } from './threadPriority.ts';
import { bootSpinners, shouldKeepCoresAwake } from './keepAwake.ts';
import { reserveDescriptors } from '../util/descriptorTable.ts';
import type { WarmUpOptions } from './warmUp.ts';
import { KneeWarmupWatch, type KneeWarmupPlan, type KneeWarmupRecord } from './kneeWarmup.ts';

/** What the early-stop hook sees each time a request ends (records: read-only, live). */
export interface ProbeProgress {
  records: readonly TimelineRecord[];
  planned: number;
  /** Planned requests whose scheduled time has passed. */
  scheduled: number;
  sent: number;
  inFlight: number;
  ended: number;
  elapsedS: number;
}

export interface ProbeOptions {
  outDir: string;
  baseUrl: string;
  model: string;
  /** Overrides the plan's API (normally from the workload). */
  api?: 'completions' | 'chat';
  /** The key's value; sent as a bearer token, never logged or written. */
  apiKey?: string;
  requestTimeoutS?: number;
  stallTimeoutS?: number;
  /** Most requests in flight; waits are recorded (`slotWaitS`) and count in TTFT. */
  concurrency?: number;
  /** Receiving worker threads; 0 runs in this thread (small probes, tests). Default: cores − 1, at least 1. */
  workers?: number;
  /** One SCHED_IDLE spinning thread per receiving worker while the probe runs (keepAwake.ts); default 'auto': when the engine is on another machine. */
  keepCoresAwake?: boolean | 'auto';
  /** Receivers under SCHED_FIFO while the probe runs, where the kernel allows it (threadPriority.ts); default true. */
  realtimeReceivers?: boolean;
  /** Fraction of planned requests (by index) marked `warmup: true` for evaluators to skip. */
  warmupFraction?: number;
  /** Overrides warmupFraction: this many planned requests (by index) are marked `warmup: true`. */
  warmupRequests?: number;
  /**
   * The plan opens with a knee warm-up (load/kneeWarmup.ts): it ends when the backlog is
   * stationary or at its bound, and the plan is then cut to the warm-up's requests and the
   * measured ones; warmupRequests and warmupFraction give way to its record.
   */
  kneeWarmup?: KneeWarmupPlan;
  /** Called once when the knee warm-up ends, before any measured request ends. */
  onKneeWarmupEnd?: (record: KneeWarmupRecord) => void;
  signal?: AbortSignal;
  /** Called as requests end (after the knee warm-up, if any); a string ends the probe with that reason. */
  shouldStop?: (progress: ProbeProgress) => string | null;
  /** Client-error tolerance; default min(2 ms, 10% of tbtDeadlineS). */
  clientToleranceS?: number;
  tbtDeadlineS?: number;
  tokenDriftTolerance?: number;
  /** /metrics scraping: URL (default <baseUrl origin>/metrics), interval (default 2 s); false turns it off. */
  metricsUrl?: string | false;
  scrapeIntervalS?: number;
  /** Prompt writing beyond the plan (see prompt.ts). */
  tokensPerWord?: number;
  continuousUsage?: boolean;
  tokenIdRange?: [number, number];
  extraBody?: Record<string, unknown>;
  /** The engine's measured prompt sizing (tokenizeCalibration.ts); the plan names nonce and stream. */
  content?: PromptContent;
  /** What relaying the engine's log has cost so far (cumulative); the probe reports its share. */
  logRelayCost?: () => LogRelayCounters;
  /** What the SSH tunnel the load goes through has relayed so far (cumulative); its share and the main thread's delay count in client health. */
  tunnelRelayCost?: () => TunnelRelayCounters;
  /** Awaited once every worker can send, before the clock starts (a load agent waits for its orchestrator's go). */
  beforeStart?: () => Promise<void>;
  /** Called once the clock has started, with the probe's stop and limit (a load agent's orchestrator drives them). */
  onControl?: (control: ProbeControl) => void;
  /** Called with each record as it is written, with the requests sent so far. */
  onRecord?: (index: number, record: TimelineRecord, sent: number) => void;
}

/** What a probe's owner may do to it from outside while it runs. */
export interface ProbeControl {
  /** Ends the probe as an early stop with this reason (in flight → `cancelled`). */
  stop(reason: string): void;
  /** Drops the requests not yet sent whose plan index is `planned` or more. */
  limit(planned: number): void;
}

/** Side effects a caller may replace (tests, the capacity pipeline's logger). */
export interface ProbeDeps {
  log?: (line: string) => void;
}

/** Everything a probe summary states about the run itself (metrics are computed from the timelines). */
export interface ProbeResult {
  rateQps: number;
  seed: number;
  planned: number;
  sent: number;
  notSent: number;
  byStatus: Record<RequestStatus, number>;
  /** Requests sent a second time on a fresh connection (their reused connection closed unread). */
  retried: number;
  warmupRequests: number;
  /** How the knee warm-up ended; null without one. */
  kneeWarmup: KneeWarmupRecord | null;
  startedAt: string;
  durationS: number;
  /** Why the probe ended early (hook reason, or "cancelled: …" on abort); null when it ran to the end. */
  earlyStop: string | null;
  cancelled: boolean;
  workers: number;
  clientHealth: ClientHealth;
  tokenDrift: TokenDrift;
  serverMetrics: { available: boolean; scrapes: number; file: string | null; note: string | null };
  timelinesFile: string;
}

/** Runs the plan against the engine at options.baseUrl; never throws for request failures. */
export async function runProbe(plan: ProbePlan, options: ProbeOptions, deps: ProbeDeps = {}): Promise<ProbeResult> {
  const log = deps.log ?? (() => {});
  const workerCount = options.workers ?? Math.max(1, Math.min(8, availableParallelism() - 1));
  const timelinesFile = join(options.outDir, 'timelines.jsonl');
  const writer = new TimelineWriter(timelinesFile);
  let planned = plan.requests.length;
  const knee = options.kneeWarmup ? new KneeWarmupWatch(options.kneeWarmup, plan.requests.map((r) => r.scheduledS)) : null;
  // Until the knee warm-up ends, every request that ends is one of its own.
  let warmupCount = knee ? planned : options.warmupRequests ?? Math.floor((options.warmupFraction ?? 0) * planned);
  const records: TimelineRecord[] = [];
  const byStatus: Record<RequestStatus, number> = { ok: 0, error: 0, timeout: 0, cancelled: 0 };
  const lagS: number[] = [];
  const rme: number[] = [];
  const rmeRecvNs: number[] = [];
  const sentIds = new Set<string>();
  const endedIds = new Set<string>();
  let sent = 0;
  let notSent = 0;
  let retried = 0;
  let earlyStop: string | null = null;
  let cancelled = false;
  const promptOptions: PromptOptions = {
    api: options.api ?? plan.api,
    model: options.model,
    format: (options.api ?? plan.api) === 'chat' ? 'text' : plan.promptFormat,
    seed: plan.seed,
    tokensPerWord: options.tokensPerWord,
    continuousUsage: options.continuousUsage,
    tokenIdRange: options.tokenIdRange,
    extraBody: options.extraBody,
    ...planPromptContent(plan.prompts),
    ...options.content,
  };

  // Before any thread starts: a bad URL throws here, with nothing to clean up.
  const metricsUrl = options.metricsUrl === false ? null : (options.metricsUrl ?? serverUrl(options.baseUrl, '/metrics').href);
  // Workers boot first (tsx compiles them), so the clock starts only once all can send.
  const shares: PlannedRequest[][] = Array.from({ length: Math.max(1, workerCount) }, () => []);
  plan.requests.forEach((r, i) => shares[i % shares.length].push(r));
  const warmUp: WarmUpOptions = { streams: WARM_UP_STREAMS, tokens: WARM_UP_TOKENS, prompt: promptOptions };
  const booted = workerCount > 0 ? await Promise.all([bootWorker('decode'), ...shares.map(() => bootWorker('receive', warmUp))]) : [];
  const [decoder, ...workers] = booted.map((b) => b.worker);
  // Booted before the priorities are set, so they are lowered with the other background threads.
  const spinners = workers.length > 0 && shouldKeepCoresAwake(options.keepCoresAwake ?? 'auto', options.baseUrl, { throughTunnel: options.tunnelRelayCost !== undefined }) ? await bootSpinners(workers.length).catch(() => null) : null;
  // While the probe runs, its receiving threads take a shared core before our background threads.
  const receiverTids = booted.slice(1).flatMap((b) => (b.threadId === null ? [] : [b.threadId]));
  const priorities = workers.length > 0 ? await prioritiseReceivers(receiverTids, { realtime: options.realtimeReceivers !== false }) : null;
  const coresKeptAwake = spinners?.start() ?? 0;
  // One connection per request in flight at most; the margin covers retries, the metrics scraper
  // and the files written. Growing the descriptor table now keeps its stalls out of the probe.
  reserveDescriptors(Math.min(planned, options.concurrency ?? Infinity) + 64);
  try {
    await options.beforeStart?.();
  } catch (err) {
    await Promise.all(booted.map((b) => b.worker.terminate()));
    await spinners?.stop();
    await priorities?.release();
    writer.close();
    throw err;
  }
  const mainEld = monitorEventLoopDelay({ resolution: 1 });
  mainEld.enable();
  const startNs = process.hrtime.bigint() + 20_000_000n;
  const startedAt = new Date(Date.now() + 20).toISOString();
  const elapsedS = () => Number(process.hrtime.bigint() - startNs) / 1e9;
  const scraper = metricsUrl
    ? startScraper({ metricsUrl, file: join(options.outDir, 'server-metrics.jsonl'), intervalS: options.scrapeIntervalS ?? 2, startNs, apiKey: options.apiKey })
    : null;

  const stops: ((reason: string) => void)[] = [];
  const stopAll = (reason: string) => stops.forEach((s) => s(reason));
  const limits: ((planned: number) => void)[] = [];
  const onSent = (id: string) => {
    sent++;
    sentIds.add(id);
  };
  // A timeline that cannot be written (disk full) ends the probe: what was written stays, nothing
  // later is judged on records that exist only in memory.
  let writeFailure: Error | null = null;
  const keep = (record: TimelineRecord) => {
    if (writeFailure) return;
    try {
      writer.append(record);
    } catch (err) {
      writeFailure = err as Error;
      stopAll(`cannot write ${writer.path}`);
    }
  };
  const onEnd = (raw: RawExchange) => {
    const { record, recvMinusEmitNs, recvNs } = decodeExchange(raw, startNs);
    accept(raw.index, record, raw.sentNs === null ? null : raw.sentNs - raw.scheduledNs - raw.slotWaitNs, recvMinusEmitNs, recvNs);
  };
  const accept = (index: number, record: TimelineRecord, lagNs: number | null, recvMinusEmitNs: ArrayLike<number>, recvNs: ArrayLike<number>) => {
    if (endedIds.has(record.id)) return;
    if (knee && knee.record === null) {
      const now = elapsedS();
      const ended = knee.observe(now, scheduledBy(now), records.length + 1);
      if (ended) {
        planned = ended.planned;
        warmupCount = ended.warmupRequests;
        limits.forEach((l) => l(planned));
        options.onKneeWarmupEnd?.(ended);
      }
    }
    if (index < warmupCount) record.warmup = true;
    keep(record);
    records.push(record);
    options.onRecord?.(index, record, sent);
    endedIds.add(record.id);
    byStatus[record.status]++;
    if (record.retried) retried++;
    if (lagNs !== null) lagS.push(Math.max(0, lagNs / 1e9));
    for (let i = 0; i < recvMinusEmitNs.length; i++) rme.push(recvMinusEmitNs[i]);
    for (let i = 0; i < recvNs.length; i++) rmeRecvNs.push(recvNs[i]);
    if (earlyStop === null && options.shouldStop && (knee === null || knee.record !== null)) {
      const now = elapsedS();
      const reason = options.shouldStop({ records, planned, scheduled: scheduledBy(now), sent, inFlight: sent - records.length, ended: records.length, elapsedS: now });
      if (reason) {
        earlyStop = reason;
        log(`probe: early stop after ${records.length} requests: ${reason}`);
        stopAll(`early stop: ${reason}`);
      }
    }
  };
  // Arrivals in plan order, counted as their times come (the clock only moves forward).
  let scheduledCount = 0;
  const scheduledBy = (nowS: number) => {
    while (scheduledCount < plan.requests.length && plan.requests[scheduledCount].scheduledS <= nowS) scheduledCount++;
    return Math.min(scheduledCount, planned);
  };
  const onAbort = () => {
    cancelled = true;
    earlyStop ??= 'cancelled: interrupted by the user';
    stopAll('cancelled by the user');
  };
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // A stop that comes before the senders are listening is kept and handed to them as they start.
  let stopRequested: string | null = null;
  options.onControl?.({
    stop(reason) {
      if (earlyStop !== null) return;
      earlyStop = reason;
      stopRequested = `early stop: ${reason}`;
      log(`probe: stopped after ${records.length} requests: ${reason}`);
      stopAll(stopRequested);
    },
    limit(n) {
      if (n >= planned) return;
      planned = n;
      limits.forEach((l) => l(n));
    },
  });

  const dispatchOptions = (share: number): DispatchOptions => ({
    client: { baseUrl: options.baseUrl, apiKey: options.apiKey, requestTimeoutS: options.requestTimeoutS ?? 300, stallTimeoutS: options.stallTimeoutS ?? 60, startNs },
    prompt: promptOptions,
    concurrency: options.concurrency === undefined ? undefined : Math.max(1, Math.floor(options.concurrency / share)),
  });
  const eldP99Ns: number[] = [];
  const eldMaxNs: number[] = [];
  const loopCpu: (ThreadCpu | null)[] = [];
  const gcPausesNs: Float64Array[] = [];
  const mainCpuAtStart = readThreadCpu();
  const relayAtStart = options.logRelayCost?.() ?? null;
  const tunnelAtStart = options.tunnelRelayCost?.() ?? null;
  const mainGc = workers.length === 0 ? watchGcPauses(startNs) : null;
  try {
    if (workers.length === 0) {
      const d = startDispatch(plan.requests, dispatchOptions(1), { onSent, onEnd });
      stops.push((reason) => d.stop(reason));
      limits.push((n) => d.limit(n));
      if (cancelled) d.stop('cancelled by the user');
      else if (stopRequested !== null) d.stop(stopRequested);
      notSent = (await d.done).unsent;
    } else {
      // Each receiving worker hands its exchanges to the decoder over a channel of its own.
      const channels = workers.map(() => new MessageChannel());
      const drained = decode(decoder!, startNs, channels.map((c) => c.port2), accept);
      const results = await Promise.all(
        workers.map((w, i) => {
          // Slots are split evenly; the remainder goes to the first workers so the total is the cap.
          const opts = dispatchOptions(workers.length);
          if (options.concurrency !== undefined) opts.concurrency = Math.max(1, Math.floor(options.concurrency / workers.length) + (i < options.concurrency % workers.length ? 1 : 0));
          return runShare(w, shares[i], opts, channels[i].port1, onSent, stops, limits, cancelled ? 'cancelled by the user' : stopRequested);
        }),
      );
      await drained;
      for (const r of results) {
        notSent += r.unsent;
        eldP99Ns.push(r.eldP99Ns);
        eldMaxNs.push(r.eldMaxNs);
        loopCpu.push(r.cpu);
        gcPausesNs.push(r.gcPauses);
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await Promise.all([...workers, ...(decoder ? [decoder] : [])].map((w) => w.terminate()));
    await spinners?.stop();
    await priorities?.release();
    mainEld.disable();
    // A worker that died leaves requests sent but never decoded: they are written as errors, not lost.
    for (const id of sentIds) {
      if (endedIds.has(id)) continue;
      const r = plan.requests.find((p) => p.id === id)!;
      const record: TimelineRecord = { id, scheduledS: r.scheduledS, sentS: r.scheduledS, promptTokens: r.promptTokens, maxTokens: r.maxTokens, outputTokens: 0, chunks: [], status: 'error', httpStatus: null, error: 'a receiving or decoding worker exited before the request was recorded' };
      keep(record);
      records.push(record);
      options.onRecord?.(r.index, record, sent);
      byStatus.error++;
    }
    writer.close();
  }
  const durationS = elapsedS();
  // A probe stopped before its warm-up ended judges nothing; its record says it ran to the bound.
  const kneeRecord = knee ? knee.record ?? knee.finish() : null;
  if (knee && planned !== kneeRecord!.planned) planned = kneeRecord!.planned;
  const scraped = scraper ? await scraper.stop() : null;
  if (writeFailure !== null) {
    const e = writeFailure as NodeJS.ErrnoException;
    throw new InfraError(`cannot write ${writer.path} (${e.code ?? e.message}); the ${writer.count} records written before are kept`, { cause: e });
  }
  if (workers.length === 0) {
    eldP99Ns.push(mainEld.percentile(99));
    eldMaxNs.push(mainEld.max);
    loopCpu.push(threadCpuSince(mainCpuAtStart, readThreadCpu()));
    if (mainGc) gcPausesNs.push(mainGc.stop());
  }
  const clientHealth = judgeClientHealth({
    eldP99Ns,
    eldMaxNs,
    loopCpu,
    dispatchLagS: lagS,
    recvMinusEmitNs: rme,
    recvNs: rmeRecvNs,
    gcPausesNs,
    tbtDeadlineS: options.tbtDeadlineS,
    toleranceS: options.clientToleranceS ?? defaultClientToleranceS(options.tbtDeadlineS),
    logRelay: relayAtStart && options.logRelayCost ? logRelayShare(relayAtStart, options.logRelayCost(), durationS) : undefined,
    tunnelRelay: tunnelAtStart && options.tunnelRelayCost ? tunnelRelayShare(tunnelAtStart, options.tunnelRelayCost(), { p99Ns: mainEld.percentile(99), maxNs: mainEld.max }) : undefined,
  });
  const tokenDrift = judgeTokenDrift(records, options.tokenDriftTolerance ?? plan.tokenDriftTolerance, { outputPinned: outputPinned(promptOptions.omitFields) });
  return {
    rateQps: plan.rateQps,
    seed: plan.seed,
    planned,
    sent,
    notSent,
    byStatus,
    retried,
    warmupRequests: kneeRecord?.warmupRequests ?? warmupCount,
    kneeWarmup: kneeRecord,
    startedAt,
    durationS: Math.round(durationS * 1e6) / 1e6,
    earlyStop,
    cancelled,
    workers: workers.length,
    clientHealth: { ...clientHealth, coresKeptAwake, realtimeReceivers: priorities?.realtime ?? 0 },
    tokenDrift,
    serverMetrics: {
      available: scraped?.available ?? false,
      scrapes: scraped?.scrapes ?? 0,
      file: scraped?.available ? join(options.outDir, 'server-metrics.jsonl') : null,
      note: scraped === null ? 'scraping off' : scraped.available ? null : `no server metrics: ${scraped.lastError ?? 'no scrape completed'}`,
    },
    timelinesFile,
  };
}

const WORKER_URL = new URL('./workerEntry.mjs', import.meta.url);
// Room for a probe's allocation in a receiver's young generation (gcPauses.ts); V8's own start is 1 MB.
// Each request's body buffer is sized for its whole answer (~256 bytes a token) and V8 counts those
// buffers towards its young generation: at 500 streams × 200 tokens on one receiver, 32 MB still
// took a scavenge (~4 ms) in the ramp, and what it promoted a mark-compact after it; 64 MB takes no
// scavenge (about 55 MB more resident memory per probe).
const WORKER_SEMI_SPACE_MB = 64;
// No mark-compact a receiver's own small heap would set off mid-probe (gcPauses.ts).
const WORKER_INITIAL_OLD_SPACE_MB = 128;
// A receiver's warm-up (warmUp.ts): 2 rounds of 64 streams × 64 events, about 8,000 reads.
const WARM_UP_STREAMS = 64;
const WARM_UP_TOKENS = 64;

/** Starts a receiving or the decoding worker and waits until it has loaded (and a receiver has warmed up). */
function bootWorker(role: 'receive' | 'decode', warmUp?: WarmUpOptions): Promise<{ worker: Worker; threadId: number | null }> {
  // A worker's isolate is made on its own thread after this returns, so the flag stays set for all
  // of them (the decoder's larger young generation costs only memory).
  sizeWorkerHeaps(WORKER_SEMI_SPACE_MB, WORKER_INITIAL_OLD_SPACE_MB);
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER_URL, { workerData: { role, warmUp } });
    const onError = (e: Error) => reject(e);
    w.once('error', onError);
    w.once('message', (m: FromWorker) => {
      w.off('error', onError);
      if (m.type === 'ready') resolve({ worker: w, threadId: m.threadId ?? null });
      else reject(new Error(`worker sent ${m.type} before ready`));
    });
  });
}

/**
 * Starts the decoding worker on the receivers' ports and passes each decoded record on; resolves
 * once every receiver is done and all it handed over is decoded, or when the decoder dies.
 */
function decode(
  decoder: Worker,
  startNs: bigint,
  receivers: MessagePort[],
  accept: (index: number, record: TimelineRecord, lagNs: number | null, recvMinusEmitNs: Float64Array, recvNs: Float64Array) => void,
): Promise<void> {
  return new Promise((resolve) => {
    decoder.on('message', (m: FromDecoder) => {
      if (m.type === 'decoded') accept(m.index, m.record, m.lagNs, m.recvMinusEmitNs, m.recvNs);
      else if (m.type === 'drained') resolve();
    });
    decoder.on('error', () => resolve());
    decoder.on('exit', () => resolve());
    const start: ToDecoder = { type: 'start', startNs, receivers };
    decoder.postMessage(start, receivers);
  });
}

/** Hands a worker its share and its decoder port, and relays its messages until it finishes (or dies). */
function runShare(
  w: Worker,
  share: PlannedRequest[],
  options: DispatchOptions,
  decoderPort: MessagePort,
  onSent: (id: string) => void,
  stops: ((reason: string) => void)[],
  limits: ((planned: number) => void)[],
  alreadyStopped: string | null,
): Promise<{ unsent: number; eldP99Ns: number; eldMaxNs: number; cpu: ThreadCpu | null; gcPauses: Float64Array }> {
  return new Promise((resolve) => {
    let finished = false;
    let sentHere = 0;
    const post = (m: ToWorker, transfer: MessagePort[] = []) => w.postMessage(m, transfer);
    stops.push((reason) => {
      if (!finished) post({ type: 'stop', reason });
    });
    limits.push((n) => {
      if (!finished) post({ type: 'limit', planned: n });
    });
    w.on('message', (m: FromWorker) => {
      if (m.type === 'sent') {
        sentHere++;
        onSent(m.id);
      } else if (m.type === 'finished') {
        finished = true;
        resolve({ unsent: m.unsent, eldP99Ns: m.eldP99Ns, eldMaxNs: m.eldMaxNs, cpu: m.cpu, gcPauses: m.gcPauses });
      }
    });
    const onGone = () => {
      if (finished) return;
      finished = true;
      resolve({ unsent: share.length - sentHere, eldP99Ns: 0, eldMaxNs: 0, cpu: null, gcPauses: new Float64Array(0) });
    };
    w.on('error', onGone);
    w.on('exit', onGone);
    post({ type: 'start', requests: share, options, decoder: decoderPort }, [decoderPort]);
    if (alreadyStopped !== null) post({ type: 'stop', reason: alreadyStopped });
  });
}
