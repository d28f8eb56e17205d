// Plans the isolated-prefill profile as plain data (which prompt lengths, how many repeats, which
// warm-up requests, in what order) so `--dry-run` can print it and the runner only executes it.
import { sizeProblem } from '../util/sizeBounds.ts';

/** The recipe's `profile` section as resolved (structurally the recipe's ProfileSection). */
export interface ProfileOptions {
  /** Explicit prompt lengths; default: powers of two from 128 up to what the context allows. */
  promptLengths?: number[];
  repeats: number;
  /** Number of warm-up requests sent before measuring (not part of the fit). */
  warmup: number;
}

/** What the model allows: its context and the output tokens every profiling request asks for. */
export interface ProfileLimits {
  maxContextTokens: number;
  /** max_tokens of each profiling request (1: the TTFT of a 1-token request is its prefill). */
  outputTokens?: number;
  /** Smallest default length (128: shorter prompts are dominated by fixed overhead). */
  minPromptTokens?: number;
}

/** One isolated request of the profile, in the order it must be sent. */
export interface ProfileRequest {
  /** Position in the sequence; with the run's nonce and the attempt's stream it seeds the prompt (prompt.ts). */
  seq: number;
  promptTokens: number;
  maxTokens: number;
  warmup: boolean;
  /** Repeat number (0-based) for measured requests; null for warm-ups. */
  repeat: number | null;
}

/** The whole profile as data: lengths, counts and the exact request sequence. */
export interface ProfilePlan {
  promptLengths: number[];
  repeats: number;
  warmupRequests: number;
  maxTokens: number;
  requests: ProfileRequest[];
  /** Why the plan cannot run (lengths that do not fit the context); empty when usable. */
  problems: string[];
}

/** Resolves prompt lengths and orders the requests: warm-ups first, then repeats round-robin. */
export function planProfile(options: ProfileOptions, limits: ProfileLimits): ProfilePlan {
  const maxTokens = limits.outputTokens ?? 1;
  const minPrompt = limits.minPromptTokens ?? 128;
  const longestPrompt = limits.maxContextTokens - maxTokens;
  const problems: string[] = [];

  let promptLengths: number[];
  if (options.promptLengths && options.promptLengths.length > 0) {
    options.promptLengths.forEach((p, i) => {
      if (!Number.isInteger(p) || p < 1) problems.push(`profile.promptLengths[${i}] must be a positive integer, got ${p}`);
      else if (p > longestPrompt) {
        problems.push(
          `profile.promptLengths[${i}] must be <= ${longestPrompt} (the model's context ${limits.maxContextTokens} minus ${maxTokens} output token${maxTokens === 1 ? '' : 's'}), got ${p}`,
        );
      }
    });
    promptLengths = [...new Set(options.promptLengths.filter((p) => Number.isInteger(p) && p >= 1 && p <= longestPrompt))].sort((x, y) => x - y);
  } else {
    promptLengths = defaultPromptLengths(minPrompt, longestPrompt);
    if (promptLengths.length === 0) {
      problems.push(`the model's context (${limits.maxContextTokens} tokens) leaves no room for a ${minPrompt}-token prompt plus ${maxTokens} output token(s)`);
    }
  }

  const tooMany = sizeProblem('profileRequests', options.warmup + options.repeats * promptLengths.length, `profile.repeats (${options.repeats}) × ${promptLengths.length} prompt lengths + profile.warmup (${options.warmup})`);
  if (tooMany !== null) {
    problems.push(tooMany);
    promptLengths = [];
  }
  const requests: ProfileRequest[] = [];
  // Warm-ups walk the lengths from the longest down, so the first measured request does not pay
  // for the engine's first allocation at peak size.
  for (let w = 0; w < options.warmup && promptLengths.length > 0; w++) {
    const promptTokens = promptLengths[promptLengths.length - 1 - (w % promptLengths.length)];
    requests.push({ seq: requests.length, promptTokens, maxTokens, warmup: true, repeat: null });
  }
  // Round-robin over lengths (all lengths of repeat 0, then repeat 1, ...): slow drift of the
  // server (clocks, background load) spreads over every length instead of biasing one.
  for (let repeat = 0; repeat < options.repeats && promptLengths.length > 0; repeat++) {
    for (const promptTokens of promptLengths) {
      requests.push({ seq: requests.length, promptTokens, maxTokens, warmup: false, repeat });
    }
  }

  return {
    promptLengths,
    repeats: options.repeats,
    warmupRequests: requests.filter((r) => r.warmup).length,
    maxTokens,
    requests,
    problems,
  };
}

/**
 * Powers of two from `minPrompt` up to `longestPrompt`, plus `longestPrompt` itself when it is not
 * one: the fit then covers every prompt the model accepts instead of extrapolating past 2^k.
 */
export function defaultPromptLengths(minPrompt: number, longestPrompt: number): number[] {
  const out: number[] = [];
  let p = 1;
  while (p < minPrompt) p *= 2;
  for (; p <= longestPrompt; p *= 2) out.push(p);
  if (out.length > 0 && out[out.length - 1] !== longestPrompt) out.push(longestPrompt);
  return out;
}

/**
 * The prompt stream of one profiling attempt: a profile redone on --resume must not send the
 * prompts the interrupted attempt sent (the engine may still hold them).
 */
export function profileStream(attempt: number): string {
  return `profile-${attempt}`;
}
