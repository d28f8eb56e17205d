// Which engine version a container runs, and what that version needs so the recipe's scheduler is
// the one that runs. vLLM changed under the same flags: from 0.8 it starts its V1 engine unless
// VLLM_USE_V1=0, and V1 always chunks prefills (it overrides --no-enable-chunked-prefill); from
// 0.11 the V0 engine, the only one with the prefill-first scheduler, is gone. Request logging
// (every prompt and its token ids) is on by default before 0.10.2 and `--disable-log-requests`
// turns it off; later versions log no requests unless asked and removed that flag.
//
// Pure: a version string in, argv switches and environment out. The launcher learns the version
// from the image (imageFacts.ts); a dry run takes it from the image tag.
import { UserError } from '../util/errors.ts';

/** What a vLLM container is asked to schedule: whole prompts first (V0), or chunked prefill. */
export type VllmScheduler = 'prefill-first' | 'chunked-prefill';

/** Where the version the argv and env were written for came from. */
export type VersionSource = 'image' | 'tag' | 'recipe' | 'unknown';

export interface Version {
  major: number;
  minor: number;
  patch: number;
}

/** `v0.8.5`, `0.8.5.post1`, `0.10.1rc2.dev310+g4f35be10a` → 0.8.5 / 0.10.1; anything else → null. */
export function parseVersion(text: string): Version | null {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?![\d])/.exec(text.trim());
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

/** The version an image tag names (`vllm/vllm-openai:v0.8.5` → "0.8.5"), or null (latest, nightly, a digest). */
export function versionFromTag(image: string): string | null {
  const ref = image.split('@')[0];
  const colon = ref.lastIndexOf(':');
  if (colon < 0 || ref.slice(colon).includes('/')) return null;
  const v = parseVersion(ref.slice(colon + 1));
  return v && `${v.major}.${v.minor}.${v.patch}`;
}

const before = (v: Version, major: number, minor: number, patch = 0) =>
  v.major !== major ? v.major < major : v.minor !== minor ? v.minor < minor : v.patch < patch;

/** What a vLLM version has, as far as fluidcap's launch depends on it. */
export interface VllmTraits {
  /** The V0 engine (and with it the prefill-first scheduler) exists. */
  hasV0: boolean;
  /** V1 is the default engine: V0 must be asked for with VLLM_USE_V1=0. */
  v1ByDefault: boolean;
  /** Requests (whole prompts) are logged unless `--disable-log-requests`. */
  logsRequestsByDefault: boolean;
}

export function vllmTraits(version: string): VllmTraits | null {
  const v = parseVersion(version);
  if (v === null) return null;
  return {
    hasV0: before(v, 0, 11),
    v1ByDefault: !before(v, 0, 8),
    logsRequestsByDefault: before(v, 0, 10, 2),
  };
}

/** The switches and variables fluidcap adds for a version; what it cannot do, as a UserError. */
export interface VersionedParts {
  argv: string[];
  env: Record<string, string>;
}

export interface VersionContext {
  /** The image, or for an engine run as a process its command (in messages). */
  image: string;
  version: string | null;
  source: VersionSource;
  /** The recipe's own `target.env` (a user's VLLM_USE_V1 is checked, not overridden). */
  userEnv: Record<string, string>;
  /** Whether the image's --help lists `--disable-log-requests` (null: not known, decide by version). */
  hasDisableLogRequests?: boolean | null;
  /** Prefix of messages: the recipe file, `file: `. */
  where?: string;
}

/** How a version was learnt, for messages: `vLLM 0.8.5 (from the image tag)`. */
export function describeVersion(version: string | null, source: VersionSource): string {
  if (version === null) return 'an unknown vLLM version';
  return `vLLM ${version} (${source === 'image' ? 'read from the image' : source === 'recipe' ? 'as target.process.version says' : 'from the image tag'})`;
}

/**
 * The argv and env a vLLM container needs for its scheduler at this version. An unknown version
 * adds nothing: the launcher reads it from the image before starting anything.
 */
export function vllmVersionedParts(scheduler: VllmScheduler, ctx: VersionContext): VersionedParts {
  const where = ctx.where ?? '';
  const traits = ctx.version === null ? null : vllmTraits(ctx.version);
  if (traits === null) return { argv: [], env: {} };
  const which = `${describeVersion(ctx.version, ctx.source)}, ${ctx.source === 'recipe' ? 'command' : 'image'} ${ctx.image}`;
  const env: Record<string, string> = {};
  const userV1 = ctx.userEnv.VLLM_USE_V1;
  if (scheduler === 'prefill-first') {
    if (!traits.hasV0) {
      throw new UserError(
        `${where}target.engine vllm asks for vLLM's prefill-first scheduler (the V0 engine, whole prompts, decodes paused during prefills), ` +
          `which ${which} no longer has (V0 was removed in 0.11). The closest policy it has is chunked prefill: engine: sarathi ` +
          '(V1 with --enable-chunked-prefill and the chunk size as the token budget); V1 with --no-enable-chunked-prefill schedules decodes first ' +
          'with whole prompts, which vLLM itself warns may crash or produce incorrect output. Or pin an image before v0.11 (e.g. vllm/vllm-openai:v0.8.5).',
      );
    }
    if (userV1 !== undefined && userV1 !== '0') {
      throw new UserError(
        `${where}target.env.VLLM_USE_V1 must be "0" (or left out) for engine vllm: its prefill-first scheduler runs only in the V0 engine ` +
          `(${which}; V1 always chunks prefills), got ${JSON.stringify(userV1)} (string)`,
      );
    }
    if (traits.v1ByDefault && userV1 === undefined) env.VLLM_USE_V1 = '0';
  }
  if (userV1 !== undefined && !traits.hasV0) {
    throw new UserError(
      `${where}target.env.VLLM_USE_V1 does not exist in ${which} (V1 is its only engine; vLLM only warns about an unknown VLLM_* variable), got ${JSON.stringify(userV1)} (string); remove it`,
    );
  }
  const disable = ctx.hasDisableLogRequests ?? traits.logsRequestsByDefault;
  return { argv: disable ? ['--disable-log-requests'] : [], env };
}
