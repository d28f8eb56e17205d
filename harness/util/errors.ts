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
  if (typeof value === 'string') return `${JSON.stringify(value)} (string)`;
  if (Array.isArray(value)) return `${JSON.stringify(value).slice(0, 80)} (array)`;
  if (typeof value === 'object') return `${JSON.stringify(value).slice(0, 80)} (object)`;
  return `${String(value)} (${typeof value})`;
}
