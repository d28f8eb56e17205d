#!/usr/bin/env zx
// Builds the simulated engine's container image without a registry or a base image: stages a
// rootfs (this machine's node binary and the shared libraries ldd lists, a few /etc files, the
// repo's harness/, bin/, gpu-profiles/, dist/ when built, package.json and production node_modules) and pipes it to
// `docker import`. The entrypoint is `node bin/fluidcap.js sim serve`, so container args pass
// through like vLLM's. Usage: npm run build:sim-image [-- --tag fluidcap/sim:dev]
import { $, argv, fs, path } from 'zx';

$.verbose = false;
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const tag = argv.tag ?? 'fluidcap/sim:dev';
const stage = path.join(repo, '.tmp', 'sim-image');
const rootfs = path.join(stage, 'rootfs');
const t0 = performance.now();

await fs.remove(stage);
await fs.ensureDir(rootfs);

// The node binary and every shared library it loads, at the same absolute paths.
const nodeBin = process.execPath;
const ldd = (await $`ldd ${nodeBin}`).stdout;
const libs = [...ldd.matchAll(/(?:=>\s*)?(\/\S+)\s+\(0x/g)].map((m) => m[1]);
for (const file of [nodeBin, ...new Set(libs)]) {
  await fs.copy(file, path.join(rootfs, file), { dereference: true });
}
if (nodeBin !== '/usr/bin/node') await fs.copy(nodeBin, path.join(rootfs, 'usr/bin/node'), { dereference: true });

// Just enough of /etc for a process to know who it is and resolve localhost.
await fs.outputFile(path.join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
await fs.outputFile(path.join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
await fs.outputFile(path.join(rootfs, 'etc/nsswitch.conf'), 'hosts: files dns\n');
await fs.ensureDir(path.join(rootfs, 'root'));
await fs.ensureDir(path.join(rootfs, 'tmp'));
await fs.chmod(path.join(rootfs, 'tmp'), 0o1777);

// The application as bin/fluidcap.js runs it on a workstation: the compiled dist/ when it was built
// from these very sources (the TypeScript settings are part of that check), else the sources through tsx.
const app = path.join(rootfs, 'app');
for (const entry of ['harness', 'bin', 'gpu-profiles', 'dist', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
  if (await fs.pathExists(path.join(repo, entry))) await fs.copy(path.join(repo, entry), path.join(app, entry));
}
// npm ls prints the production dependency closure from the installed tree: no registry needed.
const prodDirs = (await $({ cwd: repo, nothrow: true })`npm ls --omit=dev --all --parseable`).stdout
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l.startsWith(path.join(repo, 'node_modules') + path.sep));
for (const dir of prodDirs) {
  await fs.copy(dir, path.join(app, path.relative(repo, dir)), { dereference: false });
}

const sha = (await $({ cwd: repo, nothrow: true })`git rev-parse --short HEAD`).stdout.trim() || 'unknown';
const changes = [
  'ENTRYPOINT ["/usr/bin/node", "/app/bin/fluidcap.js", "sim", "serve"]',
  'WORKDIR /app',
  'ENV NODE_ENV=production HOME=/root PATH=/usr/bin:/bin',
  `LABEL fluidcap.image=sim fluidcap.source=${sha}`,
].flatMap((c) => ['--change', c]);

await $`tar -C ${rootfs} -c . | docker import ${changes} - ${tag}`;
// Older builds of the tag become dangling; vfs keeps a full copy of each, so drop them.
await $({ nothrow: true })`docker image prune -f --filter label=fluidcap.image=sim`;
await fs.remove(stage);

const id = (await $`docker image inspect --format {{.Id}} ${tag}`).stdout.trim();
const sizeMB = Number((await $`docker image inspect --format {{.Size}} ${tag}`).stdout.trim()) / 1e6;
console.log(`built ${tag} ${id} (${sizeMB.toFixed(0)} MB, ${prodDirs.length} packages, source ${sha}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
