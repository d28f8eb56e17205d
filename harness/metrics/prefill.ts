// The prefill-time curve D_p(P) = a + b·P + c·P² fitted by the capacity pipeline
// (profile/fit.json); the first token's deadline and the scheduling-delay SLO both start from it.

/** profile/fit.json: coefficients in seconds, R², number of points, optional TTFT slack used. */
export interface PrefillFit {
  a: number;
  b: number;
  c: number;
  r2: number;
  n: number;
  ttftSlackS?: number;
}

/** Predicted isolated prefill time in seconds for a prompt of promptTokens tokens. */
export function predictPrefillS(fit: Pick<PrefillFit, 'a' | 'b' | 'c'>, promptTokens: number): number {
  return fit.a + fit.b * promptTokens + fit.c * promptTokens * promptTokens;
}
