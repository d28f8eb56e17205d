// What an engine image accepts, read from its own `--help` text, and which of the flags fluidcap
// would start it with are not among them. Pure: text in, sets and messages out. Works on the three
// help layouts fluidcap launches: argparse (vLLM: `  -tp N, --tensor-parallel-size N`), yargs
// (the simulated engine: `  --tensor-parallel, --tensor-parallel-size   GPUs ...`) and llama.cpp's
// (`-np,    --parallel N     number of ...`).

const FLAG = /^--?[A-Za-z0-9][\w.-]*$/;
// Placeholders between an option and its description: N, MODEL, {a,b}, <file>, [string], FNAME.
const METAVAR = /^(?:[A-Z][A-Z0-9_.|-]*|\{.*\}|<.*>|\[.*\]|[A-Z0-9_]+\.\.\.)$/;

/**
 * Every option an engine's help lists: on each line, the leading run of flags (with their
 * placeholders and commas) up to the first word of description.
 */
export function parseHelpFlags(text: string): Set<string> {
  const flags = new Set<string>();
  for (const raw of text.replace(/\r/g, '').split('\n')) {
    const words = raw.trim().replace(/^usage:\s*\S+/i, '').split(/\s+/).filter(Boolean);
    for (const w of words) {
      // A usage line wraps options in [..] and (..): `[--port PORT]`.
      const token = w.replace(/[,;]$/, '').replace(/^[[(]+(?=-)/, '').replace(/(?<=\w)[\])]+$/, '');
      const name = token.split('=')[0];
      if (FLAG.test(name)) {
        flags.add(name);
        continue;
      }
      if (METAVAR.test(token) || token === '' || token === '|') continue;
      break;
    }
  }
  return flags;
}

/** The option names an argv uses (`--flag value`, `--flag=value`), values left out. */
export function argvFlags(argv: readonly string[]): string[] {
  return argv.filter((a) => /^--?[A-Za-z]/.test(a)).map((a) => a.split('=')[0]);
}

/**
 * The flags of `argv` an image's help does not list. vLLM's parser also accepts `_` for `-`
 * (`--max_num_seqs`), so for it both spellings are looked up.
 */
export function unknownFlags(argv: readonly string[], known: ReadonlySet<string>, family: 'vllm' | 'sim' | 'llamacpp'): string[] {
  const dashed = (f: string) => (family === 'vllm' ? `${f.slice(0, 2)}${f.slice(2).replace(/_/g, '-')}` : f);
  const ok = new Set([...known].map(dashed));
  return [...new Set(argvFlags(argv).filter((f) => !ok.has(dashed(f))))];
}

/** The version an engine printed for `--version` (or vLLM's `__version__`): its first non-empty line, trimmed. */
export function versionLine(text: string): string | null {
  const labelled = /^\s*version:\s*(.+)$/im.exec(text.replace(/\r/g, ''));
  if (labelled) return labelled[1].trim().slice(0, 120);
  const line = text.replace(/\r/g, '').split('\n').map((l) => l.trim()).find((l) => l !== '' && !/^(INFO|WARNING|DEBUG)\b/.test(l));
  if (line === undefined) return null;
  return line.slice(0, 120);
}

/** Whether a help text is only a summary that points at a fuller one (vLLM from 0.10: `--help=all`). */
export function helpIsSummary(text: string): boolean {
  return /--help=all\b/.test(text);
}
