// npx tsx scripts/probe-tail.ts --recipe recipes/papers/llama2-70b-a100-tp4-sim.yaml --qps 0.34
//                               [--requests 300] [--seeds 1000] [--entry tbt] [--cool-down 0.1]
// Where in a probe its misses fall. A probe's arrivals stop with its last measured request, so its
// last requests end on an engine that empties; its first ones follow a start from an idle engine.
// On the twin's virtual clock this runs `--seeds` probes of `--requests` at `--qps` (each its own
// workload seed, the recipe's warm-up share) and prints one SLO entry's miss fraction by tenth
// of the measured requests, in arrival order: first as a probe runs now, then with `--cool-down`
// (a share of the requests sent after them, never judged; twin/virtualProbe.ts coolDownRequests),
// which keeps the engine loaded until the last measured request has ended. Both see the same
// arrivals and lengths; only what follows the measured requests differs.
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { sloSeries } from '../harness/capacity/sloDecision.ts';
import { configOf, evaluated, plan, runPlanned } from './proofSupport.ts';

const { values } = parseArgs({
  options: {
    recipe: { type: 'string', default: 'recipes/papers/llama2-70b-a100-tp4-sim.yaml' },
    qps: { type: 'string', default: '0.34' },
    requests: { type: 'string', default: '300' },
    seeds: { type: 'string', default: '1000' },
    entry: { type: 'string' },
    'cool-down': { type: 'string', default: '0.1' },
  },
});
const t0 = performance.now();
const c = await configOf(values.recipe);
const qps = Number(values.qps);
const requests = Number(values.requests);
const seeds = Number(values.seeds);
const share = Number(values['cool-down']);
for (const [flag, v] of [['--qps', qps], ['--requests', requests], ['--seeds', seeds], ['--cool-down', share]] as const) {
  if (!(v > 0)) throw new Error(`${flag}: expected a positive number, got ${JSON.stringify(v)}`);
}
const coolDown = Math.ceil(share * requests);
const warmup = Math.floor(c.runPlan.probe.warmupFraction * requests);

/** Misses and observations of the entry by tenth of the measured requests, every seed pooled. */
function tenths(withCoolDown: boolean): { name: string; m: number; n: number }[] {
  const out = Array.from({ length: 10 }, () => ({ name: '', m: 0, n: 0 }));
  for (let s = 0; s < seeds; s++) {
    const all = plan(c, qps, requests + coolDown, 500 + s, 1e9);
    const measured = all.slice(0, requests);
    const { records } = withCoolDown ? runPlanned(c, all, { coolDownRequests: coolDown }) : runPlanned(c, measured);
    const series = sloSeries(evaluated(c, measured, records, warmup), c.slo);
    const entry = values.entry ? series.find((x) => x.name === values.entry) : series.reduce((a, b) => (b.allowedFraction < a.allowedFraction ? b : a));
    if (!entry) throw new Error(`--entry: the recipe's SLO has no entry ${JSON.stringify(values.entry)} (it has ${series.map((x) => x.name).join(', ')})`);
    let from = 0;
    entry.endOf.forEach((end, i) => {
      const t = out[Math.min(9, Math.floor((i / entry.endOf.length) * 10))];
      t.name = entry.name;
      for (let j = from; j < end; j++) {
        t.m += entry.misses[j];
        t.n += 1;
      }
      from = end;
    });
  }
  return out;
}

const pct = (m: number, n: number) => `${((100 * m) / n).toFixed(3)}%`;
const sum = (ts: { m: number; n: number }[]) => ts.reduce((a, t) => ({ m: a.m + t.m, n: a.n + t.n }), { m: 0, n: 0 });
const rows = [
  { label: 'as probes run (arrivals stop with the measured requests)', t: tenths(false) },
  { label: `with a cool-down of ${coolDown} requests after them`, t: tenths(true) },
];
console.log(`${c.recipe.name}: ${qps} QPS, ${requests} requests a probe (first ${warmup} warm-up), ${seeds} probes; SLO entry ${rows[0].t[0].name}, miss fraction by tenth of the measured requests`);
console.log(`| probe | ${Array.from({ length: 10 }, (_, i) => `${i + 1}`).join(' | ')} | whole probe |`);
console.log(`|---|${'---|'.repeat(11)}`);
for (const r of rows) {
  const all = sum(r.t);
  console.log(`| ${r.label} | ${r.t.map((t) => pct(t.m, t.n)).join(' | ')} | ${pct(all.m, all.n)} |`);
}
console.log(`wall time: ${((performance.now() - t0) / 1000).toFixed(0)} s (virtual clock)`);
