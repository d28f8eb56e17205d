// Engine adapters: a validated target becomes a plain-data container spec (exact argv, env names,
// GPUs, IPC, mounts, labels, name, port, prompt-cache switches). `--dry-run` prints it; the launcher
// executes it. Pure, but for one read: a llamacpp model path named by `llamacpp.modelFileEnv` comes
// from `opts.env` (default: this process's environment).
//
// Interface (stable): `renderContainerSpec(target, { runId, ... }) → ContainerSpec | null` (null for
// engine endpoint: nothing to launch), `formatDockerRun(spec)` (the equivalent `docker run` line).
import { UserError, describeValue } from '../util/errors.ts';
import { hostPathProblem, type TargetSpec } from './targetSpec.ts';
import { shellQuoteVisible } from '../util/shellQuote.ts';
import { versionFromTag, vllmVersionedParts, type VersionSource, type VllmScheduler } from './engineVersion.ts';

export const RUN_LABEL = 'fluidcap.run';
/** The image scripts/build-llama-image.mjs builds; used when a llamacpp target names none. */
export const DEFAULT_LLAMACPP_IMAGE = 'fluidcap/llama-server:dev';
/** Where the GGUF file appears inside a llama.cpp container (mounted read-only). */
export const CONTAINER_MODEL_DIR = '/models';
export const CONTAINER_HF_CACHE = '/root/.cache/huggingface';
/** Where the Hugging Face cache lives on a host whose inventory entry does not say (~ = remote $HOME). */
export const DEFAULT_HOST_HF_CACHE = '~/.cache/huggingface';
export const RUN_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

export interface ContainerMount {
  /** Host path; a leading `~/` is the remote user's home, resolved at launch. */
  source: string;
  target: string;
  readOnly: boolean;
}

/** Everything needed to start one engine container, as data. */
export interface ContainerSpec {
  /** Absent on a container spec; `process` on a ProcessSpec (processSpec.ts). */
  runtime?: 'container';
  runId: string;
  engine: 'vllm' | 'sarathi' | 'sim' | 'llamacpp';
  /** Deterministic, so a leftover of the same run is found and replaced, never duplicated. */
  name: string;
  /** As the recipe wrote it (tag or @sha256 digest); the launcher records the resolved digest. */
  image: string;
  /** Arguments after the image's entrypoint (vLLM's OpenAI server, or `fluidcap sim serve`). */
  argv: string[];
  /** Non-secret environment. */
  env: Record<string, string>;
  /** Secrets by name only: container variable ← local environment variable, read at launch. */
  secretEnv: { name: string; fromEnv: string }[];
  /** GPU device ids for Docker's device request (`--gpus '"device=0,1"'`); null: no GPU. */
  gpuDeviceIds: string[] | null;
  /** `host` for tensor parallelism (NCCL needs shared memory across workers). */
  ipcMode: 'host' | null;
  shmSizeBytes: number | null;
  mounts: ContainerMount[];
  labels: Record<string, string>;
  /** The engine listens on the host's network: no port mapping, the port is the host's. */
  networkMode: 'host';
  port: number;
  readyTimeoutS: number;
  /**
   * Whether the engine may serve prompts from its cache. `off` (capacity runs) switches every
   * cache the engine has a flag for off, so a repeated prefix is computed again as a user's would be.
   */
  promptCache: PromptCache;
  /** Path the readiness check polls before /v1/models (every supported engine answers /health). */
  healthPath: string;
  /** What the image must run, and the engine version the argv and env were written for. */
  basis: EngineBasis;
}

/**
 * The engine a container must run and the version its argv and env were written for. The launcher
 * reads the version from the image and, when it differs, writes them again (`forVersion`).
 */
export interface EngineBasis {
  family: 'vllm' | 'sim' | 'llamacpp';
  /** The scheduling the recipe asks for (vLLM and the simulated engine); null for llama.cpp. */
  scheduler: VllmScheduler | null;
  version: string | null;
  versionSource: VersionSource;
  /** The argv switches and env names fluidcap chose for that version (replaced for another one). */
  versionArgv: string[];
  versionEnv: string[];
}

/** The version a spec is written for, and what the image's own --help says (null: not read). */
export interface EngineVersionFacts {
  version: string | null;
  source: VersionSource;
  hasDisableLogRequests?: boolean | null;
}

export type PromptCache = 'off' | 'on';

export interface RenderOptions {
  runId: string;
  /** The host's GPU profile (inventory), used when the target names none. */
  hostGpuProfile?: string;
  /** The host's Hugging Face cache (inventory `hfCache`). */
  hostHfCache?: string;
  /** Model catalog lookup for the simulated engine; unknown names fail here, before launch. */
  modelCatalog?: (name: string) => unknown;
  /** The recipe's prompt-cache choice (workload.promptCache); capacity runs default to off. */
  promptCache?: PromptCache;
  /** Where `llamacpp.modelFileEnv` is looked up (default: this process's environment). */
  env?: Record<string, string | undefined>;
  /** The recipe file, named in the errors this renderer raises. */
  recipeFile?: string;
  /** The engine version to write the argv and env for; default: the one the image tag names. */
  engineVersion?: EngineVersionFacts;
}

const GiB = 1024 ** 3;
const num = (n: number) => String(n);

// vLLM's OpenAI server flags (vllm serve / python -m vllm.entrypoints.openai.api_server).
function vllmArgv(t: TargetSpec, promptCache: PromptCache): string[] {
  const a = t.engineArgs;
  const argv = [
    '--model', t.model!,
    '--host', '0.0.0.0',
    '--port', num(t.port),
    '--tensor-parallel-size', num(t.tensorParallel),
    '--gpu-memory-utilization', num(a.gpuMemoryUtilization),
    '--max-num-seqs', num(a.maxNumSeqs),
  ];
  if (a.maxModelLen !== undefined) argv.push('--max-model-len', num(a.maxModelLen));
  if (t.engine === 'sarathi') {
    // Sarathi-Serve as the papers ran it in vLLM: chunked prefill, the chunk size as the per-iteration token budget.
    argv.push('--enable-chunked-prefill', '--max-num-batched-tokens', num(a.chunkSize ?? 512));
  } else {
    // The prefill-prioritizing baseline: whole prompts, decodes paused during prefills.
    argv.push('--no-enable-chunked-prefill');
    if (a.maxNumBatchedTokens !== undefined) argv.push('--max-num-batched-tokens', num(a.maxNumBatchedTokens));
  }
  // V1 (the default engine since 0.8) turns automatic prefix caching on; V0 has it off, the flag makes both agree.
  argv.push(promptCache === 'on' ? '--enable-prefix-caching' : '--no-enable-prefix-caching');
  if (a.loadFormat !== undefined) argv.push('--load-format', a.loadFormat);
  if (a.dtype !== undefined) argv.push('--dtype', a.dtype);
  return [...argv, ...a.extraArgs];
}

// llama.cpp's `llama-server` flags (the image's entrypoint is the binary itself).
function llamacppArgv(t: TargetSpec, modelInContainer: string, promptCache: PromptCache): string[] {
  const a = t.engineArgs;
  const argv = [
    '--host', '0.0.0.0',
    '--port', num(t.port),
    '--model', modelInContainer,
    '--alias', t.model!,
    '--parallel', num(a.slots!),
    '--ctx-size', num(a.ctxSize!),
  ];
  if (a.threads !== undefined) argv.push('--threads', num(a.threads));
  if (a.metrics) argv.push('--metrics');
  // Requests default to cache_prompt false and the host-memory prompt cache is off: each prompt
  // is evaluated in full, whatever an earlier request left in a slot.
  if (promptCache === 'off') argv.push('--no-cache-prompt', '--cache-ram', '0');
  return [...argv, ...a.extraArgs];
}

/** The GGUF path on the engine host: written in the recipe, or read from the named environment variable. */
function llamacppModelFile(t: TargetSpec, env: Record<string, string | undefined>, where: string): string {
  const l = t.llamacpp!;
  if (l.modelFile !== undefined) return l.modelFile;
  const value = env[l.modelFileEnv!];
  if (value === undefined || value === '') {
    throw new UserError(`${where}target.llamacpp.modelFileEnv names the environment variable ${l.modelFileEnv}, which is not set (export it as the GGUF file's path on the engine host)`);
  }
  const problem = hostPathProblem(value);
  if (problem) throw new UserError(`${where}target.llamacpp.modelFileEnv: ${l.modelFileEnv} ${problem}, got ${describeValue(value)}`);
  return value;
}

const FAULT_FLAGS: [key: string, flag: string][] = [
  ['crashAfter', '--fault-crash-after'],
  ['stallFraction', '--fault-stall-fraction'],
  ['stallForS', '--fault-stall-for'],
  ['http429Fraction', '--fault-http-429-fraction'],
  ['http500Fraction', '--fault-http-500-fraction'],
  ['malformedSseFraction', '--fault-malformed-sse-fraction'],
  ['startDelayS', '--start-delay'],
  ['seed', '--fault-seed'],
];

// `fluidcap sim serve` flags (the image's entrypoint supplies `sim serve`).
function simArgv(t: TargetSpec, gpuProfile: string | undefined): string[] {
  const a = t.engineArgs;
  const sim = t.sim ?? { timeScale: 1, scheduler: 'vllm' as const, faults: {} as Record<string, unknown> };
  const argv = ['--host', '0.0.0.0', '--port', num(t.port), '--model', t.model!];
  if (gpuProfile !== undefined) argv.push('--gpu', gpuProfile);
  argv.push(
    '--scheduler', sim.scheduler,
    '--time-scale', num(sim.timeScale),
    '--tensor-parallel', num(t.tensorParallel),
    '--gpu-memory-utilization', num(a.gpuMemoryUtilization),
    '--max-num-seqs', num(a.maxNumSeqs),
  );
  if (a.maxNumBatchedTokens !== undefined) argv.push('--max-num-batched-tokens', num(a.maxNumBatchedTokens));
  if (a.chunkSize !== undefined) argv.push('--chunk-size', num(a.chunkSize));
  if (a.maxModelLen !== undefined) argv.push('--max-model-len', num(a.maxModelLen));
  if ('stream' in sim && sim.stream !== 'plain') argv.push('--stream', sim.stream);
  if ('emptyTextFraction' in sim && sim.emptyTextFraction !== undefined) argv.push('--empty-text-fraction', num(sim.emptyTextFraction));
  if ('mergeFraction' in sim && sim.mergeFraction !== undefined) argv.push('--merge-fraction', num(sim.mergeFraction));
  const faults = sim.faults as Record<string, unknown>;
  if (faults.exitAtStart === true) argv.push('--fault-exit-at-start');
  for (const [key, flag] of FAULT_FLAGS) if (faults[key] !== undefined) argv.push(flag, String(faults[key]));
  return [...argv, ...a.extraArgs];
}

/** The container spec for a target, or null when the engine is an existing endpoint. */
export function renderContainerSpec(target: TargetSpec, opts: RenderOptions): ContainerSpec | null {
  if (target.engine === 'endpoint') return null;
  if (!RUN_ID_RE.test(opts.runId)) {
    throw new UserError(`run id must be letters, digits, ".", "_" or "-" (it names the container), got ${describeValue(opts.runId)}`);
  }
  const engine = target.engine;
  const gpuProfile = target.gpuProfile ?? opts.hostGpuProfile;
  if (engine === 'sim' && opts.modelCatalog && opts.modelCatalog(target.model!) === undefined) {
    throw new UserError(`target.model must name a model in the simulated engine's catalog, got ${describeValue(target.model)}`);
  }
  const gpuEngine = engine === 'vllm' || engine === 'sarathi';
  const tensorParallel = gpuEngine && target.tensorParallel > 1;
  const secretEnv = Object.entries(target.secrets).map(([name, fromEnv]) => ({ name, fromEnv }));
  const promptCache = opts.promptCache ?? 'off';
  let argv: string[];
  let image: string;
  let mounts: ContainerMount[] = [];
  if (gpuEngine) {
    argv = vllmArgv(target, promptCache);
    image = target.image!;
    mounts = [{ source: opts.hostHfCache ?? DEFAULT_HOST_HF_CACHE, target: CONTAINER_HF_CACHE, readOnly: false }];
  } else if (engine === 'llamacpp') {
    const modelFile = llamacppModelFile(target, opts.env ?? process.env, opts.recipeFile ? `${opts.recipeFile}: ` : '');
    const inContainer = `${CONTAINER_MODEL_DIR}/${modelFile.slice(modelFile.lastIndexOf('/') + 1)}`;
    argv = llamacppArgv(target, inContainer, promptCache);
    image = target.image ?? DEFAULT_LLAMACPP_IMAGE;
    mounts = [{ source: modelFile, target: inContainer, readOnly: true }];
  } else {
    argv = simArgv(target, gpuProfile);
    image = target.image ?? 'fluidcap/sim:dev';
  }
  const scheduler: VllmScheduler | null = gpuEngine
    ? engine === 'sarathi' ? 'chunked-prefill' : 'prefill-first'
    : engine === 'sim' ? (target.sim?.scheduler === 'sarathi' ? 'chunked-prefill' : 'prefill-first') : null;
  const spec: ContainerSpec = {
    runId: opts.runId,
    engine,
    name: `fluidcap-${opts.runId}-${engine}`,
    image,
    argv,
    env: { ...(gpuEngine ? { HF_HOME: CONTAINER_HF_CACHE } : {}), ...target.env },
    secretEnv,
    gpuDeviceIds: gpuEngine ? target.gpus.map(String) : null,
    ipcMode: tensorParallel ? 'host' : null,
    shmSizeBytes: gpuEngine && !tensorParallel ? Math.round(target.shmSizeGiB * GiB) : null,
    mounts,
    labels: {
      [RUN_LABEL]: opts.runId,
      'fluidcap.engine': engine,
      'fluidcap.model': target.model!,
      'fluidcap.port': num(target.port),
      ...(gpuEngine ? { 'fluidcap.gpus': target.gpus.join(',') } : {}),
    },
    networkMode: 'host',
    port: target.port,
    readyTimeoutS: target.readyTimeoutS,
    promptCache,
    healthPath: '/health',
    basis: {
      family: gpuEngine ? 'vllm' : engine,
      scheduler,
      version: null,
      versionSource: 'unknown',
      versionArgv: [],
      versionEnv: [],
    },
  };
  const tagVersion = versionFromTag(image);
  const version = opts.engineVersion ?? { version: tagVersion, source: tagVersion === null ? 'unknown' as const : 'tag' as const };
  return forVersion(spec, version, opts.recipeFile ? `${opts.recipeFile}: ` : '');
}

/**
 * The spec written for another engine version: the switches and variables chosen for the old one
 * are taken out and those of the new one added (before the recipe's extraArgs, which stay last).
 * Throws a UserError when that version cannot run the scheduler the recipe asks for.
 */
export function forVersion(spec: ContainerSpec, facts: EngineVersionFacts, where = ''): ContainerSpec {
  const b = spec.basis;
  const argv = spec.argv.filter((a) => !b.versionArgv.includes(a));
  const env = Object.fromEntries(Object.entries(spec.env).filter(([k]) => !b.versionEnv.includes(k)));
  const basis: EngineBasis = { ...b, version: facts.version, versionSource: facts.source, versionArgv: [], versionEnv: [] };
  if (b.family !== 'vllm' || b.scheduler === null) return { ...spec, argv, env, basis };
  const parts = vllmVersionedParts(b.scheduler, {
    image: spec.image, version: facts.version, source: facts.source, userEnv: env, hasDisableLogRequests: facts.hasDisableLogRequests, where,
  });
  const added = parts.argv.filter((a) => !argv.includes(a));
  const at = managedArgvEnd(argv);
  return {
    ...spec,
    argv: [...argv.slice(0, at), ...added, ...argv.slice(at)],
    env: { ...env, ...parts.env },
    basis: { ...basis, versionArgv: added, versionEnv: Object.keys(parts.env) },
  };
}

// Where fluidcap's own vLLM flags end and the recipe's extraArgs begin: after the last flag
// vllmArgv writes (the prompt-cache switch, then optional --load-format/--dtype with their values).
function managedArgvEnd(argv: string[]): number {
  let i = argv.findIndex((a) => a === '--enable-prefix-caching' || a === '--no-enable-prefix-caching');
  if (i < 0) return argv.length;
  i++;
  while (argv[i] === '--load-format' || argv[i] === '--dtype') i += 2;
  return i;
}

/**
 * The equivalent `docker run` command, for people reading a dry run (never executed): a correct
 * POSIX shell line to run on the engine's host. Secrets pass by name (`-e HF_TOKEN`, the value
 * taken from the environment; a differently named local variable is assigned in front), so no
 * secret value would appear in the command line; `~/` stays unquoted so the shell expands it.
 * Control characters are written as escapes: the line is printed on a terminal, after a `#`.
 */
export function formatDockerRun(spec: ContainerSpec): string {
  const words: string[] = [];
  const word = (w: string) => words.push(shellQuoteVisible(w));
  const assignments = spec.secretEnv.filter((s) => s.name !== s.fromEnv).map((s) => `${s.name}="$${s.fromEnv}"`);
  for (const w of ['docker', 'run', '-d', '--name', spec.name, '--network', spec.networkMode]) word(w);
  if (spec.gpuDeviceIds) words.push('--gpus', shellQuoteVisible(`"device=${spec.gpuDeviceIds.join(',')}"`));
  if (spec.ipcMode) words.push('--ipc', shellQuoteVisible(spec.ipcMode));
  if (spec.shmSizeBytes) words.push('--shm-size', shellQuoteVisible(`${spec.shmSizeBytes / GiB}g`));
  for (const m of spec.mounts) {
    const volume = `${m.source}:${m.target}${m.readOnly ? ':ro' : ''}`;
    words.push('-v', volume.startsWith('~/') ? `~/${shellQuoteVisible(volume.slice(2))}` : shellQuoteVisible(volume));
  }
  for (const [k, v] of Object.entries(spec.env)) words.push('-e', shellQuoteVisible(`${k}=${v}`));
  for (const s of spec.secretEnv) words.push('-e', shellQuoteVisible(s.name));
  for (const [k, v] of Object.entries(spec.labels)) words.push('--label', shellQuoteVisible(`${k}=${v}`));
  word(spec.image);
  for (const a of spec.argv) word(a);
  return [...assignments, ...words].join(' ');
}
