// npx tsx scripts/twin-agreement.ts [--only name,name] [--requests 800] [--time-scale 1] [--margin 0.025]
//                                  [--out results/twin-agreement] [--doc docs/twin-agreement.md]
// Does the twin (the simulated engine core in virtual time) give the real-time simulated engine's
// capacity and latencies? For each configuration (model × scheduler × workload):
//  1. the real-time engine is started (`fluidcap sim serve` as a child process, as `fluidcap run`
//     does) and its isolated prefills profiled; the twin is calibrated to the one thing it cannot
//     know, the fixed overhead of a request's way through HTTP (median of real − modelled prefill);
//  2. the twin finds its capacity with long fixed-rate probes (the same plan and seed at every
//     rate, early stop off) by bisection to 0.2%;
//  3. the real-time engine runs the same long probes at twin × (1 − margin) and twin × (1 + margin):
//     a pass below and a fail above put the real capacity within ±margin of the twin's. When the
//     real engine disagrees, it is probed further out in margin steps until its bracket is found;
//  4. TTFT and TBT p50/p90/p99 of the real probes are compared with the twin's on the same plans:
//     at --latency-load × the twin's capacity (an operating point) and at the passing probe next to
//     capacity (where queueing magnifies every difference).
// Prints markdown tables (also written to --doc) and keeps every run directory under --out;
// --keep reuses the configurations already measured in <out>/agreement.json.
import { parseArgs } from 'node:util';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { loadRecipe } from '../harness/recipe/load.ts';
import type { Recipe } from '../harness/recipe/parse.ts';
import type { RunPlan } from '../harness/capacity/runPlan.ts';
import { startEngineSession } from '../harness/capacity/engineSession.ts';
import { runProfile } from '../harness/capacity/profiler.ts';
import { runProbeStep } from '../harness/capacity/probeStep.ts';
import type { ProbeSummary } from '../harness/runDir/schema.ts';
import { engineConfigOf } from '../harness/sim/engine.ts';
import { planOf } from '../harness/twin/rehearse.ts';
import { simConfigOf } from '../harness/twin/simTarget.ts';
import { runTwinProbe, runTwinSearch, type TwinProbe } from '../harness/twin/twinSearch.ts';
import { isolatedPrefillS } from '../harness/twin/virtualProfile.ts';
import type { Distribution } from '../harness/metrics/summary.ts';
import type { PrefillFit } from '../harness/metrics/prefill.ts';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    requests: { type: 'string', default: '800' },
    'time-scale': { type: 'string', default: '1' },
    margin: { type: 'string', default: '0.025' },
    'latency-load': { type: 'string', default: '0.75' },
    out: { type: 'string', default: 'results/twin-agreement' },
    doc: { type: 'string', default: 'docs/twin-agreement.md' },
    /** Keep the rows already in <out>/agreement.json and run only the configurations missing there. */
    keep: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const SCALE = Number(values['time-scale']);
const MARGIN = Number(values.margin);
const LATENCY_LOAD = Number(values['latency-load']);
const log = (line: string) => process.stderr.write(`  ${line}\n`);

interface Config {
  name: string;
  model: string;
  gpu: string;
  scheduler: 'vllm' | 'sarathi';
  workload: 'short' | 'long';
}
const WORKLOADS = {
  // The quickstart's requests.
  short: { prompt: { dist: 'uniform', min: 256, max: 1024 }, output: { dist: 'uniform', min: 32, max: 96 } },
  // Longer prompts and outputs with lognormal tails.
  long: { prompt: { dist: 'quantiles', median: 1024, p90: 2048, max: 3072 }, output: { dist: 'quantiles', median: 128, p90: 256, max: 512 } },
};
const CONFIGS: Config[] = [];
for (const workload of ['short', 'long'] as const) {
  for (const [model, gpu] of [['llama-3-8b', 'h100-sxm-80gb'], ['llama-2-7b', 'h100-sxm-80gb']]) {
    for (const scheduler of ['vllm', 'sarathi'] as const) CONFIGS.push({ name: `${model}-${scheduler}-${workload}`, model, gpu, scheduler, workload });
  }
}
const chosen = values.only ? CONFIGS.filter((c) => values.only!.split(',').includes(c.name)) : CONFIGS;
if (chosen.length === 0) throw new Error(`--only matched none of: ${CONFIGS.map((c) => c.name).join(', ')}`);

// A recipe per configuration; deadlines scale with the engine's time scale so the verdicts are the same.
async function recipeFor(c: Config, dir: string): Promise<Recipe> {
  const doc = {
    name: `agree-${c.name}`,
    target: {
      engine: 'sim',
      model: c.model,
      gpuProfile: c.gpu,
      engineArgs: { maxNumSeqs: 128, maxModelLen: 4096, ...(c.scheduler === 'sarathi' ? { chunkSize: 512 } : {}) },
      sim: { scheduler: c.scheduler, timeScale: SCALE },
    },
    workload: { api: 'completions', lengths: WORKLOADS[c.workload], arrivals: { process: 'poisson' }, seed: 7 },
    profile: { promptLengths: [128, 256, 512, 1024, 2048, 3072], repeats: 3, minR2: 0, maxRepeatCv: 100 },
    search: {
      qps: { start: 8, min: 0.25, max: 256 },
      tolerance: 0.05,
      maxProbes: 12,
      probe: { requests: REQUESTS, minDuration: '0s', duration: '30m', warmup: '10%', clientTolerance: `${20 * SCALE}ms` },
    },
    slo: { fluidity: { tbtDeadline: `${50 * SCALE}ms`, ttftSlack: `${0.3 * SCALE}s`, minFluidity: 0.9, percentile: 99 } },
  };
  const file = join(dir, `${c.name}.yaml`);
  writeFileSync(file, stringify(doc));
  return loadRecipe(file);
}

interface Row {
  config: string;
  twinQps: number;
  twinSearchQps: number;
  realPassQps: number | null;
  realFailQps: number | null;
  within: boolean;
  realProbes: { qps: number; passed: boolean; valid: boolean; sloValue: number | null; durationS: number; validity: string }[];
  overheadS: number;
  latency: { atQps: number; ttft: { real: Distribution; twin: Distribution }; tbt: { real: Distribution; twin: Distribution } }[];
  wallS: number;
}

const pct = (real: number | null, twin: number | null) => (real === null || twin === null ? 'n/a' : `${(((twin - real) / real) * 100).toFixed(1)}%`);
const ms = (s: number | null) => (s === null ? '-' : (s * 1e3).toFixed(1));
const P = ['p50', 'p90', 'p99'] as const;
const diffs = (x: { real: Distribution; twin: Distribution }) => P.map((p) => pct(x.real[p], x.twin[p])).join(' / ');
const vals = (x: Distribution) => P.map((p) => ms(x[p])).join(' / ');

// TBT p50/p90/p99 of a real probe from the engine's own emit stamps (fluidcap_emit_ns): the gaps as
// the engine process wrote them, before the client's receive; read from the probe's timelines.
function emitTbt(config: string, qps: number): string {
  const probes = join(outDir, config, 'probes');
  if (!existsSync(probes)) return '-';
  const dirs = readdirSync(probes).filter((d) => d.endsWith(`-qps-${qps}`)).sort();
  if (dirs.length === 0) return '-';
  const gaps: number[] = [];
  for (const line of readFileSync(join(probes, dirs[dirs.length - 1], 'timelines.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    const r = JSON.parse(line) as { warmup?: boolean; emitNs?: string[] };
    if (r.warmup || !r.emitNs) continue;
    for (let i = 1; i < r.emitNs.length; i++) gaps.push(Number(BigInt(r.emitNs[i]) - BigInt(r.emitNs[i - 1])) / 1e9);
  }
  if (gaps.length === 0) return '-';
  gaps.sort((a, b) => a - b);
  const at = (p: number) => gaps[Math.max(0, Math.ceil((p / 100) * gaps.length) - 1)];
  return [50, 90, 99].map((p) => ms(at(p))).join(' / ');
}

// A real rate, starred when its last probe was not valid (client error beyond tolerance).
const mark = (r: Row, q: number | null) => (q === null ? '-' : r.realProbes.filter((p) => p.qps === q).at(-1)?.valid === false ? `${q}*` : String(q));

// The markdown tables of the rows so far (written after every configuration, so a partial run keeps its table).
function render(wallS: number): string {
  const cap = [
    `| configuration | twin capacity (QPS) | real-time bracket (QPS) | within ±${MARGIN * 100}% | twin search, recipe probes (QPS) | request overhead (ms) | wall (s) |`,
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.config} | ${r.twinQps} | pass ${mark(r, r.realPassQps)} / fail ${mark(r, r.realFailQps)} | ${r.within ? 'yes' : 'NO'} | ${r.twinSearchQps} | ${(r.overheadS * 1e3).toFixed(2)} | ${r.wallS.toFixed(0)} |`),
  ];
  const lat = [
    '| configuration | at (QPS) | TTFT p50 / p90 / p99 real (ms) | twin vs real | TBT p50 / p90 / p99 real (ms) | twin vs real | twin TBT (ms) | real TBT at the engine\'s emit (ms) |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.flatMap((r) => r.latency.map((l) => `| ${r.config} | ${l.atQps} | ${vals(l.ttft.real)} | ${diffs(l.ttft)} | ${vals(l.tbt.real)} | ${diffs(l.tbt)} | ${vals(l.tbt.twin)} | ${emitTbt(r.config, l.atQps)} |`)),
  ];
  const header =
    `Generated by \`npx tsx scripts/twin-agreement.ts --requests ${REQUESTS} --time-scale ${SCALE} --margin ${MARGIN} --latency-load ${LATENCY_LOAD}\`: ` +
    `${rows.length} configuration(s), ${REQUESTS}-request fixed-rate probes (10% warm-up), seed 7, early stop off, engine time scale ${SCALE}, ` +
    `fluidity p99 ≥ 0.9 at a ${50 * SCALE} ms TBT deadline and ${0.3 * SCALE} s TTFT slack (the quickstart's SLO × the time scale); wall time ${wallS.toFixed(0)} s.`;
  const note = '\n\n\\* the client\'s timing error exceeded its tolerance on that probe (twice): the verdict is not trusted and the row does not count as within.';
  return `${header}${note}\n\n### Capacity\n\n${cap.join('\n')}\n\n### Latencies on the same plans (first row of each configuration: ${LATENCY_LOAD} × the twin's capacity; second: the real passing probe next to capacity)\n\n${lat.join('\n')}\n`;
}
function writeDoc(text: string): void {
  mkdirSync(resolve(values.doc!, '..'), { recursive: true });
  const method = [
    'Does the twin (harness/twin/: the simulated engine core in virtual time) give the capacity and the latencies of the',
    'real-time simulated engine? Per configuration, the real engine runs as `fluidcap run` starts it (a child process,',
    'real HTTP, the load client with its receiving worker) and is profiled; the twin is given the one figure it cannot',
    'model, the fixed overhead of a request through HTTP (median real − modelled isolated prefill, the column below).',
    'The twin finds its capacity by bisection to 0.2% with long fixed-rate probes (the same plan and seed at every rate,',
    'early stop off); the real engine then runs the same probes at the twin\'s capacity × (1 ∓ margin): a pass below and',
    'a fail above put its capacity within ±margin of the twin\'s. Latencies compare the real probes with the twin\'s on',
    'the same plans. The engine runs at a time scale (every modelled duration × scale, SLO deadlines × scale) so that the',
    'client\'s timing error on this shared 2-core machine stays below its tolerance; capacities are in scaled QPS.',
    'The last column gives the real engine\'s TBT from its own emit stamps: where it departs from the twin, the real',
    'engine process itself was late (it waits for a CPU on a loaded machine), not the model.',
  ].join('\n');
  writeFileSync(values.doc!, `# Twin agreement\n\n${method}\n\n${text}`);
}

const outDir = resolve(values.out!);
mkdirSync(outDir, { recursive: true });
const rows: Row[] = [];
const keptFile = join(outDir, 'agreement.json');
if (values.keep && existsSync(keptFile)) rows.push(...(JSON.parse(readFileSync(keptFile, 'utf8')) as { rows: Row[] }).rows);
const t0All = performance.now();
for (const c of chosen) {
  if (rows.some((r) => r.config === c.name)) continue;
  const t0 = performance.now();
  process.stderr.write(`${c.name}\n`);
  const dir = join(outDir, c.name);
  mkdirSync(dir, { recursive: true });
  const recipe = await recipeFor(c, dir);
  const plan: RunPlan = { ...planOf(recipe, `agree-${c.name}`), probe: { ...planOf(recipe).probe, earlyStop: false } };
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const session = await startEngineSession(plan, { runDir: dir, log });
  try {
    // 1. Real profile; the twin's calibration to the request's fixed overhead.
    const { fit: realFit, points } = await runProfile(
      plan.profile,
      { baseUrl: session.baseUrl, model: session.servedModel, api: 'completions', format: 'token-ids', seed: recipe.workload.seed, requestTimeoutS: 60 },
      { runDir: dir, ttftSlackS: plan.slo.fluidity!.ttftSlackS, fitBounds: recipe.profile.fitBounds, log },
    );
    const over = points.map((p) => p.prefillS - isolatedPrefillS(engine, p.promptTokens).prefillS).sort((a, b) => a - b);
    const overheadS = over[over.length >> 1];
    log(`request overhead (real − modelled isolated prefill), median of ${over.length}: ${(overheadS * 1e3).toFixed(2)} ms`);
    const delays = { sendDelayS: overheadS };

    // 2. The twin's capacity with long fixed-rate probes (its own calibrated profile and fit).
    const twinSearch = runTwinSearch({ plan: { ...plan, probe: { ...plan.probe, earlyStop: true } }, workload: recipe.workload, engine, fitBounds: recipe.profile.fitBounds, delays });
    const twinFit: PrefillFit = twinSearch.fit;
    const twinInput = { plan, workload: recipe.workload, engine, fit: twinFit, earlyStop: false, delays };
    const twinAt = (qps: number): TwinProbe => runTwinProbe(twinInput, 1, qps);
    let lo = (twinSearch.bracket.passQps ?? 0.5) * 0.7;
    let hi = (twinSearch.bracket.failQps ?? 64) * 1.3;
    while (!twinAt(lo).passed) lo /= 1.5;
    while (twinAt(hi).passed) hi *= 1.5;
    while ((hi - lo) / lo > 0.002) {
      const mid = (lo + hi) / 2;
      if (twinAt(mid).passed) lo = mid;
      else hi = mid;
    }
    const twinQps = +lo.toPrecision(4);
    log(`twin: capacity ${twinQps} QPS with ${REQUESTS}-request probes (twin search with the recipe's probes: ${twinSearch.capacityQps} QPS)`);

    // 3. Real-time long probes around the twin's capacity.
    const realProbes: Row['realProbes'] = [];
    const summaries = new Map<number, ProbeSummary>();
    // A probe the client could not measure (its timing error could flip the verdict) is run once more, as the search does.
    const realAt = async (qps: number) => {
      let s = await runProbeStep({ index: realProbes.length + 1, qps, plan, fit: realFit, session, runDir: dir, earlyStop: false, log });
      if (!s.valid) {
        realProbes.push({ qps, passed: s.passed, valid: s.valid, sloValue: s.sloValue, durationS: s.durationS, validity: s.validity });
        log(`real: ${qps} QPS invalid (${s.validity}); probing it again`);
        s = await runProbeStep({ index: realProbes.length + 1, qps, plan, fit: realFit, session, runDir: dir, earlyStop: false, log });
      }
      realProbes.push({ qps, passed: s.passed, valid: s.valid, sloValue: s.sloValue, durationS: s.durationS, validity: s.validity });
      summaries.set(qps, s);
      log(`real: ${qps} QPS ${s.passed ? 'PASS' : 'FAIL'}${s.valid ? '' : ' (client: ' + s.validity + ')'} fluidity p99 ${s.sloValue?.toFixed(4)} in ${s.durationS.toFixed(1)} s`);
      return s.passed;
    };
    const below = +(twinQps * (1 - MARGIN)).toPrecision(4);
    const above = +(twinQps * (1 + MARGIN)).toPrecision(4);
    let realPass: number | null = null;
    let realFail: number | null = null;
    if (await realAt(below)) realPass = below;
    else {
      realFail = below;
      for (let k = 2, q = twinQps * (1 - k * MARGIN); k <= 8 && realPass === null; k++, q = twinQps * (1 - k * MARGIN)) {
        const r = +q.toPrecision(4);
        if (await realAt(r)) realPass = r;
        else realFail = r;
      }
    }
    if (realFail === null) {
      if (!(await realAt(above))) realFail = above;
      else {
        realPass = above;
        for (let k = 2; k <= 8 && realFail === null; k++) {
          const r = +(twinQps * (1 + k * MARGIN)).toPrecision(4);
          if (await realAt(r)) realPass = r;
          else realFail = r;
        }
      }
    }
    // Only verdicts the client could measure count.
    const trusted = (q: number | null) => q !== null && realProbes.some((p) => p.qps === q && p.valid);
    const within = realPass !== null && realFail !== null && realPass >= below && realFail <= above && trusted(realPass) && trusted(realFail);

    // 4. Latencies on the same plans: an operating point, and the passing probe next to capacity.
    const operating = +(twinQps * LATENCY_LOAD).toPrecision(4);
    await realAt(operating);
    const latency: Row['latency'] = [];
    for (const atQps of [operating, realPass ?? below]) {
      const real = summaries.get(atQps)!;
      const twin = twinAt(atQps);
      latency.push({ atQps, ttft: { real: real.metrics.ttftS, twin: twin.ttftS }, tbt: { real: real.metrics.tbtS, twin: twin.tbtS } });
    }
    rows.push({
      config: c.name,
      twinQps,
      twinSearchQps: twinSearch.capacityQps,
      realPassQps: realPass,
      realFailQps: realFail,
      within,
      realProbes,
      overheadS,
      latency,
      wallS: (performance.now() - t0) / 1000,
    });
    log(`done in ${rows[rows.length - 1].wallS.toFixed(0)} s`);
  } finally {
    await session.stop();
  }
  writeFileSync(join(outDir, 'agreement.json'), JSON.stringify({ requests: REQUESTS, timeScale: SCALE, margin: MARGIN, rows }, null, 2) + '\n');
  if (values.doc) writeDoc(render((performance.now() - t0All) / 1000));
}

const table = render((performance.now() - t0All) / 1000);
console.log(table);
if (values.doc) writeDoc(table);
