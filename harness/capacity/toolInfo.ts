// What produced a run: tool version, git commit and Node version, for the manifest.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Tool version from package.json, the checkout's git sha (null outside a git checkout), Node version. */
export async function toolInfo(): Promise<{ toolVersion: string; gitSha: string | null; gitDirty: boolean | null; node: string }> {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
  const sha = await execa('git', ['rev-parse', 'HEAD'], { cwd: ROOT, reject: false });
  const dirty = sha.exitCode === 0 ? await execa('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, reject: false }) : null;
  return {
    toolVersion: pkg.version,
    gitSha: sha.exitCode === 0 ? sha.stdout.trim() : null,
    gitDirty: dirty && dirty.exitCode === 0 ? dirty.stdout.trim() !== '' : null,
    node: process.version,
  };
}
