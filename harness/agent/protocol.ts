// The one wire format between the orchestrator and a load agent: newline-delimited JSON over the
// agent container's stdin and stdout (Docker attach on the host's existing SSH connection). Every
// message is checked against its schema on arrival; a line that fails is a broken agent, never data.
// Times inside records are the agent's own (seconds from its probe's start): nothing it measures
// is stamped after crossing the network. Pure.
import { z } from 'zod';
import type { ProbePlan } from '../load/plan.ts';
import type { ProbeResult } from '../load/runProbe.ts';
import type { TimelineRecord } from '../timeline/record.ts';

/** The plain-data part of a probe's options the agent runs with (no callbacks, no file paths). */
export interface AgentProbeOptions {
  baseUrl: string;
  model: string;
  api?: 'completions' | 'chat';
  /** Crosses the SSH channel only; the agent never logs or writes it. */
  apiKey?: string;
  requestTimeoutS?: number;
  stallTimeoutS?: number;
  concurrency?: number;
  workers?: number;
  keepCoresAwake?: boolean | 'auto';
  realtimeReceivers?: boolean;
  clientToleranceS?: number;
  tbtDeadlineS?: number;
  tokenDriftTolerance?: number;
  /** false: this agent does not scrape /metrics (another agent of the probe does). */
  metricsUrl?: string | false;
  scrapeIntervalS?: number;
  tokensPerWord?: number;
  continuousUsage?: boolean;
  tokenIdRange?: [number, number];
  extraBody?: Record<string, unknown>;
  content?: Record<string, unknown>;
}

/** Orchestrator → agent. */
export type ToAgent =
  | { type: 'probe'; plan: ProbePlan; options: AgentProbeOptions }
  /** Every agent of the probe is ready: start the clock now. */
  | { type: 'go' }
  /** End the probe as an early stop (in flight → cancelled). */
  | { type: 'stop'; reason: string }
  /** Drop the requests not yet sent from plan index `planned` on (a knee warm-up ended). */
  | { type: 'limit'; planned: number }
  | { type: 'cancel' };

/** The result an agent returns: the runner's, and the /metrics lines it scraped (when it scraped). */
export type AgentResult = Omit<ProbeResult, 'timelinesFile' | 'serverMetrics'> & { serverMetrics: ProbeResult['serverMetrics'] };

/** Agent → orchestrator. */
export type FromAgent =
  | { type: 'hello'; version: string }
  /** Every receiving worker can send; waiting for `go`. */
  | { type: 'ready' }
  /** One request ended: its record (agent clock), its plan index, and the agent's sent count then. */
  | { type: 'record'; index: number; record: TimelineRecord; sent: number }
  | { type: 'log'; line: string }
  | { type: 'result'; result: AgentResult; serverMetrics: string | null }
  | { type: 'failed'; message: string };

const recordSchema = z.looseObject({
  id: z.string(),
  scheduledS: z.number(),
  sentS: z.number(),
  promptTokens: z.number(),
  maxTokens: z.number(),
  outputTokens: z.number(),
  chunks: z.array(z.tuple([z.number(), z.number()])),
  status: z.enum(['ok', 'error', 'timeout', 'cancelled']),
  httpStatus: z.number().nullable(),
  error: z.string().nullable(),
});

const requestSchema = z.looseObject({ id: z.string(), index: z.number().int().min(0), scheduledS: z.number(), promptTokens: z.number(), maxTokens: z.number() });
const planSchema = z.looseObject({ seed: z.number(), rateQps: z.number(), requests: z.array(requestSchema) });
const optionsSchema = z.looseObject({ baseUrl: z.string().url(), model: z.string() });

const toAgentSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('probe'), plan: planSchema, options: optionsSchema }),
  z.strictObject({ type: z.literal('go') }),
  z.strictObject({ type: z.literal('stop'), reason: z.string() }),
  z.strictObject({ type: z.literal('limit'), planned: z.number().int().min(0) }),
  z.strictObject({ type: z.literal('cancel') }),
]);

const resultSchema = z.looseObject({
  planned: z.number(),
  sent: z.number(),
  notSent: z.number(),
  byStatus: z.looseObject({ ok: z.number(), error: z.number(), timeout: z.number(), cancelled: z.number() }),
  startedAt: z.string(),
  durationS: z.number(),
  earlyStop: z.string().nullable(),
  cancelled: z.boolean(),
  clientHealth: z.looseObject({ clientErrorS: z.number(), toleranceS: z.number(), verdict: z.enum(['valid', 'invalid']), reason: z.string() }),
  tokenDrift: z.looseObject({ verdict: z.string() }),
});

const fromAgentSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('hello'), version: z.string() }),
  z.strictObject({ type: z.literal('ready') }),
  z.strictObject({ type: z.literal('record'), index: z.number().int().min(0), record: recordSchema, sent: z.number().int().min(0) }),
  z.strictObject({ type: z.literal('log'), line: z.string() }),
  z.strictObject({ type: z.literal('result'), result: resultSchema, serverMetrics: z.string().nullable() }),
  z.strictObject({ type: z.literal('failed'), message: z.string() }),
]);

// JSON has no Infinity (a plan cut only by a request count has an infinite time limit): such
// numbers travel as {"$num": "Infinity"} and come back as numbers.
const replacer = (_k: string, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? { $num: String(v) } : v);
const reviver = (_k: string, v: unknown) => {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    if (typeof o.$num === 'string' && Object.keys(o).length === 1) return Number(o.$num);
  }
  return v;
};

/** One message as its line (with the newline). */
export function encodeMessage(m: ToAgent | FromAgent): string {
  return JSON.stringify(m, replacer) + '\n';
}

/** A line from the orchestrator, checked; throws with what is wrong. */
export function decodeToAgent(line: string): ToAgent {
  return parseWith(toAgentSchema, line, 'orchestrator') as ToAgent;
}

/** A line from an agent, checked; throws with what is wrong. */
export function decodeFromAgent(line: string): FromAgent {
  return parseWith(fromAgentSchema, line, 'agent') as FromAgent;
}

function parseWith(schema: z.ZodType, line: string, from: string): unknown {
  let raw: unknown;
  try {
    raw = JSON.parse(line, reviver);
  } catch {
    throw new Error(`the ${from} sent a line that is not JSON: ${JSON.stringify(line.slice(0, 120))}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const type = (raw as { type?: unknown })?.type;
    throw new Error(`the ${from} sent a malformed ${typeof type === 'string' ? `'${type}' ` : ''}message: ${issue.path.join('.') || '(message)'}: ${issue.message}`);
  }
  return raw;
}

/** Longest line accepted: a record of a long answer is tens of kB; more is a broken peer. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Splits a byte stream's text into lines (the framing), refusing a line longer than MAX_LINE_BYTES. */
export class LineSplitter {
  private buffered = '';

  push(text: string): string[] {
    const parts = (this.buffered + text).split('\n');
    this.buffered = parts.pop()!;
    if (this.buffered.length > MAX_LINE_BYTES) throw new Error(`a line longer than ${MAX_LINE_BYTES} bytes without a newline`);
    return parts.filter((l) => l.length > 0);
  }

  /** What is left without a newline (a peer that ended mid-line). */
  rest(): string {
    return this.buffered;
  }
}
