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
