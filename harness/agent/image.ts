// The load agent's image, built here and imported into each host's Docker through the connection
// fluidcap already holds (no registry, no base image): a root filesystem of this machine's node
// binary and the shared libraries it loads, a few /etc files, and fluidcap's sources with their
// production dependencies, as scripts/build-sim-image.mjs stages the simulated engine's. The tag is
// the agent's version (version.ts), so an image of other sources is never picked up by its tag;
// one that carries the tag but another version label is refused. The archive is cached per version.
import { createReadStream, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { sourcesHash } from '../../bin/sourcesHash.js';
import { InfraError } from '../util/errors.ts';
import { AGENT_VERSION_LABEL, agentImageTag, agentVersion, versionProblem } from './version.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** This fluidcap's agent version: its package version and the hash of the sources the image holds. */
export function localAgentVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return agentVersion(pkg.version, sourcesHash(ROOT));
}

/** Where built agent archives are kept, one per version. */
export function agentImageCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fluidcap', 'agent-images');
}

/**
 * The agent image of `version` on the host behind `docker`: used when it is there with the same
 * version label, imported (from the cached archive, built once) when it is not, refused when the
 * tag is there with another label.
 */
export async function ensureAgentImage(docker: Docker, opts: { version: string; hostName: string; log: (line: string) => void; cacheDir?: string }): Promise<string> {
  const tag = agentImageTag(opts.version);
  const labelOf = async (): Promise<string | null | undefined> => {
    try {
      const info = await docker.getImage(tag).inspect();
      return info.Config?.Labels?.[AGENT_VERSION_LABEL] ?? null;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  };
  let label = await labelOf();
  if (label === undefined) {
    const archive = buildAgentArchive(opts.version, opts.cacheDir ?? agentImageCacheDir(), opts.log);
    opts.log(`importing load agent image ${tag} into ${opts.hostName}'s Docker`);
    const t0 = performance.now();
    const stream = await docker.importImage(createReadStream(archive) as never, {
      repo: tag.split(':')[0],
      tag: opts.version,
      changes: [
        'ENTRYPOINT ["/usr/bin/node", "/app/harness/agent/entry.mjs"]',
        'WORKDIR /app',
        `ENV NODE_ENV=production HOME=/root PATH=/usr/bin:/bin FLUIDCAP_AGENT_VERSION=${opts.version}`,
        `LABEL ${AGENT_VERSION_LABEL}=${opts.version} fluidcap.image=agent`,
      ],
    } as never);
    await new Promise<void>((resolve, reject) => docker.modem.followProgress(stream as unknown as NodeJS.ReadableStream, (e: Error | null) => (e ? reject(e) : resolve())));
    opts.log(`imported ${tag} into ${opts.hostName} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    label = await labelOf();
    await pruneAgentImages(docker, opts.version);
  }
  const problem = versionProblem(opts.version, label ?? null, `image ${tag} on ${opts.hostName}`);
  if (problem) throw new InfraError(`${problem}; remove it (docker rmi ${tag}) and run again to rebuild it`);
  return tag;
}

/**
 * How many agent images of other versions an import leaves on a host, newest first. Each source
 * change makes a version, and most are never used again; but two fluidcap versions driving one host
 * (a nightly job beside an operator's checkout) would otherwise remove each other's image at every
 * import and import it again at their next run.
 */
export const OTHER_AGENT_IMAGES_KEPT = 2;

/** Removes the host's agent images of other versions but the newest `keep`; returns the ids removed. */
export async function pruneAgentImages(docker: Docker, version: string, keep = OTHER_AGENT_IMAGES_KEPT): Promise<string[]> {
  const images = await docker.listImages({ filters: { label: ['fluidcap.image=agent'] } }).catch(() => []);
  const others = images.filter((img) => img.Labels?.[AGENT_VERSION_LABEL] !== version).sort((a, b) => b.Created - a.Created);
  const removed: string[] = [];
  for (const img of others.slice(keep)) {
    // An image a container still uses (another run's agent) stays: 409, left for later.
    const gone = await docker.getImage(img.Id).remove({ force: false }).then(() => true, () => false);
    if (gone) removed.push(img.Id);
  }
  return removed;
}

/** The agent's root filesystem as a tar archive for `docker import`, built once per version. */
export function buildAgentArchive(version: string, cacheDir: string, log: (line: string) => void): string {
  const archive = join(cacheDir, `agent-${version}.tar`);
  if (existsSync(archive)) return archive;
  const t0 = performance.now();
  log(`building the load agent image ${agentImageTag(version)} (once per fluidcap version)`);
  mkdirSync(cacheDir, { recursive: true });
  const stage = join(cacheDir, `stage-${version}-${process.pid}`);
  const rootfs = join(stage, 'rootfs');
  try {
    rmSync(stage, { recursive: true, force: true });
    mkdirSync(rootfs, { recursive: true });
    // The node binary, util-linux's chrt when this machine has it (the receivers' SCHED_FIFO, as
    // threadPriority.ts sets it), and every shared library they load, at the same absolute paths.
    const nodeBin = process.execPath;
    const bins = [nodeBin, ...['/usr/bin/chrt', '/bin/chrt'].filter((b) => existsSync(b)).slice(0, 1)];
    const libs = bins.flatMap((b) => [...execFileSync('ldd', [b], { encoding: 'utf8' }).matchAll(/(?:=>\s*)?(\/\S+)\s+\(0x/g)].map((m) => m[1]));
    for (const file of [...bins, ...new Set(libs)]) cpSync(file, join(rootfs, file), { dereference: true });
    if (nodeBin !== '/usr/bin/node') cpSync(nodeBin, join(rootfs, 'usr/bin/node'), { dereference: true });
    // Just enough of /etc for a process to know who it is and resolve localhost.
    mkdirSync(join(rootfs, 'etc'), { recursive: true });
    writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
    writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
    writeFileSync(join(rootfs, 'etc/nsswitch.conf'), 'hosts: files dns\n');
    writeFileSync(join(rootfs, 'etc/hosts'), '127.0.0.1 localhost\n');
    mkdirSync(join(rootfs, 'root'), { recursive: true });
    mkdirSync(join(rootfs, 'tmp'), { recursive: true });
    chmodSync(join(rootfs, 'tmp'), 0o1777);
    // The sources the version was hashed from (run through tsx, as the worker threads are).
    const app = join(rootfs, 'app');
    for (const entry of ['harness', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
      if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(app, entry), { recursive: true });
    }
    // npm ls prints the production dependency closure from the installed tree: no registry needed.
    let listed = '';
    try {
      listed = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
    } catch (err) {
      // npm ls exits 1 on an extraneous package but still prints the tree.
      listed = String((err as { stdout?: string }).stdout ?? '');
    }
    const prodDirs = listed.split('\n').map((l) => l.trim()).filter((l) => l.startsWith(join(ROOT, 'node_modules') + sep));
    if (prodDirs.length === 0) throw new InfraError(`cannot list fluidcap's production dependencies in ${ROOT} (npm ls printed none)`);
    for (const dir of prodDirs) cpSync(dir, join(app, relative(ROOT, dir)), { recursive: true, verbatimSymlinks: true });
    execFileSync('tar', ['-C', rootfs, '-cf', `${archive}.part`, '.']);
    renameSync(`${archive}.part`, archive);
    // Archives of other versions are never imported again.
    for (const f of readdirSync(cacheDir)) if (/^agent-.*\.tar$/.test(f) && join(cacheDir, f) !== archive) rmSync(join(cacheDir, f), { force: true });
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  log(`built the load agent archive in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return archive;
}
