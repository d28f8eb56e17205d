// The recipe's `workload` section (owner: load generator). Parse, then trust: the output is plain
// data the planner consumes; trace files are read later by traceFile.ts, relative to the recipe.
//
//   workload:
//     api: completions                 # completions | chat
//     lengths: { preset: arxiv-4k }    # chat-1m | arxiv-4k | bwb-4k | arxiv-summarization (full, needs a
//                                      #   65536-token context: target.engineArgs.ropeScaling)
//     # or lengths: { prompt: <dist>, output: <dist>, maxTotalTokens?: n }, where <dist> is
//     #   512 | { dist: fixed, tokens } | { dist: uniform, min, max }
//     #   | { dist: quantiles, median, p90, min?, max? }   (lognormal through median and p90)
//     #   | { dist: zipf, theta, min, max, scramble? }     (`dist` may be left out when the keys say it)
//     # or lengths: { trace: file.csv, maxTotalTokens: 4096 }   (Vidur columns; path relative to the recipe)
//     arrivals: { process: poisson }   # poisson | gamma (burstiness) | constant | trace (timeScale?)
//     seed: 42
//     prompts: { format: token-ids }   # token-ids | text (chat always sends text); token ids only
//                                      #   where the vocabulary is known, else text; tokenIdRange: [lo, hi]
//     promptCache: off                 # off: the engine's prompt cache is switched off where it has a
//                                      #   switch; on: left on; { sharedPrefix: { tokens, fraction } }:
//                                      #   on, and that fraction of each probe's requests opens with one
//                                      #   common prefix of that many tokens (inference-perf's shared prefix)
//     tokenDriftTolerance: 0.02        # largest |usage − requested| / requested before a probe says so
import { z } from 'zod';
import { PRESET_NAMES, type LengthDist, type PresetName } from './lengths.ts';

const posInt = () => z.number().int().positive();

/** Infers `dist` from the keys when the user left it out, and turns a bare number into `fixed`. */
function inferDist(v: unknown): unknown {
  if (typeof v === 'number') return { dist: 'fixed', tokens: v };
  if (v === null || typeof v !== 'object' || Array.isArray(v) || 'dist' in v) return v;
  const keys = Object.keys(v);
  const dist = keys.includes('tokens')
    ? 'fixed'
    : keys.includes('median') || keys.includes('p90')
      ? 'quantiles'
      : keys.includes('theta')
        ? 'zipf'
        : keys.includes('min') || keys.includes('max')
          ? 'uniform'
          : undefined;
  return dist ? { dist, ...v } : v;
}

const rangeCheck = (d: { min: number; max: number }, ctx: z.RefinementCtx) => {
  if (d.max < d.min) ctx.addIssue({ code: 'custom', path: ['max'], input: d.max, message: `must be >= min (${d.min})` });
};

const lengthDistSchema = z.preprocess(
  inferDist,
  z.discriminatedUnion(
    'dist',
    [
      z.strictObject({ dist: z.literal('fixed'), tokens: posInt() }),
      z.strictObject({ dist: z.literal('uniform'), min: posInt(), max: posInt() }).superRefine(rangeCheck),
      z
        .strictObject({
          dist: z.literal('quantiles'),
          median: z.number().positive(),
          p90: z.number().positive(),
          min: posInt().default(1),
          max: posInt().default(1 << 20),
        })
        .superRefine((d, ctx) => {
          if (d.p90 <= d.median) ctx.addIssue({ code: 'custom', path: ['p90'], input: d.p90, message: `must be > median (${d.median})` });
          rangeCheck(d, ctx);
        }),
      z
        .strictObject({
          dist: z.literal('zipf'),
          theta: z.number().positive(),
          min: posInt(),
          max: posInt(),
          scramble: z.boolean().default(false),
        })
        .superRefine((d, ctx) => {
          rangeCheck(d, ctx);
          if (d.max - d.min > 1_000_000) ctx.addIssue({ code: 'custom', path: ['max'], input: d.max, message: 'must be within 1,000,000 of min' });
        }),
    ],
    { error: 'must be a token count or { dist: fixed | uniform | quantiles | zipf, ... }' },
  ),
);

/** Tags the lengths object with the variant its keys name, so errors point at the right fields. */
function inferLengthsKind(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const kind = 'preset' in v ? 'preset' : 'trace' in v ? 'trace' : 'prompt' in v || 'output' in v ? 'dists' : undefined;
  return kind ? { kind, ...v } : v;
}

const lengthsSchema = z.preprocess(
  inferLengthsKind,
  z.discriminatedUnion(
    'kind',
    [
      z.strictObject({
        kind: z.literal('preset'),
        preset: z.enum(PRESET_NAMES as [PresetName, ...PresetName[]]),
      }),
      z.strictObject({
        kind: z.literal('dists'),
        prompt: lengthDistSchema,
        output: lengthDistSchema,
        maxTotalTokens: posInt().optional(),
      }),
      z.strictObject({
        kind: z.literal('trace'),
        /** Path as written, resolved against the recipe's directory by traceFile.ts. */
        trace: z.string().min(1),
        maxTotalTokens: posInt().default(4096),
      }),
    ],
    { error: 'must be { preset: name }, { prompt, output } or { trace: file.csv, maxTotalTokens }' },
  ),
);

const arrivalsSchema = z.discriminatedUnion(
  'process',
  [
    z.strictObject({ process: z.literal('poisson') }),
    z.strictObject({ process: z.literal('gamma'), burstiness: z.number().positive() }),
    z.strictObject({ process: z.literal('constant') }),
    z.strictObject({ process: z.literal('trace'), timeScale: z.number().positive().optional() }),
  ],
  { error: 'must be { process: poisson | gamma | constant | trace }' },
);

const promptsSchema = z
  .strictObject({
    format: z.enum(['token-ids', 'text']).default('token-ids'),
    /** Token ids are drawn from [lo, hi); default: what fits the vocabulary the server states. */
    tokenIdRange: z.tuple([z.number().int().min(0), posInt()]).optional(),
  })
  .superRefine((p, ctx) => {
    const r = p.tokenIdRange;
    if (r && r[1] - r[0] < 16) ctx.addIssue({ code: 'custom', path: ['tokenIdRange'], input: r, message: `must span at least 16 ids, got [${r[0]}, ${r[1]})` });
  });

/** `off` | `on` | { sharedPrefix } → one shape: the cache mode and the deliberate sharing, if any. */
function normalizePromptCache(v: unknown): unknown {
  if (v === 'off' || v === 'on' || v === false || v === true) return { mode: v === 'on' || v === true ? 'on' : 'off' };
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && !('mode' in v)) return { mode: 'on', ...v };
  return v;
}

const promptCacheSchema = z.preprocess(
  normalizePromptCache,
  z
    .strictObject(
      {
        mode: z.enum(['off', 'on']),
        sharedPrefix: z.strictObject({ tokens: posInt(), fraction: z.number().min(0).max(1) }).optional(),
      },
      { error: 'must be off, on, or { sharedPrefix: { tokens, fraction } }' },
    )
    .superRefine((c, ctx) => {
      if (c.mode === 'off' && c.sharedPrefix) {
        ctx.addIssue({ code: 'custom', path: ['sharedPrefix'], input: c.sharedPrefix, message: 'needs the prompt cache on (a shared prefix only matters to a cache)' });
      }
    })
    .transform((c) => ({ mode: c.mode, sharedPrefix: c.sharedPrefix ?? null })),
);

/** The recipe's workload section; the lead's recipe loader composes it with the other sections. */
export const workloadSchema = z
  .strictObject({
    api: z.enum(['completions', 'chat']).default('completions'),
    lengths: lengthsSchema,
    arrivals: arrivalsSchema.default({ process: 'poisson' }),
    seed: z.number().int().min(0).max(0xffffffff).default(42),
    prompts: promptsSchema.prefault({}),
    promptCache: promptCacheSchema.default({ mode: 'off', sharedPrefix: null }),
    tokenDriftTolerance: z.number().min(0).max(1).default(0.02),
  })
  .superRefine((w, ctx) => {
    if (w.arrivals.process === 'trace' && w.lengths.kind !== 'trace') {
      ctx.addIssue({
        code: 'custom',
        path: ['arrivals', 'process'],
        input: w.arrivals.process,
        message: 'must not be "trace" unless workload.lengths names a trace file with an arrived_at column',
      });
    }
  });

export type WorkloadSpec = z.output<typeof workloadSchema>;
export type LengthsSpec = WorkloadSpec['lengths'];
export type PromptCacheSpec = WorkloadSpec['promptCache'];
export type { LengthDist };
