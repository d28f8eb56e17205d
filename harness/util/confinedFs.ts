// The one way fluidcap writes inside a directory it owns (a run, a sweep, a figure, a results
// directory). A directory may have been downloaded or copied from someone else, so nothing in it
// is trusted: a path must stay below the root, no component below the root may be a symbolic link
// (links above it are the user's own choice), whole files are written beside their target and
// renamed over it (a link planted at the target is replaced, never written through), and appends
// open the file with O_NOFOLLOW. Reads of a directory's files use the same check.
import {
  closeSync,
  constants,
  copyFileSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { UserError, printable } from './errors.ts';
import { makeDirs } from './makeDirs.ts';

const shown = (p: string) => printable(p);

/** Why a link is refused, with what to do about it. */
const linkRefusal = (path: string, root: string) =>
  new UserError(`${shown(path)}: is a symbolic link inside ${shown(root)}; fluidcap does not follow links in a directory it writes or reads (replace the link with the real file or directory)`);

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ENOTDIR') throw new UserError(`${shown(path)}: a component of the path is not a directory`);
    throw err;
  }
}

/**
 * A relative path read from a file (a journal entry) as a path inside `root`: refused when it is
 * absolute, empty, or climbs out with `..`. `what` names the file and entry for the message.
 */
export function relativeInside(root: string, rel: string, what: string): string {
  if (typeof rel !== 'string' || rel === '' || isAbsolute(rel) || rel.includes('\0') || rel.split(/[\\/]+/).includes('..')) {
    throw new UserError(`${what}: must be a path inside ${shown(root)} relative to it, got ${shown(JSON.stringify(String(rel)))}`);
  }
  return join(resolve(root), rel);
}

/** `path` (as any path: absolute, or relative to the current directory) relative to `root`; refused when it leaves. */
function relativeTo(root: string, path: string): string {
  const rel = relative(resolve(root), resolve(path));
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new UserError(`${shown(path)}: is not inside ${shown(root)}, the directory fluidcap writes`);
  }
  return rel;
}

/**
 * Checks that every existing component of `path` below `root` (the last one included when
 * `includeLast`) is a real directory, not a link. Returns the absolute path. Components that do not
 * exist yet are fine: whoever creates them goes through here.
 */
export function confinedPath(root: string, path: string, opts: { includeLast?: boolean } = {}): string {
  const parts = relativeTo(root, path).split(sep);
  let at = resolve(root);
  for (let i = 0; i < parts.length; i++) {
    at = join(at, parts[i]);
    const last = i === parts.length - 1;
    if (last && !opts.includeLast) break;
    const st = lstatOrNull(at);
    if (st === null) break;
    if (st.isSymbolicLink()) throw linkRefusal(at, root);
    if (!last && !st.isDirectory()) throw new UserError(`${shown(at)}: is not a directory`);
  }
  return at;
}

/** Creates `dir` and its missing parents below `root` (root itself may be created), refusing links on the way. */
export function makeDirIn(root: string, dir: string): string {
  makeDirs(root);
  if (resolve(dir) === resolve(root)) return resolve(root);
  const parts = relativeTo(root, dir).split(sep);
  let at = resolve(root);
  for (const part of parts) {
    at = join(at, part);
    let st = lstatOrNull(at);
    if (st === null) {
      try {
        mkdirSync(at);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      st = lstatSync(at);
    }
    if (st.isSymbolicLink()) throw linkRefusal(at, root);
    if (!st.isDirectory()) throw new UserError(`${shown(at)}: exists and is not a directory`);
  }
  return at;
}

/**
 * Writes a whole file inside `root`: to a fresh temporary file beside it (created exclusively, no
 * link followed), then renamed over the target. A kill mid-write leaves the old file whole, and a
 * link at the target is replaced by the file rather than written through.
 */
export function writeFileIn(root: string, path: string, data: string | Uint8Array): void {
  const target = confinedPath(root, path);
  const st = lstatOrNull(target);
  if (st?.isDirectory()) throw new UserError(`${shown(target)}: is a directory, expected a file`);
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | null = null;
  try {
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    closeSync(fd);
    fd = null;
    renameSync(tmp, target);
  } catch (err) {
    if (fd !== null) closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Opens a file inside `root` for appending (created when absent) and returns its descriptor.
 * A link or anything but a regular file at the target is refused: an append would write through it.
 */
export function openAppendIn(root: string, path: string): number {
  const target = confinedPath(root, path);
  const st = lstatOrNull(target);
  if (st?.isSymbolicLink()) throw linkRefusal(target, root);
  if (st && !st.isFile()) throw new UserError(`${shown(target)}: is not a regular file`);
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in after the check must not block the open; a regular file ignores it.
    fd = openSync(target, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw linkRefusal(target, root);
    throw err;
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new UserError(`${shown(target)}: is not a regular file`);
  }
  return fd;
}

/** Appends `data` to a file inside `root` (one write, handed to the OS at once). */
export function appendFileIn(root: string, path: string, data: string): void {
  const fd = openAppendIn(root, path);
  try {
    const buf = Buffer.from(data);
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
  } finally {
    closeSync(fd);
  }
}

/** Renames `from` to `to`, both inside `root`; neither may pass through a link (a link at `from` itself is moved, not followed). */
export function renameIn(root: string, from: string, to: string): void {
  renameSync(confinedPath(root, from), confinedPath(root, to));
}

/** Copies an outside file (a recipe the user named) to `dest` inside `root`, by the same write-and-rename. */
export function copyFileIn(root: string, src: string, dest: string): void {
  const target = confinedPath(root, dest);
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    copyFileSync(src, tmp, constants.COPYFILE_EXCL);
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Refuses a link at `dir` (inside `root`) or anywhere within `depth` levels below it: for readers
 * that take in a whole subtree (a run's report reads every probe's files), so a file's text is
 * never read, or quoted in a note, through a link to somewhere else. An absent `dir` is fine.
 */
export function refuseLinksIn(root: string, dir: string, depth: number): void {
  const top = confinedPath(root, dir, { includeLast: true });
  if (lstatOrNull(top)?.isDirectory() !== true) return;
  const walk = (at: string, left: number) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isSymbolicLink()) throw linkRefusal(path, root);
      if (entry.isDirectory() && left > 1) walk(path, left - 1);
    }
  };
  walk(top, depth);
}

