// Creating the directory a command writes its results under (`--out`), with the operating system's
// true reason when it cannot: Node's recursive mkdir reports a read-only file system as ENOENT.
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** `mkdir -p dir`; on failure, the error of the first level that could not be made (EROFS, ENOTDIR, EACCES). */
export function makeDirs(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    let missing = dir;
    while (dirname(missing) !== missing && !existsSync(dirname(missing))) missing = dirname(missing);
    mkdirSync(missing); // throws the reason the recursive call hid
    throw err;
  }
}

/** makeDirs, then the disk's refusal (EROFS, EACCES) now rather than after minutes of work. */
export function makeWritableDir(dir: string): void {
  makeDirs(dir);
  accessSync(dir, constants.W_OK);
}
