// Prefill profiling: the plan's isolated requests, one at a time (warm-ups first), each with
// max_tokens 1 so its time to first token is its prefill; raw points go to profile/prefill.jsonl
// as they arrive, then the quadratic D_p fit and its verdict to profile/fit.json.
import { makeDirIn } from '../util/confinedFs.ts';
import { openSender } from '../load/sendOne.ts';
import { fitPrefill, toFitJson, type FitBounds, type PrefillPoint } from './fit.ts';
import { runPaths } from '../runDir/layout.ts';
import { appendJsonLine, startJsonLines, writeJsonFile } from '../runDir/jsonFiles.ts';
import type { FitFile, PrefillFitResult, PrefillLine } from '../runDir/schema.ts';
import type { ProfilePlan } from './profilePlan.ts';
import type { PromptContent } from '../load/prompt.ts';
import { UserError } from '../util/errors.ts';
import { arrivalChunks, type TimelineRecord, type TokenArrivals } from '../timeline/record.ts';

export interface ProfileTarget {
  baseUrl: string;
  model: string;
  api: 'completions' | 'chat';
  format: 'token-ids' | 'text';
  apiKey?: string;
  seed: number;
  requestTimeoutS: number;
  /** The run's nonce, this attempt's stream and the engine's measured sizing (prompt.ts). */
  content?: PromptContent;
  /** Per-request fields (the engine's cache-off switch). */
  extraBody?: Record<string, unknown>;
  /** Ask for the running token count on every chunk (the run's search.probe.continuousUsage). */
  continuousUsage?: boolean;
  /** Which arrival ends a prefill: the engine's first token (default) or its first text. */
  tokenArrivals?: TokenArrivals;
  /** A cheap GET that confirms a connection is open before each request (default /v1/models). */
  confirmPath?: string;
  /** A pooled connection idle longer than this is replaced before a request (default: vLLM's keep-alive less 1 s). */
  maxIdleS?: number;
}

// uvicorn's idle keep-alive as vLLM's API server sets it (TIMEOUT_KEEP_ALIVE), sent without a Keep-Alive hint.
const VLLM_KEEP_ALIVE_S = 5;

export interface ProfileOutcome {
  fit: PrefillFitResult;
  points: PrefillPoint[];
}

/** Runs the profile; throws a UserError naming the requests that failed or why the fit is refused. */
export async function runProfile(
  plan: ProfilePlan,
  target: ProfileTarget,
  opts: { runDir: string; ttftSlackS: number; fitBounds?: Partial<FitBounds>; log: (line: string) => void; signal?: AbortSignal; onProgress?: (done: number, total: number) => void },
): Promise<ProfileOutcome> {
  const paths = runPaths(opts.runDir);
  makeDirIn(opts.runDir, paths.profileDir);
  const rawPath = paths.prefill;
  startJsonLines(opts.runDir, rawPath);
  const points: PrefillPoint[] = [];
  const failures: string[] = [];
  /** The engine's usage.prompt_tokens of each measured point (null where it sent none). */
  const counted: (number | null)[] = [];
  let done = 0;
  const sender = openSender({ ...target.content, extraBody: target.extraBody, continuousUsage: target.continuousUsage, baseUrl: target.baseUrl, model: target.model, api: target.api, format: target.format, apiKey: target.apiKey, seed: target.seed, requestTimeoutS: target.requestTimeoutS, stallTimeoutS: target.requestTimeoutS });
  // Each request is written on a connection confirmed open just before, so its TTFT holds no
  // connection set-up (a new SSH channel through a tunnel) and no reconnect after the server
  // dropped an idle one; set-up is recorded apart.
  const confirm = { path: target.confirmPath ?? '/v1/models', maxIdleS: target.maxIdleS ?? VLLM_KEEP_ALIVE_S - 1 };
  for (const req of plan.requests) {
    if (opts.signal?.aborted) {
      sender.close();
      throw new UserError('profiling interrupted');
    }
    const result = await sender.send({ promptTokens: req.promptTokens, maxTokens: req.maxTokens, index: req.seq, id: `profile-${req.seq}` }, confirm);
    const r = result.record;
    const conn = result.connection;
    // An empty first chunk (a token without text) ends the prefill as well as a visible one.
    const first = arrivalChunks(r, target.tokenArrivals ?? 'engine')[0];
    // From the send, not the planned time: the profile measures the engine, not connection set-up.
    const prefillS = r.status === 'ok' && first ? first[0] - r.sentS : null;
    const line: PrefillLine = { seq: req.seq, promptTokens: req.promptTokens, warmup: req.warmup, repeat: req.repeat, prefillS, status: r.status, httpStatus: r.httpStatus, error: r.error, usagePromptTokens: r.usagePromptTokens ?? null,
      connectionReused: conn && !conn.error ? conn.reused : null, connectS: conn?.connectS ?? null, confirmS: conn?.confirmS ?? null };
    appendJsonLine(opts.runDir, rawPath, line);
    if (prefillS === null) failures.push(`${req.promptTokens} tokens: ${failureText(r, target.tokenArrivals ?? 'engine')}`);
    else if (!req.warmup) {
      points.push({ promptTokens: req.promptTokens, prefillS });
      counted.push(r.usagePromptTokens ?? null);
    }
    done += 1;
    opts.onProgress?.(done, plan.requests.length);
  }
  sender.close();
  if (failures.length > 0) {
    throw new UserError(`prefill profiling: ${failures.length} of ${plan.requests.length} requests failed (${rawPath}):\n  ${failures.slice(0, 10).join('\n  ')}`);
  }
  const fit = fitPrefill(enginePromptLengths(points, counted, opts.log), opts.fitBounds, { ttftSlackS: opts.ttftSlackS });
  const fitFile: FitFile = { ...fit, ...toFitJson(fit, opts.ttftSlackS) };
  writeJsonFile(opts.runDir, paths.fit, fitFile);
  if (!fit.ok) {
    throw new UserError(`prefill profile refused (${paths.fit}): ${fit.problems.join('; ')}`);
  }
  opts.log(`prefill fit: D_p(P) = ${fit.a.toExponential(3)} + ${fit.b.toExponential(3)}·P + ${fit.c.toExponential(3)}·P² s, R² ${fit.r2.toFixed(4)} over ${fit.n} points`);
  for (const note of fit.notes ?? []) opts.log(`prefill fit: ${note}`);
  return { fit, points };
}

/** Why a profile request gave no prefill time, in words: its status, or what an ok stream lacked. */
function failureText(r: TimelineRecord, arrivals: TokenArrivals): string {
  const http = r.httpStatus ? ` (HTTP ${r.httpStatus})` : '';
  if (r.status !== 'ok') return `${r.status}${http}${r.error ? `: ${r.error}` : ''}`;
  const usage = r.usageOutputTokens != null ? `usage counted ${r.usageOutputTokens} completion tokens` : 'no usage was sent';
  if (arrivals === 'visible' && r.chunks.length > 0) {
    return `answered${http} but no token arrived with text (tokenArrivals: visible; ${r.chunks.length} chunks without text, ${usage})`;
  }
  return `answered${http} but no token arrived (the stream carried no text, no running token count and no token ids; ${usage}${r.tokenCountProblem ? `; ${r.tokenCountProblem}` : ''})`;
}

/**
 * D_p is fitted against the prompt length the engine counted, not the one planned: each planned
 * length takes the median of its requests' usage.prompt_tokens (repeats stay one group).
 */
function enginePromptLengths(points: PrefillPoint[], counted: (number | null)[], log: (line: string) => void): PrefillPoint[] {
  const byPlanned = new Map<number, number[]>();
  points.forEach((p, i) => {
    const c = counted[i];
    if (c !== null && c > 0) byPlanned.set(p.promptTokens, [...(byPlanned.get(p.promptTokens) ?? []), c]);
  });
  const lengthOf = new Map<number, number>();
  for (const [planned, counts] of byPlanned) {
    const sorted = [...counts].sort((a, b) => a - b);
    const median = sorted[Math.floor((sorted.length - 1) / 2)];
    lengthOf.set(planned, median);
    if (Math.abs(median - planned) > 1) log(`prefill profile: ${planned} prompt tokens planned, the engine counted ${median}; the fit uses ${median}`);
  }
  return points.map((p) => ({ ...p, promptTokens: lengthOf.get(p.promptTokens) ?? p.promptTokens }));
}
