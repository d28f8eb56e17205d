// Calibrates the twin to the engine in front of it: the iteration-time model (sim/costModel.ts's
// LinearCostModel) fitted to what the real run measured, with its error per term. Pure: takes the
// profile's points and fit and a probe's timelines, returns numbers.
//  - Prefill terms come from the isolated-prefill fit D_p(P) = a + b·P + c·P²: it maps exactly
//    onto the linear model (see LinearCostModel), so the residuals are the profile fit's own.
//  - Decode terms come from inter-token gaps. A gap between two tokens of one request is one
//    decode iteration when no other request was in its prefill meanwhile (between being sent and
//    its first token), because a prefill in between (a vLLM prefill iteration, a Sarathi chunk, a
//    llama.cpp prompt batch) lengthens the gap. The number of requests decoding at that moment is
//    reconstructed from every timeline's first and last token. Gaps are binned by that number;
//    each bin's median (robust to client hiccups) is fitted by count-weighted least squares to
//    base + perDecode·n.
import type { TimelineRecord } from '../timeline/record.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import type { BatchShape, LinearCostModel } from '../sim/costModel.ts';
import type { EngineConfig } from '../sim/engine.ts';
import type { CalibrationDecodeRow, CalibrationFile, CalibrationPrefillRow } from '../runDir/schema.ts';

/** One measured isolated prefill (profile/prefill.jsonl without warm-ups and failures). */
export interface MeasuredPrefill {
  promptTokens: number;
  prefillS: number;
}

/** One decode gap as reconstructed from the timelines. */
export interface DecodeGap {
  gapS: number;
  /** Requests generating across the gap (first token at or before its start, last at or after its end). */
  decoding: number;
  /** No other request was between send and first token during the gap. */
  onlyDecode: boolean;
}

export interface CalibrationInput {
  fit: Pick<PrefillFit, 'a' | 'b' | 'c'>;
  prefills: readonly MeasuredPrefill[];
  /** The first measured probe's timelines (null: none yet). */
  records: readonly TimelineRecord[] | null;
  /** Run-relative names of what was read, recorded in the file. */
  source: CalibrationFile['source'];
  /** The twin's iteration time before calibration, to show what calibration changed (optional). */
  uncalibrated?: (batch: BatchShape) => number;
  /** Mean KV length of a decoding request, for the uncalibrated comparison (default 256). */
  meanKvTokens?: number;
}

/** Bins with fewer gaps than this are left out of the decode fit (their median is noise). */
export const MIN_GAPS_PER_BIN = 5;
/** Below this many usable gaps, prefill-overlapped gaps are used too (their medians still help). */
const MIN_ONLY_DECODE_GAPS = 30;
/** Gaps examined at most (an even sample of a longer probe's). */
const MAX_GAPS = 20_000;

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Every single-token gap of the ok timelines, with how many requests were decoding across it. */
export function decodeGaps(records: readonly TimelineRecord[]): DecodeGap[] {
  const ok = records.filter((r) => r.status === 'ok' && r.chunks.length > 0);
  const spans = ok.map((r) => ({ sentS: r.sentS, firstS: r.chunks[0][0], lastS: r.chunks[r.chunks.length - 1][0] }));
  // Requests whose prefill the engine ran (a request refused before it has no first token and no prefill).
  const prefilling = records.filter((r) => r.chunks.length > 0).map((r) => ({ fromS: r.sentS, toS: r.chunks[0][0] }));
  const candidates: Array<[number, number]> = [];
  for (const r of ok) {
    for (let i = 1; i < r.chunks.length; i++) {
      const [t0, k0] = r.chunks[i - 1];
      const [t1, k1] = r.chunks[i];
      // A chunk of several tokens hides how many iterations it spans.
      if (k1 === 1 && k0 === 1 && t1 > t0) candidates.push([t0, t1]);
    }
  }
  // Every gap is checked against every request; an even sample keeps a long probe's calibration quick.
  const stride = Math.max(1, Math.ceil(candidates.length / MAX_GAPS));
  const gaps: DecodeGap[] = [];
  for (let c = 0; c < candidates.length; c += stride) {
    const [t0, t1] = candidates[c];
    let decoding = 0;
    for (const s of spans) if (s.firstS <= t0 && s.lastS >= t1) decoding++;
    let onlyDecode = true;
    for (const p of prefilling) {
      if (p.fromS < t1 && p.toS > t0) {
        onlyDecode = false;
        break;
      }
    }
    gaps.push({ gapS: t1 - t0, decoding, onlyDecode });
  }
  return gaps;
}

/** Count-weighted least squares of y = base + slope·x over bins, base and slope >= 0; slope held at 0 when it comes out negative or undetermined. */
function fitLine(bins: readonly { x: number; y: number; w: number }[]): { base: number; slope: number } {
  let sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const { x, y, w } of bins) {
    sw += w; sx += w * x; sy += w * y; sxx += w * x * x; sxy += w * x * y;
  }
  const det = sw * sxx - sx * sx;
  if (bins.length >= 2 && det > 1e-12 * sw * sxx) {
    const slope = (sw * sxy - sx * sy) / det;
    const base = (sy - slope * sx) / sw;
    // A step's time cannot be negative at zero sequences: refit through the origin (time ∝ sequences, as on a CPU).
    if (slope >= 0 && base < 0) return { base: 0, slope: sxy / sxx };
    if (slope >= 0) return { base, slope };
  }
  return { base: median(bins.map((b) => b.y)), slope: 0 };
}

const rel = (fitted: number, measured: number) => (measured > 0 ? (fitted - measured) / measured : 0);
const rmse = (xs: readonly number[]) => Math.sqrt(xs.reduce((s, x) => s + x * x, 0) / Math.max(1, xs.length));
const meanAbs = (xs: readonly number[]) => xs.reduce((s, x) => s + Math.abs(x), 0) / Math.max(1, xs.length);
const maxAbs = (xs: readonly number[]) => xs.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

/** Fits the twin's iteration model to a run's profile and first probe; the result is twin-calibration.json. */
export function calibrate(input: CalibrationInput): CalibrationFile {
  const { fit } = input;
  const notes: string[] = [];
  const model: LinearCostModel = {
    prefillBaseS: fit.a,
    perPromptTokenS: fit.b - fit.c,
    perAttentionPairS: 2 * fit.c,
    // Without a probe the decode base is a one-token prefill's time, the best the profile tells.
    decodeBaseS: Math.max(0, fit.a + fit.b + fit.c),
    perDecodeS: 0,
  };

  const byLength = new Map<number, number[]>();
  for (const p of input.prefills) byLength.set(p.promptTokens, [...(byLength.get(p.promptTokens) ?? []), p.prefillS]);
  const prefillRows: CalibrationPrefillRow[] = [...byLength.entries()]
    .sort(([x], [y]) => x - y)
    .map(([promptTokens, times]) => {
      const measuredS = median(times);
      const fittedS = predictPrefillS(fit, promptTokens);
      const uncalibratedS = input.uncalibrated?.({ prefills: [{ chunkTokens: promptTokens, contextTokens: 0, completes: true }], decodeKvTokens: [] }) ?? null;
      return { promptTokens, count: times.length, measuredS, fittedS, relError: rel(fittedS, measuredS), uncalibratedS };
    });
  const prefillResiduals = input.prefills.map((p) => predictPrefillS(fit, p.promptTokens) - p.prefillS);

  let decode: CalibrationFile['decode'] = null;
  if (input.records === null) notes.push('no probe measured yet: the decode iteration time is taken as a one-token prefill');
  else {
    const all = decodeGaps(input.records);
    let used = all.filter((g) => g.onlyDecode && g.decoding > 0);
    const onlyDecodeGaps = used.length >= MIN_ONLY_DECODE_GAPS;
    if (!onlyDecodeGaps) {
      notes.push(`only ${used.length} gaps had no prefill beside them (< ${MIN_ONLY_DECODE_GAPS}): every gap was used, so the decode time is an upper bound`);
      used = all.filter((g) => g.decoding > 0);
    }
    const bins = new Map<number, number[]>();
    for (const g of used) bins.set(g.decoding, [...(bins.get(g.decoding) ?? []), g.gapS]);
    const kept = [...bins.entries()].filter(([, v]) => v.length >= MIN_GAPS_PER_BIN).sort(([x], [y]) => x - y);
    if (kept.length === 0) notes.push(`no batch size had ${MIN_GAPS_PER_BIN} gaps: the decode iteration time is taken as a one-token prefill`);
    else {
      const line = fitLine(kept.map(([n, v]) => ({ x: n, y: median(v), w: v.length })));
      if (kept.length === 1) notes.push(`one batch size only (${kept[0][0]} decoding): no per-sequence term`);
      if (kept.length === 2 && line.base > 0) notes.push('two batch sizes only: the line passes through both, so their error is zero by construction, not a check');
      model.decodeBaseS = line.base;
      model.perDecodeS = line.slope;
      const kv = input.meanKvTokens ?? 256;
      const rows: CalibrationDecodeRow[] = kept.map(([n, v]) => {
        const measuredS = median(v);
        const fittedS = model.decodeBaseS + model.perDecodeS * n;
        const uncalibratedS = input.uncalibrated?.({ prefills: [], decodeKvTokens: Array.from({ length: n }, () => kv) }) ?? null;
        return { decoding: n, gaps: v.length, measuredS, fittedS, relError: rel(fittedS, measuredS), uncalibratedS };
      });
      const binResiduals = rows.map((r) => r.fittedS - r.measuredS);
      decode = {
        gaps: all.length,
        usedGaps: used.length,
        onlyDecodeGaps,
        rmseS: rmse(binResiduals),
        meanAbsRelError: meanAbs(rows.map((r) => r.relError)),
        maxAbsRelError: maxAbs(rows.map((r) => r.relError)),
        rows,
      };
    }
  }
  const probePrefill = input.records ? isolatedPrefillRatios(input.records, fit) : null;
  if (probePrefill && probePrefill.medianRatio > 1.2) {
    notes.push(`requests alone in the engine during the probe took ${probePrefill.medianRatio.toFixed(2)}× the profile's prefill at the median (p90 ${probePrefill.p90Ratio.toFixed(2)}×): the host was slower under load than while profiling, which the twin does not model`);
  }
  if (fit.c === 0 && fit.b === 0) notes.push('the prefill fit is flat (b = c = 0): prompt length does not change the modelled prefill');

  return {
    source: input.source,
    model,
    prefill: {
      points: input.prefills.length,
      rmseS: rmse(prefillResiduals),
      meanAbsRelError: meanAbs(prefillRows.map((r) => r.relError)),
      maxAbsRelError: maxAbs(prefillRows.map((r) => r.relError)),
      rows: prefillRows,
    },
    decode,
    probePrefill,
    notes,
  };
}

/** First-token time from send over the fitted prefill, for the probe's requests that found nothing else in flight. */
export function isolatedPrefillRatios(records: readonly TimelineRecord[], fit: Pick<PrefillFit, 'a' | 'b' | 'c'>): CalibrationFile['probePrefill'] {
  const started = records.filter((r) => r.chunks.length > 0);
  const ratios: number[] = [];
  for (const r of started) {
    const alone = started.every((o) => o === r || !(o.sentS < r.sentS && r.sentS < o.chunks[o.chunks.length - 1][0]));
    const predicted = predictPrefillS(fit, r.promptTokens);
    if (alone && predicted > 0) ratios.push((r.chunks[0][0] - r.sentS) / predicted);
  }
  if (ratios.length === 0) return null;
  ratios.sort((x, y) => x - y);
  const at = (q: number) => ratios[Math.min(ratios.length - 1, Math.ceil(q * ratios.length) - 1)];
  return { requests: ratios.length, medianRatio: median(ratios), p90Ratio: at(0.9), maxRatio: ratios[ratios.length - 1] };
}

/** One line for the run log: the twin's error per term. */
export function describeCalibration(c: CalibrationFile): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const m = c.model;
  const decode = c.decode
    ? `decode ${(m.decodeBaseS * 1e3).toFixed(2)} ms + ${(m.perDecodeS * 1e3).toFixed(3)} ms/seq (${c.decode.usedGaps} gaps in ${c.decode.rows.length} batch sizes, mean |error| ${pct(c.decode.meanAbsRelError)}, max ${pct(c.decode.maxAbsRelError)})`
    : 'decode from the profile only';
  return `twin calibrated: prefill ${(m.prefillBaseS * 1e3).toFixed(2)} ms + ${(m.perPromptTokenS * 1e6).toFixed(2)} µs/token + ${(m.perAttentionPairS * 1e9).toFixed(3)} ns/pair (${c.prefill.points} points, mean |error| ${pct(c.prefill.meanAbsRelError)}, max ${pct(c.prefill.maxAbsRelError)}); ${decode}`;
}

/** The twin's engine with its iteration model replaced by the calibrated one. */
export function calibratedEngine(engine: EngineConfig, calibration: Pick<CalibrationFile, 'model'>): EngineConfig {
  return { ...engine, iterationModel: calibration.model };
}
