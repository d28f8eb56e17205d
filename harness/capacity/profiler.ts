// Prefill profiling: the plan's isolated requests, one at a time (warm-ups first), each with
// max_tokens 1 so its time to first token is its prefill; raw points go to profile/prefill.jsonl
// as they arrive, then the quadratic D_p fit and its verdict to profile/fit.json.
import { mkdirSync } from 'node:fs';
import { sendOne } from '../load/sendOne.ts';
import { fitPrefill, toFitJson, type FitBounds, type PrefillPoint } from './fit.ts';
import { runPaths } from '../runDir/layout.ts';
import { appendJsonLine, startJsonLines, writeJsonFile } from '../runDir/jsonFiles.ts';
import type { FitFile, PrefillFitResult, PrefillLine } from '../runDir/schema.ts';
import type { ProfilePlan } from './profilePlan.ts';
import { UserError } from '../util/errors.ts';

export interface ProfileTarget {
  baseUrl: string;
  model: string;
  api: 'completions' | 'chat';
  format: 'token-ids' | 'text';
  apiKey?: string;
  seed: number;
  requestTimeoutS: number;
}

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
  mkdirSync(paths.profileDir, { recursive: true });
  const rawPath = paths.prefill;
  startJsonLines(rawPath);
  const points: PrefillPoint[] = [];
  const failures: string[] = [];
  let done = 0;
  for (const req of plan.requests) {
    if (opts.signal?.aborted) throw new UserError('profiling interrupted');
    const result = await sendOne(
      { promptTokens: req.promptTokens, maxTokens: req.maxTokens, index: req.seq, id: `profile-${req.seq}` },
      { baseUrl: target.baseUrl, model: target.model, api: target.api, format: target.format, apiKey: target.apiKey, seed: target.seed, requestTimeoutS: target.requestTimeoutS, stallTimeoutS: target.requestTimeoutS },
    );
    const r = result.record;
    const first = r.chunks[0];
    // From the send, not the planned time: the profile measures the engine, not connection set-up.
    const prefillS = r.status === 'ok' && first ? first[0] - r.sentS : null;
    const line: PrefillLine = { seq: req.seq, promptTokens: req.promptTokens, warmup: req.warmup, repeat: req.repeat, prefillS, status: r.status, httpStatus: r.httpStatus, error: r.error, usagePromptTokens: r.usagePromptTokens ?? null };
    appendJsonLine(rawPath, line);
    if (prefillS === null) failures.push(`${req.promptTokens} tokens: ${r.status}${r.httpStatus ? ` (HTTP ${r.httpStatus})` : ''}${r.error ? `: ${r.error}` : ''}`);
    else if (!req.warmup) points.push({ promptTokens: req.promptTokens, prefillS });
    done += 1;
    opts.onProgress?.(done, plan.requests.length);
  }
  if (failures.length > 0) {
    throw new UserError(`prefill profiling: ${failures.length} of ${plan.requests.length} requests failed (${rawPath}):\n  ${failures.slice(0, 10).join('\n  ')}`);
  }
  const fit = fitPrefill(points, opts.fitBounds);
  const fitFile: FitFile = { ...fit, ...toFitJson(fit, opts.ttftSlackS) };
  writeJsonFile(paths.fit, fitFile);
  if (!fit.ok) {
    throw new UserError(`prefill profile refused (${paths.fit}): ${fit.problems.join('; ')}`);
  }
  opts.log(`prefill fit: D_p(P) = ${fit.a.toExponential(3)} + ${fit.b.toExponential(3)}·P + ${fit.c.toExponential(3)}·P² s, R² ${fit.r2.toFixed(4)} over ${fit.n} points`);
  return { fit, points };
}
