// Deterministic tokens and text: a token is a word, so a text's token count is its number of
// whitespace-separated words (the same rule for prompts and outputs). Same prompt → same output.

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an ' +
  'they you were her she there been one all we their has would when if so no will more can what out ' +
  'said up its about into than them only other new some could time these two may first then do any like ' +
  'my now over such our man me even most made after also did many before must through back years where ' +
  'much your way well down should because each just those people how too little state good very make ' +
  'world still own see men work long get here between both life being under never day same another know ' +
  'while last might us great old year off come since against go came right used take three fluid token'
).split(' ');

// FNV-1a over a string: a cheap, stable seed for a prompt.
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

// Number of tokens of a text prompt.
export function countWords(text: string): number {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/).length;
}

// Token ids for a text (what /tokenize returns): a stable id per word within the vocabulary.
export function wordIds(text: string, vocabSize: number): number[] {
  const trimmed = text.trim();
  return trimmed === '' ? [] : trimmed.split(/\s+/).map((w) => hashText(w) % vocabSize);
}

// The i-th output token's text for a request seeded by `seed`: a leading space and one word, so
// concatenated output re-tokenizes to exactly as many tokens as were generated.
export function outputToken(seed: number, index: number): string {
  const mixed = (Math.imul(seed ^ 0x5bd1e995, 2654435761) + Math.imul(index, 40503) + (index >>> 3)) >>> 0;
  return ' ' + WORDS[mixed % WORDS.length];
}

// A deterministic draw in [0, 1) for token `index` of the request seeded by `seed`; `salt` keeps
// independent draws (empty text, merge) apart.
export function tokenDraw(seed: number, index: number, salt: number): number {
  let h = Math.imul(seed ^ Math.imul(salt, 0x27d4eb2f), 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

// Where a request's natural EOS falls when ignore_eos is off: 16…271 tokens, fixed by the prompt.
export function naturalLength(seed: number): number {
  return 16 + (Math.imul(seed, 0x9e3779b1) >>> 0) % 256;
}
