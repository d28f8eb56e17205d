// The recipe's `target` section: which engine to start, where, and exactly how. Parsed once here
// (engine-specific rules included) so the container-spec renderer and launcher trust it as is.
//
// Interface (stable, used by harness/recipe/parse.ts): `targetSchema` (zod) and its output type
// `TargetSpec`. Durations come out in seconds (`readyTimeoutS`, `sim.faults.startDelayS`, ...).
import { z } from 'zod';
import { durationS, fraction, positiveInt } from '../util/zodKit.ts';

/** Flags the adapters set themselves; passing them again in extraArgs would silently fight them. */
export const MANAGED_FLAGS = ['--host', '--port', '--model', '--tensor-parallel-size', '--served-model-name'];

const IMAGE_RE = /^[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::\d+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/;
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

const envName = () => z.string().regex(ENV_NAME_RE, 'must be an environment variable name such as HF_TOKEN');

const engineArgsSchema = z
  .strictObject({
    gpuMemoryUtilization: z.number().gt(0).max(1).default(0.9),
    maxNumSeqs: positiveInt().default(256),
    maxNumBatchedTokens: positiveInt().optional(),
    maxModelLen: positiveInt().optional(),
    /** Sarathi-Serve's prefill chunk (tokens per iteration); the papers ran 512. */
    chunkSize: positiveInt().optional(),
    loadFormat: z.enum(['auto', 'dummy', 'safetensors', 'pt']).optional(),
    dtype: z.enum(['auto', 'half', 'float16', 'bfloat16', 'float', 'float32']).optional(),
    extraArgs: z.array(z.string()).default([]),
  })
  .superRefine((a, ctx) => {
    a.extraArgs.forEach((arg, i) => {
      const flag = arg.split('=')[0];
      if (MANAGED_FLAGS.includes(flag)) {
        ctx.addIssue({
          code: 'custom',
          path: ['extraArgs', i],
          input: arg,
          message: `must not set ${flag} (fluidcap sets it from the target section)`,
        });
      }
    });
  });

// The simulated engine's fault injection, mapped one to one onto `fluidcap sim serve` flags.
const faultsSchema = z
  .strictObject({
    crashAfter: positiveInt().optional(),
    stallFraction: fraction().optional(),
    stallFor: durationS().optional(),
    http429Fraction: fraction().optional(),
    http500Fraction: fraction().optional(),
    malformedSseFraction: fraction().optional(),
    exitAtStart: z.boolean().optional(),
    startDelay: durationS({ allowZero: true }).optional(),
    seed: z.number().int().optional(),
  })
  .transform(({ stallFor, startDelay, ...rest }) => ({ ...rest, stallForS: stallFor, startDelayS: startDelay }));

const simSchema = z.strictObject({
  timeScale: z.number().positive().default(1),
  scheduler: z.enum(['vllm', 'sarathi']).default('vllm'),
  faults: faultsSchema.prefault({}),
});

const endpointSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://10.0.0.5:8000' }),
  /** Name of the local environment variable holding the API key (never the key itself). */
  apiKeyEnv: envName().optional(),
});

const gpuIdleSchema = z
  .strictObject({
    /** Used memory per GPU that still counts as idle (driver and display overhead). */
    maxUsedMiB: z.number().min(0).default(1024),
    timeout: durationS().default(120),
  })
  .transform(({ timeout, ...rest }) => ({ ...rest, timeoutS: timeout }));

const baseTargetSchema = z.strictObject({
  engine: z.enum(['sim', 'vllm', 'sarathi', 'endpoint']),
  image: z.string().regex(IMAGE_RE, 'must be an image reference such as vllm/vllm-openai:v0.8.5 or repo@sha256:<64 hex>').optional(),
  model: z.string().min(1).optional(),
  gpuProfile: z.string().min(1).optional(),
  host: z.string().min(1).default('local'),
  gpus: z.array(z.number().int().min(0)).min(1).default([0]),
  tensorParallel: positiveInt().default(1),
  port: z.number().int().min(1).max(65535).default(8000),
  engineArgs: engineArgsSchema.prefault({}),
  sim: simSchema.optional(),
  endpoint: endpointSchema.optional(),
  secrets: z.record(envName(), envName()).default({}),
  access: z.enum(['direct', 'ssh-tunnel']).default('direct'),
  /** How long loading may take before the launch fails (a 70B model can take minutes). */
  readyTimeout: durationS().default(900),
  /** Shared memory for NCCL between tensor-parallel workers. */
  shmSizeGiB: z.number().positive().default(16),
  gpuIdle: gpuIdleSchema.prefault({}),
});

type BaseTarget = z.output<typeof baseTargetSchema>;

// Runs even when other fields failed (so every problem is reported at once): fields may be raw.
function checkEngineRules(t: BaseTarget, ctx: z.RefinementCtx): void {
  if (!['sim', 'vllm', 'sarathi', 'endpoint'].includes(t.engine)) return;
  const issue = (path: (string | number)[], input: unknown, message: string) =>
    ctx.addIssue({ code: 'custom', path, input, message });
  const container = t.engine !== 'endpoint';
  if ((t.engine === 'vllm' || t.engine === 'sarathi') && t.image === undefined) {
    issue(['image'], t.image, `is required for engine ${t.engine} (e.g. vllm/vllm-openai:v0.8.5, best pinned by @sha256 digest)`);
  }
  if (!container && t.image !== undefined) issue(['image'], t.image, 'must be absent for engine endpoint (nothing is launched)');
  if (container && t.model === undefined) issue(['model'], t.model, `is required for engine ${t.engine}`);
  if (t.engine === 'endpoint' && t.endpoint === undefined) issue(['endpoint', 'url'], undefined, 'is required for engine endpoint');
  if (t.engine !== 'endpoint' && t.endpoint !== undefined) issue(['endpoint'], t.endpoint, 'is only for engine endpoint');
  if (t.engine !== 'sim' && t.sim !== undefined) issue(['sim'], t.sim, 'is only for engine sim');
  if (!Array.isArray(t.gpus) || typeof t.engineArgs !== 'object' || t.engineArgs === null) return;
  if (new Set(t.gpus).size !== t.gpus.length) issue(['gpus'], t.gpus, 'must not repeat a GPU id');
  if ((t.engine === 'vllm' || t.engine === 'sarathi') && t.gpus.length !== t.tensorParallel) {
    issue(['gpus'], t.gpus, `must list exactly tensorParallel (${t.tensorParallel}) GPU ids`);
  }
  const a = t.engineArgs;
  if (t.engine === 'vllm' && a.maxNumBatchedTokens !== undefined && a.maxModelLen !== undefined && a.maxNumBatchedTokens < a.maxModelLen) {
    issue(['engineArgs', 'maxNumBatchedTokens'], a.maxNumBatchedTokens,
      `must be >= engineArgs.maxModelLen (${a.maxModelLen}) without chunked prefill (vLLM refuses otherwise)`);
  }
  if (t.engine === 'sarathi' && a.maxNumBatchedTokens !== undefined && a.maxNumBatchedTokens !== (a.chunkSize ?? 512)) {
    issue(['engineArgs', 'maxNumBatchedTokens'], a.maxNumBatchedTokens,
      'must be left out for engine sarathi (the chunk size is the per-iteration token budget; set engineArgs.chunkSize)');
  }
  if (t.access === 'ssh-tunnel' && (t.host === 'local' || t.engine === 'endpoint')) {
    issue(['access'], t.access, 'ssh-tunnel needs a remote inventory host (not local, not engine endpoint)');
  }
}

/** The recipe's `target` section (owner: provisioning). */
export const targetSchema = baseTargetSchema
  .superRefine(checkEngineRules, { when: (payload) => typeof payload.value === 'object' && payload.value !== null })
  .transform(({ readyTimeout, engineArgs, ...t }) => ({
  ...t,
  readyTimeoutS: readyTimeout,
  engineArgs: {
    ...engineArgs,
    chunkSize: engineArgs.chunkSize ?? (t.engine === 'sarathi' || t.sim?.scheduler === 'sarathi' ? 512 : undefined),
  },
}));

/** A validated target section, as every provisioning function takes it. */
export type TargetSpec = z.output<typeof targetSchema>;
export type TargetInput = z.input<typeof targetSchema>;
