// The engine image on the host: inspected when present, pulled (within a time limit) when not,
// and its id and registry digest returned for the run's facts.
import type Docker from 'dockerode';
import { UserError } from '../util/errors.ts';

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/** The `repo@sha256:` digest that belongs to `image` (its repository first), or null for a local build. */
export function registryDigest(image: string, repoDigests: string[] | undefined): string | null {
  const repo = image.split('@')[0].replace(/:[^/:]+$/, '');
  return repoDigests?.find((d) => d.startsWith(`${repo}@`)) ?? repoDigests?.[0] ?? null;
}

/** The image's id and registry digest, pulling it when the host does not have it. */
export async function ensureImage(
  docker: Docker,
  image: string,
  opts: { hostName: string; pullTimeoutS: number; log: (line: string) => void; sleep(s: number, signal?: AbortSignal): Promise<void> },
): Promise<{ imageId: string; imageDigest: string | null }> {
  const inspect = async () => docker.getImage(image).inspect();
  let info: Docker.ImageInspectInfo;
  try {
    info = await inspect();
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
    opts.log(`image ${image} not on ${opts.hostName}; pulling`);
    // Ends the time limit once the pull is over, so its timer does not keep the process alive.
    const pullOver = new AbortController();
    try {
      const stream = await docker.pull(image);
      await Promise.race([
        new Promise<void>((resolve, reject) => docker.modem.followProgress(stream, (e: Error | null) => (e ? reject(e) : resolve()))),
        opts.sleep(opts.pullTimeoutS, pullOver.signal).then(() => {
          if (pullOver.signal.aborted) return;
          (stream as { destroy?: () => void }).destroy?.();
          throw new Error(`no pull finished within ${opts.pullTimeoutS} s`);
        }),
      ]);
      pullOver.abort();
      info = await inspect();
    } catch (pullErr) {
      pullOver.abort();
      const why = ((pullErr as { json?: { message?: string } }).json?.message ?? (pullErr as Error).message).trim();
      throw new UserError(`image ${image} is not on host ${opts.hostName} and pulling it failed: ${why}`);
    }
  }
  return { imageId: info.Id, imageDigest: registryDigest(image, info.RepoDigests) };
}
