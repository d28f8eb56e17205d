// The probe planner: turns a workload, a rate and a size into plain data (every request's planned
// send time and token lengths) before the probe starts, so runners only execute and `--dry-run`
// can print it. Pure: same inputs, same plan, byte for byte. Prompt content is not planned here,
// only named: the run's nonce and the probe's stream (prompt.ts writes the text from them).
import { arrivalTimesS } from './arrivals.ts';
import { PRESETS, lengthSampler, presetDists, truncateVidur, type LengthDist } from './lengths.ts';
import { createRng, deriveSeed, permutation, type Rng } from '../util/rng.ts';
import type { TraceTable } from './traceCsv.ts';
import type { WorkloadSpec } from './workloadSpec.ts';
import type { PromptContent } from './prompt.ts';
import { SIZE_BOUNDS, checkSize } from '../util/sizeBounds.ts';

/** One request of the plan: when to send it and how long its prompt and output are. */
export interface PlannedRequest {
  id: string;
  index: number;
  scheduledS: number;
  promptTokens: number;
  maxTokens: number;
}

/** Everything a runner needs to execute a probe; archived as-is so a probe can be replayed. */
export interface ProbePlan {
  seed: number;
  rateQps: number;
  api: WorkloadSpec['api'];
  promptFormat: WorkloadSpec['prompts']['format'];
  arrivals: WorkloadSpec['arrivals'];
  tokenDriftTolerance: number;
  /** The time limit the plan was cut at (Infinity when only a request count was given). */
  durationLimitS: number;
  /** Whose prompts these are: with the seed they give every request's content (see prompt.ts). */
  prompts: PromptIdentity;
  requests: PlannedRequest[];
}

/** What makes a probe's prompt content its own: the run's nonce, the probe's stream, the cache policy. */
export interface PromptIdentity {
  /** null: no run nonce given (a standalone plan); content then repeats between such plans. */
  nonce: string | null;
  stream: string;
  cache: WorkloadSpec['promptCache'];
}

/** The content options a plan's prompt identity gives (prompt.ts): a shared prefix only when the cache is on. */
export function planPromptContent(p: PromptIdentity | undefined): PromptContent {
  // Plans archived before prompts had an identity replay with the old content.
  if (!p) return {};
  return { nonce: p.nonce ?? undefined, stream: p.stream, sharedPrefix: p.cache.mode === 'on' ? p.cache.sharedPrefix : null };
}

/** The prompt stream of a probe: its index and rate, so a re-probed rate and a resumed probe get new prompts. */
export function probeStream(idPrefix: string, rateQps: number): string {
  return `probe-${idPrefix}-rate-${+rateQps.toPrecision(6)}`;
}

export interface PlanInput {
  workload: WorkloadSpec;
  rateQps: number;
  /** Planned request count; stops earlier if the duration limit comes first. */
  requests?: number;
  durationS?: number;
  /** Overrides workload.seed (the capacity pipeline may derive one per probe). */
  seed?: number;
  /** The model's context: prompt + output never exceed it (Vidur's truncation when they would). */
  maxContextTokens: number;
  /** The workload's trace file, loaded by traceFile.ts, when lengths name one. */
  trace?: TraceTable;
  /** Prefix of request ids, e.g. the probe number "03" gives "03-0017". */
  idPrefix?: string;
  /** The run's prompt nonce (random per run, kept on resume). */
  promptNonce?: string;
  /** Overrides the prompt stream (default: probeStream(idPrefix, rateQps)). */
  promptStream?: string;
  /** Overrides the workload's prompt format (token ids refused for an unknown vocabulary fall back to text). */
  promptFormat?: WorkloadSpec['prompts']['format'];
}

/** Plans a probe: arrival times from the arrival process, lengths from the length source. */
export function planProbe(input: PlanInput): ProbePlan {
  const { workload, rateQps, maxContextTokens } = input;
  const seed = input.seed ?? workload.seed;
  const maxCount = input.requests ?? Infinity;
  const durationLimitS = input.durationS ?? Infinity;
  if (workload.lengths.kind === 'trace' && !input.trace) throw new Error('planProbe: the workload names a trace; load it with loadWorkloadTrace()');
  const from = `a probe at ${rateQps} QPS${Number.isFinite(durationLimitS) ? ` for ${durationLimitS} s` : ''}`;
  // A rate-driven plan holds about rate × duration requests: refused before any is drawn.
  if (workload.arrivals.process !== 'trace') checkSize('probeRequests', Math.min(maxCount, rateQps * durationLimitS), from);
  const times = arrivalTimesS({
    arrivals: workload.arrivals,
    rateQps,
    // One past the bound at most: enough to tell a plan that exceeds it, never its full size.
    maxCount: Math.min(maxCount, SIZE_BOUNDS.probeRequests.max + 1),
    durationS: durationLimitS,
    rng: createRng(deriveSeed(seed, 'arrivals')),
    traceArrivedS: input.trace?.arrivedS ? Array.from(input.trace.arrivedS) : undefined,
  });
  checkSize('probeRequests', times.length, from);
  const nextLengths = lengthSource(workload, input.trace, maxContextTokens, createRng(deriveSeed(seed, 'lengths')));
  const prefix = input.idPrefix ?? '00';
  const width = Math.max(4, String(times.length - 1).length);
  const requests = times.map((scheduledS, index) => {
    const [promptTokens, maxTokens] = nextLengths();
    return { id: `${prefix}-${String(index).padStart(width, '0')}`, index, scheduledS, promptTokens, maxTokens };
  });
  return {
    seed,
    rateQps,
    api: workload.api,
    promptFormat: workload.api === 'chat' ? 'text' : (input.promptFormat ?? workload.prompts.format),
    arrivals: workload.arrivals,
    tokenDriftTolerance: workload.tokenDriftTolerance,
    durationLimitS,
    prompts: { nonce: input.promptNonce ?? null, stream: input.promptStream ?? probeStream(prefix, rateQps), cache: workload.promptCache },
    requests,
  };
}

/** Returns a generator of [promptTokens, outputTokens] pairs for the workload's length source. */
function lengthSource(workload: WorkloadSpec, trace: TraceTable | undefined, maxContextTokens: number, rng: Rng): () => [number, number] {
  const lengths = workload.lengths;
  if (lengths.kind === 'trace') {
    const table = trace!;
    // Trace replay keeps rows with their arrival times; otherwise rows are drawn in a seeded order (as Vidur does).
    const inOrder = workload.arrivals.process === 'trace';
    let order = inOrder ? null : permutation(rng, table.rows);
    let i = 0;
    return () => {
      if (i === table.rows) {
        i = 0;
        if (!inOrder) order = permutation(rng, table.rows);
      }
      const row = order ? order[i] : i;
      i++;
      return truncateVidur(table.promptTokens[row], table.outputTokens[row], maxContextTokens);
    };
  }
  let prompt: LengthDist;
  let output: LengthDist;
  let capTokens = maxContextTokens;
  if (lengths.kind === 'preset') {
    const p = PRESETS[lengths.preset];
    ({ prompt, output } = presetDists(p));
    if (p.maxTotalTokens !== undefined) capTokens = Math.min(capTokens, p.maxTotalTokens);
  } else {
    prompt = lengths.prompt;
    output = lengths.output;
    if (lengths.maxTotalTokens !== undefined) capTokens = Math.min(capTokens, lengths.maxTotalTokens);
  }
  const drawPrompt = lengthSampler(prompt, rng);
  const drawOutput = lengthSampler(output, rng);
  // Pairs over the cap are cut by Vidur's proportional rule: it keeps the published medians and
  // p90s (a redraw would pull the arxiv-4k prompt p90 from 3702 down to ~3440).
  return () => truncateVidur(drawPrompt(), drawOutput(), capTokens);
}
