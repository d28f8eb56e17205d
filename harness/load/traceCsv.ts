// Vidur-format trace CSVs (`num_prefill_tokens`, `num_decode_tokens`, optional `arrived_at`):
// parsed from text here (pure), read from disk by traceFile.ts.
import { truncateVidur } from './lengths.ts';

/** A trace as columns, after Vidur's truncation to the recipe's maximum total length. */
export interface TraceTable {
  promptTokens: Int32Array;
  outputTokens: Int32Array;
  /** Seconds, in file order; absent when the file has no `arrived_at` column. */
  arrivedS?: Float64Array;
  rows: number;
}

/** Parses the CSV text; returns the table or a message saying which line and column is wrong. */
export function parseTraceCsv(text: string, maxTotalTokens: number): TraceTable | { error: string } {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((h) => h.trim());
  const pi = header.indexOf('num_prefill_tokens');
  const di = header.indexOf('num_decode_tokens');
  const ai = header.indexOf('arrived_at');
  // The header is not quoted: the path may name any file, and its first line is not ours to print.
  if (pi < 0 || di < 0) return { error: 'has no num_prefill_tokens and num_decode_tokens columns in its first line (a Vidur trace CSV has both)' };
  let n = 0;
  const prompt = new Int32Array(lines.length);
  const output = new Int32Array(lines.length);
  const arrived = ai >= 0 ? new Float64Array(lines.length) : undefined;
  for (let i = 1; i < lines.length; i++) {
    if (lines[i].trim() === '') continue;
    const cells = lines[i].split(',');
    // Vidur casts scaled counts with astype(int): truncation towards zero.
    const p = Math.trunc(Number(cells[pi]));
    const d = Math.trunc(Number(cells[di]));
    if (!(p >= 1) || !(d >= 1)) return { error: `line ${i + 1}: token counts must be >= 1, got ${cells[pi]}, ${cells[di]}` };
    const [tp, td] = truncateVidur(p, d, maxTotalTokens);
    prompt[n] = tp;
    output[n] = td;
    if (arrived) {
      const a = Number(cells[ai]);
      if (!Number.isFinite(a)) return { error: `line ${i + 1}: arrived_at must be a number of seconds, got ${cells[ai]}` };
      if (n > 0 && a < arrived[n - 1]) return { error: `line ${i + 1}: arrived_at must not decrease, got ${a} after ${arrived[n - 1]}` };
      arrived[n] = a;
    }
    n++;
  }
  if (n === 0) return { error: 'has no rows' };
  return {
    promptTokens: prompt.subarray(0, n),
    outputTokens: output.subarray(0, n),
    arrivedS: arrived?.subarray(0, n),
    rows: n,
  };
}
