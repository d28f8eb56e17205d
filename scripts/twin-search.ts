// npx tsx scripts/twin-search.ts [recipe.yaml ...] [--no-early-stop] [--json]
// The recipe's whole capacity search on the twin (the simulated engine core in virtual time):
// prints each probe, the capacity and bracket, the wall time and the speed-up over running the
// same profile and probes for real (virtual seconds of engine time ÷ wall seconds).
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { loadRecipe } from '../harness/recipe/load.ts';
import { rehearse } from '../harness/twin/rehearse.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'no-early-stop': { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
});
const files = positionals.length > 0 ? positionals : ['recipes/quickstart.yaml'];
const out: unknown[] = [];
for (const file of files) {
  const t0 = performance.now();
  const recipe = await loadRecipe(file);
  const loadS = (performance.now() - t0) / 1000;
  const r = rehearse(recipe, undefined, {
    earlyStop: values['no-early-stop'] ? false : undefined,
    onProbe: (p) => {
      if (values.json) return;
      const stop = p.earlyStop ? ', stopped early' : '';
      console.log(`  probe ${p.index}: ${p.qps} QPS ${p.passed ? 'PASS' : 'FAIL'} (${p.requests} requests, ${p.durationS.toFixed(1)} virtual s${stop}; SLO value ${p.sloValue?.toFixed(4) ?? '-'})`);
    },
  });
  if (values.json) {
    out.push({ recipe: file, capacityQps: r.capacityQps, bracket: r.bracket, outcome: r.outcome, probes: r.probes.map(({ ttftS: _t, tbtS: _b, ...p }) => p), fit: r.fit, wallS: r.wallS, virtualS: r.probeTimeS + r.profileTimeS, speedup: r.speedup });
    continue;
  }
  console.log(`${file}: capacity ${r.capacityQps} QPS, bracket pass ${r.bracket.passQps} / fail ${r.bracket.failQps} (${r.outcome}: ${r.reason})`);
  console.log(`  D_p(P) = ${r.fit.a.toExponential(3)} + ${r.fit.b.toExponential(3)}·P + ${r.fit.c.toExponential(3)}·P² s (virtual profile, ${r.profileTimeS.toFixed(2)} s)`);
  console.log(
    `  twin wall time ${r.wallS.toFixed(2)} s (recipe load ${loadS.toFixed(2)} s) for ${(r.profileTimeS + r.probeTimeS).toFixed(1)} s of engine time ` +
      `(${r.probes.length} probes, ${r.probeTimeS.toFixed(1)} s of load): speed-up ×${r.speedup.toFixed(0)}`,
  );
}
if (values.json) console.log(JSON.stringify(out, null, 2));
