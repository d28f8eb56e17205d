// Errors the CLI reports as a message alone, without a stack trace. UserError: the input is wrong
// (recipe, inventory, flags, a run directory in use): exit 2. InfraError: the machinery under the
// run failed (SSH, Docker, an engine that died): exit 3, with the cause, the host and the engine's
// last log lines. Anything else is a bug of fluidcap: exit 1, with its stack.

export class UserError extends Error {
  override name = 'UserError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** How much of a bad value a message quotes: enough to recognise it, never a 5 MB paste. */
export const MAX_QUOTED_CHARS = 80;

// C0 controls, DEL, C1 controls (0x9b is a one-byte CSI on some terminals) and the bidi overrides
// that reorder text on screen: a message quoting a file must not drive the terminal.
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text safe to print on a terminal: control characters become `\u001b`-style escapes. */
export function printable(text: string): string {
  return text.replace(UNSAFE_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const UNSAFE_IN_DOCUMENTS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** As printable, for a multi-line document (a report): line ends and tabs are kept. */
export function printableDocument(text: string): string {
  return text.replace(UNSAFE_IN_DOCUMENTS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The first `max` characters of text, with how much was left out when it was cut. */
export function truncate(text: string, max = MAX_QUOTED_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

/** A fault of the infrastructure (host, connection, container runtime, engine process), not of the input. */
export class InfraError extends UserError {
  override name = 'InfraError';
  readonly host: string | null;
  readonly lastLogLines: string[];
  constructor(message: string, options: { cause?: unknown; host?: string | null; lastLogLines?: string[] } = {}) {
    super(message, { cause: options.cause });
    this.host = options.host ?? null;
    this.lastLogLines = options.lastLogLines ?? [];
  }
}

/** Exit codes of the CLI (README "Exit codes"). */
export const EXIT = { ok: 0, bug: 1, badInput: 2, infra: 3, interrupted: 130 } as const;

/** Describes a value with its type for error messages: `0.5 (number)`, `"abc" (string)`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing (undefined)';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const quoted = value.length <= MAX_QUOTED_CHARS ? JSON.stringify(value) : `${JSON.stringify(value.slice(0, MAX_QUOTED_CHARS))}… (${value.length} characters)`;
    return `${printable(quoted)} (string)`;
  }
  if (Array.isArray(value)) return `${printable(jsonPreview(value))} (array)`;
  if (typeof value === 'object') return `${printable(jsonPreview(value))} (object)`;
  return `${String(value)} (${typeof value})`;
}

function jsonPreview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length <= MAX_QUOTED_CHARS ? text : `${text.slice(0, MAX_QUOTED_CHARS)}…`;
}

/**
 * A file-system refusal the operating system reports with a path (a read-only or full disk, a file
 * where a directory is wanted) as the fault it is: the disk's (InfraError, exit 3) or the input's
 * (UserError, exit 2). Null for anything else, which stays a bug.
 */
export function fileSystemFault(err: unknown): UserError | null {
  const e = err as (NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException }) | null;
  const sys = e?.code && e.path ? e : e?.cause?.code && e.cause.path ? e.cause : null;
  if (!sys || err instanceof UserError) return null;
  const path = printable(String(sys.path));
  const what = `${sys.syscall ?? 'write'} ${path}: ${sys.code}`;
  switch (sys.code) {
    case 'EROFS':
      return new InfraError(`the disk refused a write: ${what} (a read-only file system); remount it writable, or write the results elsewhere`, { cause: err });
    case 'ENOSPC':
    case 'EDQUOT':
      return new InfraError(`the disk refused a write: ${what} (no space left); free space and try again`, { cause: err });
    case 'EIO':
      return new InfraError(`the disk failed a read or write: ${what}`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new UserError(`no permission: ${what}${sys.syscall === 'mkdir' ? '; choose a directory you may write (--out)' : ' (check its owner and mode)'}`, { cause: err });
    case 'EEXIST':
    case 'ENOTDIR':
      return new UserError(`${what}: a file stands where a directory is wanted${sys.syscall === 'mkdir' ? ' (does --out name a file?)' : ''}`, { cause: err });
    case 'EISDIR':
      return new UserError(`${what}: a directory stands where a file is wanted`, { cause: err });
    default:
      return null;
  }
}
