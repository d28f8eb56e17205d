// Knows an engine image before it serves: its version and the flags its own `--help` lists, read
// once per image (keyed by the image's content id, a sha256 digest) from throwaway containers that
// get no GPU and no network, and cached as JSON under the user's cache directory. The launcher then
// writes the version-dependent argv and env for that version and refuses a flag the image lacks.
import type Docker from 'dockerode';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { InfraError, UserError } from '../util/errors.ts';
import { RUN_LABEL, type ContainerSpec, type EngineBasis } from './containerSpec.ts';
import { helpIsSummary, parseHelpFlags, unknownFlags, versionLine } from './helpFlags.ts';
import { createRunContainer } from './teardown.ts';

export interface ImageFacts {
  image: string;
  imageId: string;
  family: EngineBasis['family'];
  /** What the engine printed as its version (vLLM's `__version__`, `--version` otherwise); null if nothing. */
  version: string | null;
  /** Every option its `--help` lists. */
  flags: string[];
}

/** Where learnt image facts are kept: `$XDG_CACHE_HOME/fluidcap/images` or `~/.cache/fluidcap/images`. */
export function defaultImageCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'fluidcap', 'images');
}

// How each family is asked. vLLM's images start its server through Python; its version is read
// from the package itself, as `--version` differs between its entry points.
const VERSION_COMMAND: Record<EngineBasis['family'], { entrypoint?: string[]; cmd: string[] }> = {
  vllm: { entrypoint: ['python3', '-c', 'import vllm; print(vllm.__version__)'], cmd: [] },
  sim: { cmd: ['--version'] },
  llamacpp: { cmd: ['--version'] },
};

const PROBE_TIMEOUT_S = 300;

/** Runs the image once with `cmd` (no GPU, no network) and returns what it printed. */
async function runOnce(docker: Docker, image: string, runId: string, cmd: string[], entrypoint?: string[]): Promise<{ exitCode: number; output: string }> {
  const container = await createRunContainer(docker, {
    Image: image,
    ...(entrypoint ? { Entrypoint: entrypoint } : {}),
    Cmd: cmd,
    // One stream, no multiplexing: help goes to stdout or stderr depending on the engine.
    Tty: true,
    // The run's label: a throwaway left behind by a crash is removed with the run's containers.
    Labels: { [RUN_LABEL]: runId, 'fluidcap.role': 'image-probe' },
    HostConfig: { NetworkMode: 'none', RestartPolicy: { Name: 'no' }, AutoRemove: false },
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await container.start();
    const waited = (await Promise.race([
      container.wait(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_S} s`)), PROBE_TIMEOUT_S * 1000);
      }),
    ])) as { StatusCode: number };
    const logs = (await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    return { exitCode: waited.StatusCode, output: Buffer.isBuffer(logs) ? logs.toString('utf8') : String(logs) };
  } finally {
    clearTimeout(timer);
    await container.remove({ force: true }).catch(() => {});
  }
}

/**
 * The image's version and flags: from the cache when this image id was read before, else from two
 * throwaway runs (version, then `--help`, and `--help=all` when the first help is only a summary).
 */
export async function learnImage(
  docker: Docker,
  opts: { image: string; imageId: string; family: EngineBasis['family']; runId: string; cacheDir: string; hostName: string; log?: (line: string) => void },
): Promise<ImageFacts> {
  const file = join(opts.cacheDir, `${opts.family}-${opts.imageId.replace(/^sha256:/, '').replace(/[^A-Za-z0-9]/g, '')}.json`);
  try {
    const cached = JSON.parse(await readFile(file, 'utf8')) as ImageFacts;
    if (cached.imageId === opts.imageId && Array.isArray(cached.flags) && cached.flags.length > 0) return cached;
  } catch {
    // not read before (or a damaged cache file): read the image again
  }
  opts.log?.(`reading ${opts.image}'s version and --help on ${opts.hostName} (once per image)`);
  const failed = (what: string, why: string) =>
    new InfraError(`could not read ${what} of image ${opts.image} on ${opts.hostName} (a throwaway container without GPU): ${why}`, { host: opts.hostName });
  const v = VERSION_COMMAND[opts.family];
  let version: string | null = null;
  try {
    const out = await runOnce(docker, opts.imageId, opts.runId, v.cmd, v.entrypoint);
    if (out.exitCode === 0) version = versionLine(out.output);
  } catch (err) {
    throw failed('the version', (err as Error).message);
  }
  let help: { exitCode: number; output: string };
  try {
    help = await runOnce(docker, opts.imageId, opts.runId, ['--help']);
    if (helpIsSummary(help.output)) help = await runOnce(docker, opts.imageId, opts.runId, ['--help=all']);
  } catch (err) {
    throw failed('--help', (err as Error).message);
  }
  const flags = [...parseHelpFlags(help.output)];
  if (flags.length === 0) throw failed('--help', `it printed no options (exit ${help.exitCode}): ${help.output.slice(0, 200).trim()}`);
  const facts: ImageFacts = { image: opts.image, imageId: opts.imageId, family: opts.family, version, flags };
  await mkdir(opts.cacheDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(facts, null, 2) + '\n');
  await rename(tmp, file);
  return facts;
}

/** A UserError naming every flag of the spec the image's help does not list, with the image and its version; null when all are there. */
export function imageFlagProblem(spec: ContainerSpec, facts: ImageFacts): UserError | null {
  const unknown = unknownFlags(spec.argv, new Set(facts.flags), facts.family);
  if (unknown.length === 0) return null;
  const which = `image ${spec.image} (${facts.family} ${facts.version ?? 'of unknown version'})`;
  return new UserError(
    `${which} does not know the flag${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}: its own --help does not list ${unknown.length > 1 ? 'them' : 'it'}, ` +
      'and the engine would refuse to start (check target.engineArgs.extraArgs, or pin an image of the version the recipe was written for)',
  );
}
