// The recipe's `target` section: which engine to start, where, and exactly how. Parsed once here
// (engine-specific rules included) so the container-spec renderer and launcher trust it as is.
//
// Interface (stable, used by harness/recipe/parse.ts): `targetSchema` (zod) and its output type
// `TargetSpec`. Durations come out in seconds (`readyTimeoutS`, `sim.faults.startDelayS`, ...).
import { z } from 'zod';
import { durationS, fraction, positiveInt } from '../util/zodKit.ts';

/** Flags the adapters set themselves; passing them again in extraArgs would silently fight them. */
export const MANAGED_FLAGS = ['--host', '--port', '--model', '--tensor-parallel-size', '--served-model-name', '-m', '--alias', '-a'];

/** The engines fluidcap knows; every one but `endpoint` is launched by fluidcap. */
export const ENGINES = ['sim', 'vllm', 'sarathi', 'llamacpp', 'endpoint'] as const;

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
    /** llama.cpp's server slots (`--parallel`): requests decoded together. */
    slots: positiveInt().optional(),
    /** llama.cpp's total KV context (`--ctx-size`), shared by the slots: each gets ctxSize / slots. */
    ctxSize: positiveInt().optional(),
    /** CPU threads of llama.cpp (`--threads`); give 1 when a load generator shares the cores. */
    threads: positiveInt().optional(),
    /** llama.cpp's Prometheus endpoint (`--metrics`); off, /metrics answers 501 and no gauges are archived. */
    metrics: z.boolean().optional(),
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
  /** How tokens are streamed (`sim serve --stream`): plain, or vllm (tokens without text, merged tokens). */
  stream: z.enum(['plain', 'vllm']).default('plain'),
  /** With stream vllm: fraction of tokens streamed with empty text (`--empty-text-fraction`). */
  emptyTextFraction: fraction().optional(),
  /** With stream vllm: fraction of tokens sent with the next one (`--merge-fraction`). */
  mergeFraction: fraction().optional(),
});

const endpointSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://10.0.0.5:8000' }),
  /** Name of the local environment variable holding the API key (never the key itself). */
  apiKeyEnv: envName().optional(),
});

// Where llama.cpp's server finds its GGUF file: a path on the engine host, written in the recipe or
// taken from a local environment variable (so recipes stay free of machine-specific paths).
const llamacppSchema = z
  .strictObject({
    modelFile: z.string().min(1).optional(),
    modelFileEnv: envName().optional(),
  })
  .superRefine((l, ctx) => {
    if ((l.modelFile === undefined) === (l.modelFileEnv === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['modelFile'], input: l.modelFile, message: 'give exactly one of modelFile (a GGUF path on the engine host) or modelFileEnv (a local environment variable holding it)' });
    }
    if (l.modelFile !== undefined) {
      const problem = hostPathProblem(l.modelFile);
      if (problem) ctx.addIssue({ code: 'custom', path: ['modelFile'], input: l.modelFile, message: problem });
    }
  });

/** Why a string cannot be a bind-mount source on the engine host, or null when it can. */
export function hostPathProblem(path: string): string | null {
  if (!path.startsWith('/') && !path.startsWith('~/')) return 'must be an absolute path on the engine host (or start with ~/)';
  // Docker's bind syntax separates source, target and mode with ':'.
  if (path.includes(':') || path.includes(',')) return 'must not contain ":" or "," (Docker bind syntax)';
  if (path.split('/').includes('..')) return 'must not contain ".." segments';
  return null;
}

// How an engine runs on its host: in a container (Docker), or as a process started from
// `process.command` (hosts where Docker is not allowed: a module, a virtual environment, a binary).
export const RUNTIMES = ['container', 'process'] as const;

/** A program as `process.command[0]` may name it: a name found on the host's PATH, or a path. */
const PROGRAM_RE = /^(?:~\/|\/)?[A-Za-z0-9_.+-]+(?:\/[A-Za-z0-9_.+-]+)*$/;

const processSchema = z.strictObject({
  /** The program and its first words (`[/opt/vllm/bin/vllm, serve]`); the adapter's flags follow them. */
  command: z.array(z.string().min(1)).min(1),
  /** The engine version the command runs; vLLM's version-dependent flags are written for it. */
  version: z.string().min(1).optional(),
});

/** Why `word` cannot be `process.command[0]`, or null. */
export function programProblem(word: string): string | null {
  if (word.startsWith('-')) return 'must be a program name or a path, not an option (it must not start with "-")';
  if (!PROGRAM_RE.test(word)) return 'must be a program name or a path (letters, digits, ".", "_", "+", "-" and "/" only; absolute or starting with ~/)';
  if (word.includes('/') && !word.startsWith('/') && !word.startsWith('~/')) return 'must be a program name or an absolute path (or start with ~/), not a relative path';
  if (word.split('/').includes('..')) return 'must not contain ".." segments';
  return null;
}

const gpuIdleSchema = z
  .strictObject({
    /** Used memory per GPU that still counts as idle (driver and display overhead). */
    maxUsedMiB: z.number().min(0).default(1024),
    timeout: durationS().default(120),
  })
  .transform(({ timeout, ...rest }) => ({ ...rest, timeoutS: timeout }));

const baseTargetSchema = z.strictObject({
  engine: z.enum(ENGINES),
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
  llamacpp: llamacppSchema.optional(),
  /** Non-secret container environment, e.g. VLLM_USE_V1: "0" to pin vLLM's V0 engine. */
  env: z.record(envName(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).default({}),
  secrets: z.record(envName(), envName()).default({}),
  access: z.enum(['direct', 'ssh-tunnel']).default('direct'),
  /** How long loading may take before the launch fails (a 70B model can take minutes). */
  readyTimeout: durationS().default(900),
  /** Shared memory for NCCL between tensor-parallel workers. */
  shmSizeGiB: z.number().positive().default(16),
  gpuIdle: gpuIdleSchema.prefault({}),
  runtime: z.enum(RUNTIMES).default('container'),
  process: processSchema.optional(),
});

type BaseTarget = z.output<typeof baseTargetSchema>;

// llama-server flags fluidcap sets itself, with the recipe field that sets them.
const LLAMACPP_FLAG_FIELDS: Record<string, string> = {
  '-np': 'engineArgs.slots', '--parallel': 'engineArgs.slots',
  '-c': 'engineArgs.ctxSize', '--ctx-size': 'engineArgs.ctxSize',
  '-t': 'engineArgs.threads', '--threads': 'engineArgs.threads',
  '--metrics': 'engineArgs.metrics',
  '--cache-prompt': 'the run\'s prompt-cache setting', '--no-cache-prompt': 'the run\'s prompt-cache setting',
  '-cram': 'the run\'s prompt-cache setting', '--cache-ram': 'the run\'s prompt-cache setting',
};

// What process.command looks like for each engine, for the message that asks for it.
const PROCESS_EXAMPLES: Record<string, string> = {
  vllm: '[/opt/vllm-venv/bin/vllm, serve]',
  sarathi: '[/opt/vllm-venv/bin/vllm, serve]',
  llamacpp: '[/opt/llama.cpp/bin/llama-server]',
  sim: '[node, /opt/fluidcap/bin/fluidcap.js, sim, serve]',
};

/** llama.cpp server settings used when engineArgs leaves them out (as in the README's example). */
export const LLAMACPP_DEFAULTS = { slots: 4, ctxSize: 8192, metrics: true } as const;

// Runs even when other fields failed (so every problem is reported at once): fields may be raw.
function checkEngineRules(t: BaseTarget, ctx: z.RefinementCtx): void {
  if (!(ENGINES as readonly string[]).includes(t.engine)) return;
  const issue = (path: (string | number)[], input: unknown, message: string) =>
    ctx.addIssue({ code: 'custom', path, input, message });
  const container = t.engine !== 'endpoint';
  const asProcess = t.runtime === 'process';
  if (asProcess) {
    if (!container) issue(['runtime'], t.runtime, 'must be container (or left out) for engine endpoint (nothing is launched)');
    else if (t.process === undefined) issue(['process', 'command'], undefined, `is required for runtime process (the program that starts the engine on the host, e.g. ${PROCESS_EXAMPLES[t.engine] ?? '[/opt/engine/bin/server]'})`);
    if (t.image !== undefined) issue(['image'], t.image, 'must be absent for runtime process (the engine runs from target.process.command, not an image)');
  } else if (t.process !== undefined) {
    issue(['process'], t.process, 'is only for runtime process (set target.runtime: process)');
  }
  if (t.process !== undefined && t.process !== null && Array.isArray(t.process.command)) {
    const program = t.process.command[0];
    const problem = typeof program === 'string' && program !== '' ? programProblem(program) : null;
    if (problem) issue(['process', 'command', 0], program, problem);
    t.process.command.forEach((w, i) => {
      if (typeof w === 'string' && w.includes('\0')) issue(['process', 'command', i], w, 'must not contain a NUL character');
    });
  }
  if ((t.engine === 'vllm' || t.engine === 'sarathi') && t.image === undefined && !asProcess) {
    issue(['image'], t.image, `is required for engine ${t.engine} (e.g. vllm/vllm-openai:v0.8.5, best pinned by @sha256 digest)`);
  }
  if (!container && t.image !== undefined) issue(['image'], t.image, 'must be absent for engine endpoint (nothing is launched)');
  if (container && t.model === undefined) issue(['model'], t.model, `is required for engine ${t.engine}`);
  if (t.engine === 'endpoint' && t.endpoint === undefined) issue(['endpoint', 'url'], undefined, 'is required for engine endpoint');
  if (t.engine !== 'endpoint' && t.endpoint !== undefined) issue(['endpoint'], t.endpoint, 'is only for engine endpoint');
  if (t.engine !== 'sim' && t.sim !== undefined) issue(['sim'], t.sim, 'is only for engine sim');
  if (t.engine === 'llamacpp' && t.llamacpp === undefined) {
    issue(['llamacpp', 'modelFile'], undefined, 'is required for engine llamacpp (or llamacpp.modelFileEnv: a local environment variable holding the GGUF path)');
  }
  if (t.engine !== 'llamacpp' && t.llamacpp !== undefined) issue(['llamacpp'], t.llamacpp, 'is only for engine llamacpp');
  if (t.engine === 'llamacpp' && t.tensorParallel !== 1) issue(['tensorParallel'], t.tensorParallel, 'must be 1 for engine llamacpp (one CPU process)');
  if (!container && t.env !== undefined && typeof t.env === 'object' && Object.keys(t.env).length > 0) {
    issue(['env'], t.env, 'must be absent for engine endpoint (nothing is launched)');
  }
  if (t.env !== null && typeof t.env === 'object' && t.secrets !== null && typeof t.secrets === 'object') {
    for (const name of Object.keys(t.env)) if (name in t.secrets) issue(['env', name], t.env[name], 'is also a secret; set it in one place');
  }
  if (!Array.isArray(t.gpus) || typeof t.engineArgs !== 'object' || t.engineArgs === null) return;
  if (new Set(t.gpus).size !== t.gpus.length) issue(['gpus'], t.gpus, 'must not repeat a GPU id');
  if ((t.engine === 'vllm' || t.engine === 'sarathi') && t.gpus.length !== t.tensorParallel) {
    issue(['gpus'], t.gpus, `must list exactly tensorParallel (${t.tensorParallel}) GPU ids`);
  }
  const a = t.engineArgs;
  if (t.engine === 'llamacpp' && Array.isArray(a.extraArgs)) {
    a.extraArgs.forEach((arg, i) => {
      const field = LLAMACPP_FLAG_FIELDS[arg.split('=')[0]];
      if (field) issue(['engineArgs', 'extraArgs', i], arg, `must not set ${arg.split('=')[0]} (fluidcap sets it from ${field})`);
    });
  }
  const llamaOnly = (['slots', 'ctxSize', 'threads', 'metrics'] as const).filter((k) => a[k] !== undefined);
  if (t.engine !== 'llamacpp') {
    for (const k of llamaOnly) issue(['engineArgs', k], a[k], 'is only for engine llamacpp');
  } else {
    const perSlot = Math.floor((a.ctxSize ?? LLAMACPP_DEFAULTS.ctxSize) / (a.slots ?? LLAMACPP_DEFAULTS.slots));
    if (perSlot < 1) issue(['engineArgs', 'ctxSize'], a.ctxSize, `must give every slot at least one token (ctxSize >= slots, ${a.slots ?? LLAMACPP_DEFAULTS.slots})`);
    else if (a.maxModelLen !== undefined && a.maxModelLen > perSlot) {
      issue(['engineArgs', 'maxModelLen'], a.maxModelLen,
        `must be <= the context of one slot, ctxSize / slots = ${perSlot} (llama.cpp splits --ctx-size between its slots)`);
    }
  }
  if (t.engine === 'vllm' && a.maxNumBatchedTokens !== undefined && a.maxModelLen !== undefined && a.maxNumBatchedTokens < a.maxModelLen) {
    issue(['engineArgs', 'maxNumBatchedTokens'], a.maxNumBatchedTokens,
      `must be >= engineArgs.maxModelLen (${a.maxModelLen}) without chunked prefill (vLLM refuses otherwise)`);
  }
  // vLLM refuses to start when one iteration's token budget cannot hold one token of every sequence.
  if (typeof a.maxNumSeqs === 'number') {
    const budget: [string, unknown][] = t.engine === 'sarathi' ? [['chunkSize', a.chunkSize ?? 512]] : t.engine === 'vllm' ? [['maxNumBatchedTokens', a.maxNumBatchedTokens]] : [];
    for (const [key, value] of budget) {
      if (typeof value === 'number' && value < a.maxNumSeqs) {
        issue(['engineArgs', key], value, `must be >= engineArgs.maxNumSeqs (${a.maxNumSeqs}): vLLM refuses to start when max_num_batched_tokens${key === 'chunkSize' ? ' (the chunk)' : ''} is below max_num_seqs${key === 'chunkSize' && a.chunkSize === undefined ? ' (the chunk defaults to 512)' : ''}`);
      }
    }
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
  engineArgs: t.engine === 'llamacpp' ? llamacppEngineArgs(engineArgs) : {
    ...engineArgs,
    chunkSize: engineArgs.chunkSize ?? (t.engine === 'sarathi' || t.sim?.scheduler === 'sarathi' ? 512 : undefined),
  },
}));

// Explicit slots, context and metrics (so the run records what the server was told), and the
// longest request the plan may send: the context of one slot.
function llamacppEngineArgs(a: z.output<typeof engineArgsSchema>) {
  const slots = a.slots ?? LLAMACPP_DEFAULTS.slots;
  const ctxSize = a.ctxSize ?? LLAMACPP_DEFAULTS.ctxSize;
  return {
    ...a,
    slots,
    ctxSize,
    metrics: a.metrics ?? LLAMACPP_DEFAULTS.metrics,
    maxModelLen: a.maxModelLen ?? Math.floor(ctxSize / slots),
  };
}

/** A validated target section, as every provisioning function takes it. */
export type TargetSpec = z.output<typeof targetSchema>;
export type TargetInput = z.input<typeof targetSchema>;
