// A probe's client timing error (dispatch lag, receive delay) moves every measured time by up to
// that error. A verdict that is the same with every deadline moved against it by the error is a
// verdict the error could not have produced: a pass re-judged with every deadline tightened, a
// fail re-judged with every deadline loosened. Only a verdict that would flip is untrusted.
//
// Pure: the SLO and a judge (SLO in, evaluation out) in, the judgement out.
import { LATENCY_SLO_NAMES, type Slo, type SloName } from '../metrics/slo.ts';
import type { SloEvaluation } from '../metrics/sloCheck.ts';
import type { ClientErrorEffect } from '../runDir/schema.ts';

/** The SLO with every time threshold widened by `errorS` (the most a client error can explain). */
export function loosenSlo(slo: Slo, errorS: number): Slo {
  const out: Slo = {};
  if (slo.fluidity) out.fluidity = { ...slo.fluidity, tbtDeadlineS: slo.fluidity.tbtDeadlineS + errorS, ttftSlackS: slo.fluidity.ttftSlackS + errorS };
  for (const name of LATENCY_SLO_NAMES) {
    const entry = slo[name];
    if (entry) out[name] = { ...entry, maxS: entry.maxS + errorS };
  }
  return out;
}

/**
 * The SLO with every time threshold narrowed by `errorS`, or null when one would not stay above
 * zero: a deadline the error can consume whole leaves no pass it could not have made.
 */
export function tightenSlo(slo: Slo, errorS: number): Slo | null {
  const out: Slo = {};
  if (slo.fluidity) {
    const tbtDeadlineS = slo.fluidity.tbtDeadlineS - errorS;
    const ttftSlackS = slo.fluidity.ttftSlackS - errorS;
    if (!(tbtDeadlineS > 0) || !(ttftSlackS > 0)) return null;
    out.fluidity = { ...slo.fluidity, tbtDeadlineS, ttftSlackS };
  }
  for (const name of LATENCY_SLO_NAMES) {
    const entry = slo[name];
    if (!entry) continue;
    const maxS = entry.maxS - errorS;
    if (!(maxS > 0)) return null;
    out[name] = { ...entry, maxS };
  }
  return out;
}

/** How far the client's error could have moved a verdict, as summary.json records it. */
export type { ClientErrorEffect };

/**
 * Whether the probe's verdict under `slo` survives every deadline moved against it by `errorS`.
 * `judge` evaluates the probe's requests under an SLO (its deadlines change the per-request metrics).
 */
export function judgeClientError(slo: Slo, errorS: number, strict: SloEvaluation, judge: (s: Slo) => SloEvaluation): ClientErrorEffect {
  const ms = `${+(errorS * 1000).toFixed(3)} ms`;
  const head = `client error ${ms}`;
  // Entry by entry, so one deadline the error consumes whole does not discard the others' passes.
  const passesHolding: string[] = [];
  const consumed: string[] = [];
  for (const r of strict.results) {
    const entry = slo[r.name as SloName];
    if (!r.passed || !entry) continue;
    const one = tightenSlo({ [r.name]: entry } as Slo, errorS);
    if (one === null) consumed.push(r.name);
    else if (judge(one).passed) passesHolding.push(r.name);
  }
  const loose = judge(loosenSlo(slo, errorS));
  const failsHolding = loose.results.filter((r) => !r.passed).map((r) => r.name);
  if (!strict.passed) {
    const holds = !loose.passed;
    return {
      errorS,
      verdict: 'fail',
      moved: 'loosened',
      holds,
      failsHolding,
      passesHolding,
      note: holds ? `${head}: the fail holds with every deadline ${ms} looser` : `${head}: the fail would turn to a pass with every deadline ${ms} looser, so it is not trusted`,
    };
  }
  const tight = consumed.length === 0 ? tightenSlo(slo, errorS) : null;
  const holds = tight !== null && judge(tight).passed;
  const note = holds
    ? `${head}: the pass holds with every deadline ${ms} tighter`
    : consumed.length > 0
      ? `${head}: the pass is not trusted, as the error would consume the whole ${consumed.join(', ')} deadline`
      : `${head}: the pass would turn to a fail with every deadline ${ms} tighter, so it is not trusted`;
  return { errorS, verdict: 'pass', moved: 'tightened', holds, failsHolding, passesHolding, note };
}
