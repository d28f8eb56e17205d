// Errors a user caused (bad input, unreachable host) are UserError: the CLI prints the message
// alone, without a stack trace, and exits non-zero. Anything else is a harness fault.

export class UserError extends Error {
  override name = 'UserError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Describes a value with its type for error messages: `0.5 (number)`, `"abc" (string)`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing (undefined)';
  if (value === null) return 'null';
  if (typeof value === 'string') return `${JSON.stringify(value)} (string)`;
  if (Array.isArray(value)) return `${JSON.stringify(value).slice(0, 80)} (array)`;
  if (typeof value === 'object') return `${JSON.stringify(value).slice(0, 80)} (object)`;
  return `${String(value)} (${typeof value})`;
}
