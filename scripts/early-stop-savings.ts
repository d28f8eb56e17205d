// npx tsx scripts/early-stop-savings.ts [--recipe tests/fixtures/recipes/sweep-check.yaml] [--out results/early-stop-savings]
// Does early stopping save probe time without changing the answer? Runs the recipe's whole search
// twice (`fluidcap run`, in process, each with its own engine and profile): early stopping off, then
// on. Prints both capacities (they must agree), each probe's verdict side by side, and the probe
// time (seconds of load) saved.
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { runCapacity } from '../harness/capacity/runCapacity.ts';
import type { CapacityJson } from '../harness/runDir/schema.ts';

const { values } = parseArgs({
  options: {
    recipe: { type: 'string', default: 'tests/fixtures/recipes/sweep-check.yaml' },
    out: { type: 'string', default: 'results/early-stop-savings' },
  },
});
const log = (line: string) => process.stderr.write(`  ${line}\n`);

async function search(earlyStop: boolean): Promise<{ cap: CapacityJson; runDir: string; wallS: number }> {
  process.stderr.write(`search with early stopping ${earlyStop ? 'on' : 'off'}: ${values.recipe}\n`);
  const t0 = performance.now();
  const outcome = await runCapacity({ recipeFile: values.recipe, outDir: values.out, log, earlyStop });
  if (outcome.status !== 'completed' || !outcome.capacity) throw new Error(`the search did not complete: ${outcome.reason}`);
  return { cap: outcome.capacity, runDir: outcome.runDir, wallS: (performance.now() - t0) / 1000 };
}

const off = await search(false);
const on = await search(true);

const describe = (c: CapacityJson) => c.probes.map((p) => `${p.qps}:${p.valid ? (p.passed ? 'pass' : 'fail') : 'invalid'}${p.earlyStop ? '*' : ''}`).join(' ');
const savedS = off.cap.probeTimeS - on.cap.probeTimeS;
const samePath = describe(off.cap).replaceAll('*', '') === describe(on.cap).replaceAll('*', '');
console.log(`recipe:               ${values.recipe}`);
console.log(`early stop off:       ${off.cap.capacityQps} QPS, ${off.cap.probes.length} probes, ${off.cap.probeTimeS.toFixed(1)} s of load, ${off.wallS.toFixed(0)} s wall (${off.runDir})`);
console.log(`early stop on:        ${on.cap.capacityQps} QPS, ${on.cap.probes.length} probes, ${on.cap.probeTimeS.toFixed(1)} s of load, ${on.wallS.toFixed(0)} s wall (${on.runDir})`);
console.log(`probes off:           ${describe(off.cap)}`);
console.log(`probes on:            ${describe(on.cap)}   (* = stopped early)`);
console.log(`same capacity:        ${off.cap.capacityQps === on.cap.capacityQps ? 'yes' : 'NO'}; same probe path and verdicts: ${samePath ? 'yes' : 'no'}`);
console.log(`probe time saved:     ${savedS.toFixed(1)} s of ${off.cap.probeTimeS.toFixed(1)} s (${((savedS / off.cap.probeTimeS) * 100).toFixed(1)}%)`);
