// Text prompts of an exact token length on an engine whose tokenizer we do not have: each word's
// token count is measured once on the engine (tokenizeCalibration.ts), and since tokenizers do not
// merge across a space (SentencePiece word pieces, BPE pre-tokenization), a prompt's count is the
// sum of its words' counts. Pure: the caller supplies the measured table and the random source.
import type { Rng } from '../util/rng.ts';

// Common English words: real text for the model, and most are one or two tokens in any vocabulary.
export const PROMPT_WORDS: readonly string[] = (
  'the of and to in is was for on that with as by at from his her he she it they we you this an be are or had ' +
  'not but what all were when there can more if no out so said up one time about into than only other new some ' +
  'could two may then do first any my now such like our over man me even most made after also did many before ' +
  'must through back years where much your way well down should because each just those people how too little ' +
  'state good very make world still own see men work long get here between both life being under never day same ' +
  'another know while last might us great old year off come since against go came right used take three'
).split(' ');

/** What an engine counts for our words; a prompt's count is `firstTokens[first] + Σ wordTokens[rest]`. */
export interface TextSizing {
  words: readonly string[];
  /** Tokens words[i] adds after another word (its leading space included). */
  wordTokens: readonly number[];
  /** Tokens of a prompt that is words[i] alone, with all the server adds (BOS, chat template); null: not usable first. */
  firstTokens: readonly (number | null)[];
  /** How the counts were measured (for notes and the manifest). */
  source: string;
}

/** The sizing of an engine that counts one token per word and adds nothing (the simulated engine). */
export function oneTokenPerWord(source = 'one token per word (the simulated engine counts words)'): TextSizing {
  return { words: PROMPT_WORDS, wordTokens: PROMPT_WORDS.map(() => 1), firstTokens: PROMPT_WORDS.map(() => 1), source };
}

interface Index {
  /** Word indices usable after another word, by ascending token count. */
  byTokens: number[];
  /** Word indices usable first, by ascending first-word count. */
  firstByTokens: number[];
  /** How many of firstByTokens have the fewest tokens (they lead it). */
  fewestFirst: number;
  maxWordTokens: number;
}

const indexes = new WeakMap<TextSizing, Index>();

function indexOf(s: TextSizing): Index {
  let ix = indexes.get(s);
  if (ix) return ix;
  const byTokens = s.words.map((_, i) => i).filter((i) => s.wordTokens[i] > 0).sort((a, b) => s.wordTokens[a] - s.wordTokens[b] || a - b);
  const firstByTokens = s.words
    .map((_, i) => i)
    .filter((i) => (s.firstTokens[i] ?? 0) > 0)
    .sort((a, b) => s.firstTokens[a]! - s.firstTokens[b]! || a - b);
  if (byTokens.length === 0 || firstByTokens.length === 0) throw new Error('text sizing: no word has a positive token count');
  const fewest = firstByTokens.length > 0 ? s.firstTokens[firstByTokens[0]] : null;
  ix = { byTokens, firstByTokens, fewestFirst: firstByTokens.filter((i) => s.firstTokens[i] === fewest).length, maxWordTokens: s.wordTokens[byTokens[byTokens.length - 1]] };
  indexes.set(s, ix);
  return ix;
}

/** How many of `sorted` (ascending by `count`) have count <= limit. */
function fitting(sorted: number[], count: (i: number) => number, limit: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (count(sorted[mid]) <= limit) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Random words adding up to `tokens` as the engine counts them; `first` when the text starts the
 * prompt (its first word then carries the server's own tokens). The result's `tokens` is the
 * predicted count: `tokens` itself unless no word combination reaches it exactly.
 */
export function composeText(rng: Rng, tokens: number, sizing: TextSizing, first: boolean): { text: string; tokens: number } {
  const ix = indexOf(sizing);
  const words: string[] = [];
  let remaining = tokens;
  if (first) {
    const firstCount = (i: number) => sizing.firstTokens[i]!;
    // Prompts open with a word of the fewest tokens (one, in most vocabularies) where the length
    // allows: two different one-token words differ in their first token, while words of several
    // pieces often share their first piece with other words.
    const n = Math.min(ix.fewestFirst, fitting(ix.firstByTokens, firstCount, remaining));
    // Shorter than any first word: the shortest one, and the count says by how much it is over.
    const pick = n === 0 ? ix.firstByTokens[0] : ix.firstByTokens[Math.floor(rng.next() * n)];
    words.push(sizing.words[pick]);
    remaining -= firstCount(pick);
  }
  const wordCount = (i: number) => sizing.wordTokens[i];
  while (remaining > 0) {
    const n = remaining >= ix.maxWordTokens ? ix.byTokens.length : fitting(ix.byTokens, wordCount, remaining);
    if (n === 0) break;
    const pick = ix.byTokens[Math.floor(rng.next() * n)];
    words.push(sizing.words[pick]);
    remaining -= wordCount(pick);
  }
  return { text: words.join(' '), tokens: tokens - remaining };
}

/** The count the sizing predicts for a text of our words (the first one starting the prompt). */
export function predictTextTokens(text: string, sizing: TextSizing): number | null {
  const at = new Map(sizing.words.map((w, i) => [w, i]));
  const words = text.split(' ');
  let total = 0;
  for (let k = 0; k < words.length; k++) {
    const i = at.get(words[k]);
    if (i === undefined) return null;
    const c = k === 0 ? sizing.firstTokens[i] : sizing.wordTokens[i];
    if (c === null) return null;
    total += c;
  }
  return total;
}
