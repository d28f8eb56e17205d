// Errors a user caused (bad input, unreachable host) are UserError: the CLI prints the message
// alone, without a stack trace, and exits non-zero. Anything else is a harness fault.

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

/** The first `max` characters of text, with how much was left out when it was cut. */
export function truncate(text: string, max = MAX_QUOTED_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

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
