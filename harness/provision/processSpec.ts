// An engine run as a process on its host (`target.runtime: process`), as plain data. The argv is
// the one the container adapters write (renderContainerSpec), so a recipe means the same flags
// either way; only what the container maps is undone: a file the container sees under /models is
// the host's own path, the Hugging Face cache is the host's, GPUs are CUDA_VISIBLE_DEVICES.
// Pure, but for the one read renderContainerSpec does (llamacpp.modelFileEnv).
//
// Interface (stable): `renderProcessSpec(target, opts) → ProcessSpec`, `processCommandLine(spec, prefix)`,
// `formatProcessCommand(spec)` (the equivalent shell line).
import { UserError, describeValue } from '../util/errors.ts';
import { renderContainerSpec, type ContainerSpec, type RenderOptions } from './containerSpec.ts';
import type { TargetSpec } from './targetSpec.ts';
import { shellQuoteVisible } from '../util/shellQuote.ts';

/** Everything needed to start one engine process, as data. */
export interface ProcessSpec extends Omit<ContainerSpec, 'runtime' | 'image' | 'mounts' | 'ipcMode' | 'shmSizeBytes' | 'networkMode'> {
  runtime: 'process';
  /** `target.process.command`: the program and its first words; `argv` follows them. */
  command: string[];
}

/** True for a command that ends in `vllm serve`, which takes the model as its first argument. */
function isVllmServe(command: readonly string[]): boolean {
  const program = command[command.length - 2] ?? '';
  return command[command.length - 1] === 'serve' && (program === 'vllm' || program.endsWith('/vllm'));
}

/** The process spec for a target whose runtime is process. */
export function renderProcessSpec(target: TargetSpec, opts: RenderOptions): ProcessSpec {
  const where = opts.recipeFile ? `${opts.recipeFile}: ` : '';
  if (target.runtime !== 'process' || target.process === undefined || target.engine === 'endpoint') {
    throw new UserError(`${where}target.runtime must be process with target.process.command set, got ${describeValue(target.runtime)}`);
  }
  const command = target.process.command;
  const version = target.process.version;
  // The command stands where an image would: in messages about the version it runs.
  const container = renderContainerSpec(
    { ...target, image: command.join(' ') },
    { ...opts, engineVersion: opts.engineVersion ?? { version: version ?? null, source: version === undefined ? 'unknown' : 'recipe' } },
  )!;
  const fromMount = new Map(container.mounts.map((m) => [m.target, m.source]));
  let argv = container.argv.map((a) => fromMount.get(a) ?? a);
  // vLLM 0.8's `vllm serve` refuses a --model option (the model is its positional argument); later
  // versions move --model there themselves. The python entrypoint takes argv as it is.
  if ((target.engine === 'vllm' || target.engine === 'sarathi') && isVllmServe(command)) {
    const at = argv.indexOf('--model');
    if (at >= 0) argv = [argv[at + 1], ...argv.slice(0, at), ...argv.slice(at + 2)];
  }
  const env: Record<string, string> = { ...container.env };
  if (env.HF_HOME !== undefined && fromMount.has(env.HF_HOME)) {
    // The process uses the host's cache: the inventory's hfCache when it names one, else its own default.
    if (opts.hostHfCache !== undefined && target.env.HF_HOME === undefined) env.HF_HOME = opts.hostHfCache;
    else if (target.env.HF_HOME === undefined) delete env.HF_HOME;
  }
  if (container.gpuDeviceIds !== null && env.CUDA_VISIBLE_DEVICES === undefined) env.CUDA_VISIBLE_DEVICES = container.gpuDeviceIds.join(',');
  const { image: _image, mounts: _mounts, ipcMode: _ipc, shmSizeBytes: _shm, networkMode: _net, ...rest } = container;
  return {
    ...rest,
    runtime: 'process',
    command: [...command],
    argv,
    env,
    basis: { ...container.basis },
  };
}

/** The whole argv that starts the engine: the caller's launcher prefix (srun ...), the command, the adapter's flags. */
export function processCommandLine(spec: Pick<ProcessSpec, 'command' | 'argv'>, prefix: readonly string[] = []): string[] {
  return [...prefix, ...spec.command, ...spec.argv];
}

/**
 * The equivalent command on the host, for people reading a dry run (never executed; the launch
 * passes the environment on stdin and keeps a state directory): a POSIX shell line, secrets by
 * name (`HF_TOKEN="$HF_TOKEN"`), `~/` left unquoted so the shell expands it.
 */
export function formatProcessCommand(spec: Pick<ProcessSpec, 'env' | 'secretEnv' | 'command' | 'argv'>, prefix: readonly string[] = []): string {
  const word = (w: string) => (w.startsWith('~/') ? `~/${shellQuoteVisible(w.slice(2))}` : shellQuoteVisible(w));
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${word(v)}`);
  const secrets = spec.secretEnv.map((s) => `${s.name}="$${s.fromEnv}"`);
  return ['env', ...env, ...secrets, 'setsid', ...processCommandLine(spec, prefix).map(word)].join(' ');
}
