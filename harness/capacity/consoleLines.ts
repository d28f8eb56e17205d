// What `fluidcap run` says about each probe, in one voice: one line per probe with its verdict,
// its key latencies and, when it was invalid or stopped early, why and what to change. The SLO is
// spelled out once, at the start, under the short name its recipe entry has (fluidity, ttft, tbt,
// …: the name capacity.json's perSlo uses); every later line uses that name. The full texts stay
// in summary.json. Pure: summaries in, lines out.
import { earlyStopBrief } from '../metrics/sloBrief.ts';
import type { ProbeSummary } from '../runDir/schema.ts';
import type { SloDefinition } from './perSloSearch.ts';

/** A probe line stays within about this many characters: its reasons are worded briefly (nothing is cut or wrapped). */
export const LINE_BUDGET = 160;

/** One line per SLO definition, printed once: `SLO fluidity = { tbtDeadline: 50ms, … }`. */
export function sloLegend(defs: readonly SloDefinition[]): string[] {
  return defs.map((d) => `SLO ${d.name} = ${d.source.startsWith(`${d.name}: `) ? d.source.slice(d.name.length + 2) : d.source}`);
}

const CLIENT_FIX = 'free cores (search.probe.workers) or widen search.probe.clientTolerance';
// Where the SSH tunnel's relay on this process's main thread made the error, more receivers do not help.
const TUNNEL_FIX = 'send from beside the engine (load.from: agent)';

const ms = (s: number) => (s >= 1 ? `${+s.toFixed(2)} s` : `${+(s * 1000).toPrecision(3)} ms`);

/**
 * Why a probe is invalid, and the fix, in words. The client-error fix is what the client's
 * timing depends on (docs/client-timing.md): receiving workers with a core each, or a tolerance
 * the TBT deadline can afford; where the SSH tunnel's relay made the error, the load sent from beside
 * the engine.
 */
export function invalidReason(s: Pick<ProbeSummary, 'engineDied' | 'tokenDrift' | 'client' | 'validity'>): string {
  if (s.engineDied) return `the engine died: ${s.engineDied}`;
  if (s.tokenDrift?.verdict === 'drift') {
    return `token counts drift from the plan (${s.tokenDrift.note}); fix: check the engine honours max_tokens and ignore_eos`;
  }
  const c = s.client;
  if (c && c.verdict === 'invalid') {
    const relay = c.tunnelRelay !== undefined && c.tunnelRelay.mainLoopDelayP99S >= c.clientErrorS;
    return relay
      ? `client error ${ms(c.clientErrorS)} > ${ms(c.toleranceS)} tolerance, the SSH tunnel's relay; fix: ${TUNNEL_FIX}`
      : `client error ${ms(c.clientErrorS)} > ${ms(c.toleranceS)} tolerance; fix: ${CLIENT_FIX}`;
  }
  return s.validity;
}

/** Text without its parenthesised details (balanced, nested included). */
function withoutDetails(text: string): string {
  let out = '';
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth += 1;
    else if (ch === ')' && depth > 0) depth -= 1;
    else if (depth === 0) out += ch;
  }
  return out.replace(/ +([;:,])/g, '$1').replace(/ {2,}/g, ' ').trim();
}

/** A probe's validity text (summary.json) in brief: its details left to the file, the client-error fix added. */
export function briefValidity(validity: string, opts: { fix?: boolean } = {}): string {
  const brief = withoutDetails(validity);
  const client = /^client error [\d.]+ ms exceeds tolerance [\d.]+ ms/.exec(brief);
  return client ? `${client[0]}, enough to flip its verdict${opts.fix === false ? '' : `; fix: ${CLIENT_FIX}`}` : brief;
}

/** A probe's verdict word, as every console line and table prints it. */
export function verdictWord(s: Pick<ProbeSummary, 'interrupted' | 'valid' | 'passed'>): string {
  if (s.interrupted) return 'INTERRUPTED';
  if (!s.valid) return 'INVALID';
  return s.passed ? 'PASS' : 'FAIL';
}

/** The latencies a person reads first: TTFT and TBT p99 (`p99 TTFT 31 ms, TBT 30 ms`), and the fluidity at the SLO's percentile. */
export function keyLatencies(s: Pick<ProbeLineFacts, 'metrics' | 'slo' | 'earlyStop'>): string {
  const m = s.metrics;
  const parts: string[] = [];
  if (m.ttftS.count > 0 && m.ttftS.p99 !== null) parts.push(`p99 TTFT ${ms(m.ttftS.p99)}`);
  if (m.tbtS.count > 0 && m.tbtS.p99 !== null) parts.push(`TBT ${ms(m.tbtS.p99)}`);
  const fluidity = s.slo.results.find((r) => r.name === 'fluidity');
  // An early-stopped probe's fluidity is its cancelled requests' 0, not a measurement.
  if (fluidity && typeof fluidity.value === 'number' && s.earlyStop === null) parts.push(`fluidity p${fluidity.percentile} ${+fluidity.value.toFixed(3)}`);
  return parts.join(', ');
}

/** The fields of a probe's summary its console line reads (a standalone probe has no more). */
export type ProbeLineFacts = Pick<
  ProbeSummary,
  'index' | 'qps' | 'interrupted' | 'valid' | 'passed' | 'requests' | 'durationS' | 'earlyStop' | 'engineDied' | 'tokenDrift' | 'client' | 'validity' | 'clientErrorEffect'
> & { kneeWarmup?: ProbeSummary['kneeWarmup'] } & { metrics: Pick<ProbeSummary['metrics'], 'ttftS' | 'tbtS'>; slo: Pick<ProbeSummary['slo'], 'results'> };

// How long the knee warm-up lasted; when the bound came before the queue was stationary, that too
// (the usual end, a stationary queue, goes unsaid to keep the line short).
function warmupWords(k: ProbeSummary['kneeWarmup'] | undefined, plannedS: number | undefined): string {
  if (k) return ` (${k.endS.toFixed(1)} s warm-up${k.reason === 'stationary' ? '' : `, its ${k.maxS} s bound`})`;
  return plannedS ? ` (${plannedS} s warm-up)` : '';
}

/** The one line `fluidcap run` (and `fluidcap probe`) prints when a probe ends. */
export function probeLine(s: ProbeLineFacts, defs: readonly SloDefinition[], opts: { warmupS?: number; perSlo?: string } = {}): string {
  const head = `probe ${s.index}: ${s.qps} QPS ${verdictWord(s)}`;
  const size = `${s.requests} req, ${s.durationS.toFixed(1)} s${warmupWords(s.kneeWarmup, opts.warmupS)}`;
  const parts = [head];
  // An invalid probe's numbers are not trusted, so none is shown beside its reason.
  if (s.valid && !s.interrupted) parts.push(keyLatencies(s));
  parts.push(size);
  let line = parts.filter((p) => p !== '').join(' · ');
  if (!s.valid) line += ` — ${invalidReason(s)}`;
  else if (s.earlyStop) line += ` — stopped early: ${earlyStopBrief(s.earlyStop, defs)}`;
  else if (s.clientErrorEffect?.holds) line += ` — kept although the client error exceeds the ${ms(s.client.toleranceS)} tolerance: ${s.clientErrorEffect.note}`;
  if (opts.perSlo) line += `; per SLO: ${opts.perSlo}`;
  return line;
}
