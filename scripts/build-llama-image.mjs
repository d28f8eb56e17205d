#!/usr/bin/env zx
// Builds a container image for llama.cpp's server from a binary built on this machine, without a
// registry or a base image (as build-sim-image.mjs does for the simulated engine): stages a rootfs
// with the binary, the shared libraries `ldd` lists (at the same absolute paths) and a few /etc
// files, and pipes it to `docker import`. The entrypoint is the binary, so container args are
// llama-server's flags. The model is not in the image: engine `llamacpp` mounts it read-only.
//
// Usage: npx zx scripts/build-llama-image.mjs [--bin /path/to/llama-server] [--tag fluidcap/llama-server:dev]
//        (or FLUIDCAP_LLAMA_SERVER=/path/to/llama-server)
import { $, argv, fs, path } from 'zx';

$.verbose = false;
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const tag = argv.tag ?? 'fluidcap/llama-server:dev';
const bin = argv.bin ?? process.env.FLUIDCAP_LLAMA_SERVER;
if (!bin) {
  console.error('build-llama-image: give the llama-server binary with --bin <path> or FLUIDCAP_LLAMA_SERVER=<path>');
  process.exit(2);
}
if (!(await fs.pathExists(bin)) || !(await fs.stat(bin)).isFile()) {
  console.error(`build-llama-image: --bin / FLUIDCAP_LLAMA_SERVER must name the llama-server binary, got "${bin}" (no such file)`);
  process.exit(2);
}
const stage = path.join(repo, '.tmp', 'llama-image');
const rootfs = path.join(stage, 'rootfs');
const t0 = performance.now();

await fs.remove(stage);
await fs.ensureDir(rootfs);

// The binary and every shared library it loads (libstdc++, libgomp, libc, the loader, ...).
const ldd = (await $`ldd ${bin}`).stdout;
if (/not found/.test(ldd)) {
  console.error(`build-llama-image: ${bin} needs libraries this machine lacks:\n${ldd}`);
  process.exit(2);
}
const libs = [...new Set([...ldd.matchAll(/(?:=>\s*)?(\/\S+)\s+\(0x/g)].map((m) => m[1]))];
for (const file of libs) await fs.copy(file, path.join(rootfs, file), { dereference: true });
await fs.copy(bin, path.join(rootfs, 'usr/local/bin/llama-server'), { dereference: true });
await fs.chmod(path.join(rootfs, 'usr/local/bin/llama-server'), 0o755);

// Just enough of /etc for a process to know who it is and resolve localhost.
await fs.outputFile(path.join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
await fs.outputFile(path.join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
await fs.outputFile(path.join(rootfs, 'etc/nsswitch.conf'), 'hosts: files dns\n');
await fs.outputFile(path.join(rootfs, 'etc/hosts'), '127.0.0.1 localhost\n::1 localhost\n');
await fs.ensureDir(path.join(rootfs, 'models'));
await fs.ensureDir(path.join(rootfs, 'root'));
await fs.ensureDir(path.join(rootfs, 'tmp'));
await fs.chmod(path.join(rootfs, 'tmp'), 0o1777);

// The binary's own hash names what the image runs (the build has no git revision of its own).
const binSha = (await $`sha256sum ${bin}`).stdout.slice(0, 16);
const version = (await $({ nothrow: true, quiet: true })`${bin} --version`).stderr.split('\n').find((l) => l.startsWith('version:'))?.slice(9).trim() ?? 'unknown';
const changes = [
  'ENTRYPOINT ["/usr/local/bin/llama-server"]',
  'WORKDIR /',
  'ENV HOME=/root PATH=/usr/local/bin:/usr/bin:/bin',
  `LABEL fluidcap.image=llama-server fluidcap.llama-server.sha256=${binSha}`,
].flatMap((c) => ['--change', c]);

await $`tar -C ${rootfs} -c . | docker import ${changes} - ${tag}`;
// Older builds of the tag become dangling; vfs keeps a full copy of each, so drop them.
await $({ nothrow: true })`docker image prune -f --filter label=fluidcap.image=llama-server`;
await fs.remove(stage);

const id = (await $`docker image inspect --format {{.Id}} ${tag}`).stdout.trim();
const sizeMB = Number((await $`docker image inspect --format {{.Size}} ${tag}`).stdout.trim()) / 1e6;
console.log(`built ${tag} ${id} (${sizeMB.toFixed(0)} MB, llama-server ${version}, sha256 ${binSha}…, ${libs.length} libraries) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
