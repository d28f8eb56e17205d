// npx tsx scripts/ground-truth.ts --recipe recipes/papers/llama2-70b-a100-tp4-sim.yaml --around 0.3277
//                                 [--span 0.06] [--points 7] [--seeds 8] [--requests 12000] [--json out.json]
// The capacity the proofs judge estimates against, read as a crossing rather than as a grid step.
// On the simulated engine driven on a virtual clock, at `--points` rates spread evenly over
// `--around` × (1 ± `--span`), `--seeds` long runs of `--requests` requests each (workload seeds
// 1001, 1002, …, the same at every rate, so the curve's noise is shared across rates and its shape
// shows; the first tenth of each run is its warm-up). Per SLO entry, the misses and observations of
// all seeds are pooled at each rate; the capacity is where the lowest entry's pooled fractions,
// fitted monotone, cross its allowance, interpolated on log-odds between the two rates around it
// (capacity/interval.ts crossing, as the interval reads its own), and beside it where a straight
// line in log-odds through all the rates crosses (logisticLine). Their spread comes from resampling
// whole seeds (2000 times): the standard error and the 95% range of each crossing, the single
// seeds' own crossings, and, for comparison, the grid's reading of the same rates.
//
// Why not the first failing rate of a grid (scripts/proofSupport.ts groundTruth): where the knee is
// flat, the pooled fraction at rates a percent apart wanders around the allowance by more than it
// rises between them, so the first rate whose pooled sample fails lies below the crossing more often
// than above it, and the grid's step adds up to one percent more below it.
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { crossing, logisticLine } from '../harness/capacity/interval.ts';
import { sloSeries } from '../harness/capacity/sloDecision.ts';
import { createRng } from '../harness/util/rng.ts';
import { configOf, evaluated, plan, runPlanned } from './proofSupport.ts';

const { values } = parseArgs({
  options: {
    recipe: { type: 'string', default: 'recipes/quickstart.yaml' },
    around: { type: 'string' },
    span: { type: 'string', default: '0.06' },
    points: { type: 'string', default: '7' },
    seeds: { type: 'string', default: '8' },
    requests: { type: 'string', default: '12000' },
    json: { type: 'string' },
  },
});
const around = Number(values.around);
if (!(around > 0)) {
  console.error('ground-truth: --around must be a rate (QPS) near the capacity, e.g. --around 0.3277');
  process.exit(2);
}
const span = Number(values.span);
const points = Math.max(3, Number(values.points));
const seeds = Math.max(1, Number(values.seeds));
const requests = Number(values.requests);
const started = performance.now();
const c = await configOf(values.recipe!);
const rates = Array.from({ length: points }, (_, k) => +(around * (1 - span + (2 * span * k) / (points - 1))).toPrecision(5));

// counts[entry][rate][seed] = { m, n }
type Entry = { allowed: number; cells: { m: number; n: number }[][] };
const counts = new Map<string, Entry>();
// One entry's misses and observations at rate index j, pooled over the given seeds (repeats allowed).
const pooled = (e: Entry, j: number, pick: readonly number[]) => pick.reduce((t, s) => ({ n: t.n + e.cells[j][s].n, m: t.m + e.cells[j][s].m }), { n: 0, m: 0 });
for (const [j, qps] of rates.entries()) {
  for (let s = 0; s < seeds; s++) {
    const planned = plan(c, qps, requests, 1001 + s, 1e9);
    const { records } = runPlanned(c, planned);
    for (const series of sloSeries(evaluated(c, planned, records, Math.floor(requests * 0.1)), c.slo)) {
      const e = counts.get(series.name) ?? { allowed: series.allowedFraction, cells: rates.map(() => Array.from({ length: seeds }, () => ({ m: 0, n: 0 }))) };
      e.cells[j][s] = { m: series.misses.reduce((a, b) => a + b, 0), n: series.misses.length };
      counts.set(series.name, e);
    }
  }
  process.stderr.write(`${c.recipe.name}: ${qps} QPS done (${((performance.now() - started) / 1000).toFixed(0)} s)\n`);
}

// The lowest entry's crossing from the given seeds (indices, repeats allowed): 'interp', the
// monotone fit of the pooled fractions interpolated on log-odds between the two rates around the
// allowance (capacity/interval.ts crossing, no model of the curve's shape); 'line', a straight line
// in log-odds through all the rates (less noise where the curve is straight there, wrong where it bends).
function crossingOf(pick: readonly number[], fit: 'interp' | 'line'): { qps: number; entry: string } {
  let best = { qps: Infinity, entry: '' };
  for (const [name, e] of counts) {
    if (e.allowed <= 0) continue;
    const pts = rates.map((qps, j) => ({ qps, ...pooled(e, j, pick) }));
    let x: number;
    if (fit === 'interp') x = crossing(pts.map((p) => ({ qps: p.qps, w: p.n, p: p.n > 0 ? p.m / p.n : 0 })), e.allowed);
    else {
      const line = logisticLine(pts);
      const t = Math.log(e.allowed / (1 - e.allowed));
      const mid = (rates[0] + rates.at(-1)!) / 2;
      x = line.slope > 0 ? mid + (t - line.at(mid)) / line.slope : line.at(mid) > t ? -Infinity : Infinity;
    }
    if (x < best.qps) best = { qps: x, entry: name };
  }
  return best;
}

const all = Array.from({ length: seeds }, (_, s) => s);
const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
const f = (q: number) => String(+q.toPrecision(4));
console.log(`| SLO entry | ${rates.map(f).join(' | ')} |`);
console.log(`|---|${rates.map(() => '---').join('|')}|`);
for (const [name, e] of counts) {
  const cells = rates.map((_, j) => {
    const { m, n } = pooled(e, j, all);
    return n > 0 ? pct(m / n) : '—';
  });
  console.log(`| ${name} (allowed ${pct(e.allowed)}) | ${cells.join(' | ')} |`);
}
const out: Record<string, unknown> = { recipe: c.recipe.name, rates, seeds, requests, counts: Object.fromEntries(counts) };
for (const fit of ['interp', 'line'] as const) {
  const point = crossingOf(all, fit);
  const rng = createRng(0x7e57);
  const boot = Array.from({ length: 2000 }, () => crossingOf(all.map(() => Math.floor(rng.next() * seeds)), fit).qps).sort((a, b) => a - b);
  const finite = boot.filter(Number.isFinite);
  const mean = finite.reduce((a, b) => a + b, 0) / Math.max(1, finite.length);
  const sd = Math.sqrt(finite.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, finite.length));
  const perSeed = all.map((s) => crossingOf([s], fit).qps);
  console.log(
    `${c.recipe.name} (${fit}): crossing ${f(point.qps)} QPS (${point.entry}); seeds resampled: sd ${pct(sd / point.qps)}, 95% ${f(boot[50])}–${f(boot[1949])}; single seeds ${f(Math.min(...perSeed))}–${f(Math.max(...perSeed))}`,
  );
  out[fit] = { crossing: point, sd, boot95: [boot[50], boot[1949]], perSeed };
}
// As scripts/proofSupport.ts groundTruth reads a grid: the highest rate that passes, with every lower one passing.
let gridCapacity: number | null = null;
for (const [j, qps] of rates.entries()) {
  const fails = [...counts.values()].some((e) => {
    const { m, n } = pooled(e, j, all);
    return n > 0 && m / n > e.allowed;
  });
  if (fails) break;
  gridCapacity = qps;
}
console.log(`${c.recipe.name} (grid, as proofSupport.ts groundTruth reads it): ${gridCapacity === null ? 'no rate passes' : `${f(gridCapacity)} QPS`}`);
out.grid = gridCapacity;
console.log(`${seeds} seeds × ${requests} requests × ${rates.length} rates; wall ${((performance.now() - started) / 1000).toFixed(0)} s`);
if (values.json) writeFileSync(values.json, JSON.stringify(out, null, 1));
