// Capacity per SLO definition through the whole `fluidcap run` (a real child process on the simulated
// engine): the fast recipe with a second SLO entry (TTFT P50 <= 1 s, looser than the fluidity SLO),
// short probes, and a load budget of 50 s, so probes near the knee span a tenth of it (5 s, not 3 s).
// Each definition's bracket in capacity.json is checked against the probes' own summary.json files,
// read independently of the module under test: a probe is evidence for a definition when it is valid
// and ran to its end, or stopped early naming that definition. About 55 s on this machine (2 shared cores).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, onlyRunDir, readJson } from './support.ts';
import { fmtNum } from '../../harness/report/format.ts';
import { shown } from '../support/hooks.ts';

interface PerSlo {
  name: string;
  source: string;
  capacityQps: number;
  bracket: { passQps: number | null; failQps: number | null };
  outcome: string;
  reason: string;
  probesUsed: number[];
}
interface Capacity {
  capacityQps: number;
  tolerance: number;
  bracket: { passQps: number | null; failQps: number | null };
  probes: { index: number; qps: number; dir: string; passed: boolean; valid: boolean; earlyStop: string | null }[];
  perSlo: PerSlo[];
  interval: { perSlo?: { name: string; estimateQps: number | null; loQps: number | null; hiQps: number | null }[] } | null;
}
interface Summary {
  index: number;
  qps: number;
  valid: boolean;
  interrupted: boolean;
  earlyStop: string | null;
  earlyStopFor?: string[];
  client: { verdict: string };
  planned: number;
  passed: boolean;
  kneeWarmup: { requests: number } | null;
  clientTrustedFails?: string[];
  slo: { results: { name: string; source: string; passed: boolean }[] };
}

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-perslo-'));
const outDir = join(work, 'results');
let runDir = '';
let capacity: Capacity;
let summaries: Summary[] = [];

test.before(shown(async () => {
  const recipe = readFileSync(FAST_RECIPE, 'utf8')
    .replace('name: fast', 'name: per-slo')
    .replace(/tolerance: 0\.1\n\s*maxProbes: 8/, 'tolerance: 0.25\n  maxProbes: 12\n  budget: 50s')
    .replace(/(\n\s*fluidity: \{ tbtDeadline: 50ms[^\n]*)/, '$1\n  ttft: p50 <= 1s');
  if (!recipe.includes('ttft: p50 <= 1s') || !recipe.includes('maxProbes: 12') || !recipe.includes('minDuration: 3s, duration: 20s')) throw new Error('tests/fixtures/recipes/fast.yaml changed shape: update this test');
  const file = join(work, 'per-slo.yaml');
  writeFileSync(file, recipe);
  const r = await fluidcap(['run', file, '--out', outDir], { timeoutMs: 240_000 });
  if (r.code !== 0) throw new Error(`fluidcap run exited ${r.code}:\n${r.stderr.slice(-3000)}`);
  runDir = onlyRunDir(outDir);
  capacity = readJson<Capacity>(join(runDir, 'capacity.json'));
  summaries = capacity.probes.map((p) => readJson<Summary>(join(runDir, p.dir, 'summary.json')));
}));

test.after(() => rmSync(work, { recursive: true, force: true }));

// A definition's evidence read straight from a summary.
function evidenceOf(s: Summary, name: string, source: string): 'pass' | 'fail' | null {
  if (s.interrupted || !s.valid) return null;
  if (s.earlyStop !== null) return s.earlyStop.includes(`SLO "${source}"`) ? 'fail' : null;
  const r = s.slo.results.find((x) => x.name === name)!;
  if (s.client.verdict !== 'valid') return !r.passed && (s.clientTrustedFails ?? []).includes(name) ? 'fail' : null;
  return r.passed ? 'pass' : 'fail';
}

test('capacity.json has one perSlo entry per SLO entry of the recipe, quoting it', () => {
  assert.equal(capacity.perSlo.map((p) => p.name), ['fluidity', 'ttft']);
  assert.match(capacity.perSlo[1].source, 'p50 <= 1s');
  for (const p of capacity.perSlo) assert.ok(p.outcome !== 'running', `${p.name}: ${p.outcome}`);
});

test("each definition's bracket and probes are what the probes' summaries say", () => {
  for (const def of capacity.perSlo) {
    const ev = summaries.map((s) => ({ index: s.index, qps: s.qps, e: evidenceOf(s, def.name, def.source) }));
    assert.equal(def.probesUsed, ev.filter((x) => x.e !== null).map((x) => x.index), `${def.name}: probes used`);
    const fails = ev.filter((x) => x.e === 'fail').map((x) => x.qps);
    const failQps = fails.length ? Math.min(...fails) : null;
    const passes = ev.filter((x) => x.e === 'pass' && (failQps === null || x.qps < failQps)).map((x) => x.qps);
    assert.equal(def.bracket, { passQps: passes.length ? Math.max(...passes) : null, failQps }, def.name);
    assert.is(def.capacityQps, def.bracket.passQps ?? 0);
    if (def.outcome === 'converged') {
      // Converged: its bracket, or its own interval (within ± tolerance of its estimate), is as narrow as the recipe asks.
      const bracketWithin = def.bracket.failQps !== null && def.bracket.passQps !== null && (def.bracket.failQps - def.bracket.passQps) / def.bracket.passQps <= capacity.tolerance + 1e-9;
      const iv = capacity.interval?.perSlo?.find((x) => x.name === def.name);
      const intervalWithin = !!iv && iv.estimateQps !== null && iv.loQps !== null && iv.hiQps !== null && Math.max(iv.estimateQps - iv.loQps, iv.hiQps - iv.estimateQps) <= capacity.tolerance * iv.estimateQps + 1e-6;
      assert.ok(bracketWithin || intervalWithin, `${def.name}: ${def.reason} (interval ${JSON.stringify(iv)})`);
    } else {
      assert.ok(['max-probes', 'budget', 'at-least-max', 'below-min'].includes(def.outcome), `${def.name}: unexpected ${def.outcome}: ${def.reason}`);
    }
  }
});

test('the two definitions have different capacities, and the headline is the combined verdict', () => {
  const [fluidity, ttft] = capacity.perSlo;
  assert.ok(ttft.capacityQps > fluidity.capacityQps, `ttft p50 <= 1s (${ttft.capacityQps} QPS) should hold above the fluidity SLO's capacity (${fluidity.capacityQps} QPS)`);
  // The headline passes every definition at its rate, each probe run to its end.
  const at = summaries.find((s) => s.qps === capacity.capacityQps && s.valid && s.earlyStop === null && s.slo.results.every((r) => r.passed));
  assert.ok(at, `no probe at the headline capacity ${capacity.capacityQps} passes both definitions`);
  const combinedFail = capacity.bracket.failQps;
  if (combinedFail !== null) assert.ok(capacity.probes.some((p) => p.qps === combinedFail && !p.passed));
});

test('probes span the recipe\'s 3 s until the first fail, then a tenth of the 50-s load budget: 5 s of arrivals after the knee warm-up', () => {
  const firstFail = summaries.findIndex((s) => s.valid && !s.passed);
  assert.ok(firstFail >= 0 && firstFail < summaries.length - 1, 'the search had probes after its first fail');
  summaries.forEach((s, i) => {
    const measured = s.planned - (s.kneeWarmup?.requests ?? 0);
    assert.is(measured, Math.max(64, Math.ceil(s.qps * (i <= firstFail ? 3 : 5))), `probe ${s.index} at ${s.qps} QPS`);
  });
});

test("an early stop fires only for the definitions the probe's rate can still teach, and names one of them", () => {
  let stopped = 0;
  for (const s of summaries) {
    assert.ok(Array.isArray(s.earlyStopFor), `probe ${s.index}: earlyStopFor`);
    if (s.earlyStop === null) continue;
    stopped++;
    const names = capacity.perSlo.filter((d) => s.earlyStop!.includes(`SLO "${d.source}"`)).map((d) => d.name);
    assert.is(names.length, 1, `probe ${s.index}: ${s.earlyStop}`);
    assert.ok(s.earlyStopFor!.includes(names[0]), `probe ${s.index} stopped by ${names[0]}, not in ${s.earlyStopFor}`);
  }
  // The fluidity SLO fails well below the TTFT one: probes between them run for TTFT alone.
  assert.ok(summaries.some((s) => s.earlyStopFor!.length === 1 && s.earlyStopFor![0] === 'ttft'), `early-stop sets: ${JSON.stringify(summaries.map((s) => s.earlyStopFor))}`);
  assert.ok(stopped > 0, 'some probe stopped early');
});

test("the report's measured per-SLO table and its CSV carry capacity.json's perSlo", () => {
  const md = readFileSync(join(runDir, 'report.md'), 'utf8');
  const at = md.indexOf('## Capacity per SLO definition, measured');
  assert.ok(at >= 0, 'the section is missing from report.md');
  for (const p of capacity.perSlo) assert.ok(md.slice(at).includes(`| ${p.name} | \`${p.source}\` | ${fmtNum(p.capacityQps)} |`), `row of ${p.name}: ${md.slice(at, at + 800)}`);
  const csv = readFileSync(join(runDir, 'report-capacity-per-slo-measured.csv'), 'utf8').trim().split('\n');
  assert.is(csv.length, 1 + capacity.perSlo.length);
  assert.ok(csv[2].startsWith(`ttft,${capacity.perSlo[1].source},${capacity.perSlo[1].capacityQps},`), csv[2]);
  assert.ok(readFileSync(join(runDir, 'report.html'), 'utf8').includes('Capacity per SLO definition'));
});

test('analyze --capacity --json on the run finds the same capacity per definition from the archive', async () => {
  const r = await fluidcap(['analyze', runDir, '--capacity', '--json'], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr.slice(-2000));
  const found = JSON.parse(r.stdout) as { summary: { capacity: { perSlo: { name: string; capacityQps: number; bracket: unknown }[] }; probes: { probe: string; statistics?: { burstQps?: number } }[] } };
  assert.equal(
    found.summary.capacity.perSlo.map((p) => [p.name, p.capacityQps, p.bracket]),
    capacity.perSlo.map((p) => [p.name, p.capacityQps, p.bracket]),
  );
  // Each probe is read where the run read it: the rate its bursts put it at comes from its summary.json.
  const run = capacity.probes as unknown as { dir: string; statistics?: { burstQps?: number } }[];
  assert.ok(run.some((p) => p.statistics?.burstQps), 'the run recorded no burst rate');
  for (const p of run) assert.is(found.summary.probes.find((f) => p.dir.endsWith(f.probe))?.statistics?.burstQps, p.statistics?.burstQps, p.dir);
});

test.run();
