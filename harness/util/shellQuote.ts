// POSIX shell quoting for the few places a command line is text: an SSH exec request (the remote
// side runs it through the user's shell) and the `docker run` line a dry run prints. Every word is
// single-quoted unless it is plainly safe, so no recipe or inventory value can end a word, start
// a command, or expand a variable.

const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One word, quoted for sh/bash/zsh/dash: `it's` → `'it'\''s'`; an empty word is `''`. */
export function shellQuote(word: string): string {
  if (word === '') return "''";
  if (SAFE_WORD.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line from argv, each word quoted. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}

// Characters a terminal acts on (ESC, BEL, a line end, the bidi overrides) rather than shows.
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/**
 * shellQuote for a line shown to people (a dry run's `docker run`): a word holding a control
 * character is written in dollar-single quotes (`$'a\nb'`, `$'\x1b'`: bash, zsh, ksh and
 * POSIX.1-2024 sh), so the line stays one line that shows every byte, and still means the word.
 */
export function shellQuoteVisible(word: string): string {
  if (!INVISIBLE.test(word)) return shellQuote(word);
  let out = "$'";
  for (const ch of word) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\' || ch === "'") out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (INVISIBLE.test(ch)) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}'`;
}
