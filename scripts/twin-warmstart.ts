// npx tsx scripts/twin-warmstart.ts [recipe.yaml ...] [--out results/twin-warmstart]
// Does starting the real search from the twin's bracket save probes without changing the answer?
// For each recipe: the twin rehearses it (seconds); then the real engine (the recipe's target, e.g.
// the real-time simulated engine as the stand-in for a GPU) is started and profiled once, and the
// search runs twice on it with that fit — cold (capacity/search.ts from search.qps.start) and
// warm-started (harness/capacity/warmStart.ts from the twin's bracket). Prints probes and
// probe-seconds to convergence and both capacities.
import { parseArgs } from 'node:util';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadRecipe } from '../harness/recipe/load.ts';
import { startEngineSession } from '../harness/capacity/engineSession.ts';
import { runProfile } from '../harness/capacity/profiler.ts';
import { runProbeStep } from '../harness/capacity/probeStep.ts';
import { nextProbe, type Bracket, type ProbeVerdict, type SearchDecision } from '../harness/capacity/search.ts';
import { planOf, rehearse } from '../harness/twin/rehearse.ts';
import { warmNextProbe } from '../harness/capacity/warmStart.ts';
import type { PrefillFit } from '../harness/metrics/prefill.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string', default: 'results/twin-warmstart' } } });
const files = positionals.length > 0 ? positionals : ['recipes/quickstart.yaml'];
const log = (line: string) => process.stderr.write(`  ${line}\n`);

for (const file of files) {
  const recipe = await loadRecipe(file);
  const plan = planOf(recipe, `${recipe.name}-warmstart`);
  const twin = rehearse(recipe, plan);
  console.log(`${file}: twin bracket pass ${twin.bracket.passQps} / fail ${twin.bracket.failQps} in ${twin.wallS.toFixed(2)} s`);
  const dir = resolve(values.out!, `${recipe.name}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const session = await startEngineSession(plan, { runDir: dir, log });
  try {
    const { fit } = await runProfile(
      plan.profile,
      { baseUrl: session.baseUrl, model: session.servedModel, api: recipe.workload.api, format: recipe.workload.api === 'chat' ? 'text' : recipe.workload.prompts.format, apiKey: session.apiKey, seed: recipe.workload.seed, requestTimeoutS: recipe.profile.requestTimeoutS },
      { runDir: dir, ttftSlackS: plan.slo.fluidity?.ttftSlackS ?? 0.3, fitBounds: recipe.profile.fitBounds, log },
    );
    const search = async (name: string, next: (probes: ProbeVerdict[]) => SearchDecision, fitUsed: PrefillFit) => {
      const t0 = performance.now();
      const probes: (ProbeVerdict & { durationS: number })[] = [];
      const runDir = join(dir, name);
      for (;;) {
        const d = next(probes);
        if (d.done) {
          const probeS = probes.reduce((t, p) => t + p.durationS, 0);
          console.log(
            `  ${name}: capacity ${d.capacityQps} QPS (${d.outcome}), ${probes.length} probes, ${probeS.toFixed(1)} s of load, ${((performance.now() - t0) / 1000).toFixed(0)} s wall: ` +
              probes.map((p) => `${p.qps}:${p.valid ? (p.passed ? 'pass' : 'fail') : 'invalid'}`).join(' '),
          );
          return { capacityQps: d.capacityQps, probes: probes.length, probeS };
        }
        const s = await runProbeStep({ index: probes.length + 1, qps: d.qps, plan, fit: fitUsed, session, runDir, earlyStop: plan.probe.earlyStop, log });
        probes.push({ qps: d.qps, passed: s.passed, valid: s.valid, reason: s.valid ? undefined : s.validity, durationS: s.durationS });
      }
    };
    const cold = await search('cold', (p) => nextProbe(plan.search, p), fit);
    const warm = await search('warm', (p) => warmNextProbe(plan.search, p, twin.bracket as Bracket), fit);
    const same = cold.capacityQps === warm.capacityQps ? 'same capacity' : `capacities differ by ${(((warm.capacityQps - cold.capacityQps) / cold.capacityQps) * 100).toFixed(1)}% (tolerance ${recipe.search.tolerance * 100}%)`;
    console.log(`  warm start: ${cold.probes - warm.probes} fewer probes, ${(cold.probeS - warm.probeS).toFixed(1)} s less load (${(((cold.probeS - warm.probeS) / cold.probeS) * 100).toFixed(0)}%); ${same}`);
  } finally {
    await session.stop();
  }
}
