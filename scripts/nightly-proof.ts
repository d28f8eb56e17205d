// nice -n 10 npx tsx scripts/nightly-proof.ts [--out .tmp/nightly-proof] [--nights 5] [--phase all|runs|judge]
//   [--max-drop 0.05] [--confirm-budget 180]
// Can the nightly gate pass a real drop? On the simulated engine with the README's own recipe
// (recipes/quickstart.yaml, unmodified), one first night and `--nights` unchanged nights; and
// `--nights` nights each with the candidate's engine 10% and 30% slower (the sim's timeScale 1.1
// and 1.3, in a copy of the recipe this script writes, name and SLO kept). Nights run in turns
// (unchanged, 10%, 30%), so a shorter proof is still balanced. Each is a whole `fluidcap run`, as
// scripts/nightly.mjs runs a recipe. Then each night is judged as the nightly job judges it:
// `fluidcap compare <night> --index <the unchanged nights' index> --confirm-budget <s>` (earlier
// nights only, confirming probes on the candidate when the answer is open), and the script prints
// one row per night and the counts: regressions among unchanged nights (goal 0), 30% nights caught
// (exit 4, goal all), 10% nights caught or undecided (exit 4 or 6, goal all; exit 0 never).
// Finished runs under --out are reused, so `--phase runs` can start early and `--phase judge` later;
// a night's confirming probes are kept in its run directory, so judging it again reuses them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { findRunDirs } from '../harness/runDir/resultsIndex.ts';
import { readManifest } from '../harness/runDir/read.ts';
import { runPaths } from '../harness/runDir/layout.ts';
import { readConfirmations } from '../harness/gate/confirm.ts';
import { refusalOf } from '../harness/gate/decide.ts';
import { readEvidence } from '../harness/gate/load.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: '.tmp/nightly-proof' },
    nights: { type: 'string', default: '5' },
    phase: { type: 'string', default: 'all' },
    'max-drop': { type: 'string', default: '0.05' },
    'confirm-budget': { type: 'string', default: '180' },
  },
});
const out = resolve(values.out);
const nights = Number(values.nights);
if (!(Number.isInteger(nights) && nights >= 1)) throw new Error(`--nights must be a whole number >= 1, got ${values.nights}`);
if (!['all', 'runs', 'judge'].includes(values.phase)) throw new Error(`--phase must be all, runs or judge, got ${values.phase}`);
const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'bin', 'fluidcap.js');
const QUICKSTART = join(ROOT, 'recipes', 'quickstart.yaml');

// The candidate's slower engine: the README's recipe with only the sim's time scale changed.
const text = readFileSync(QUICKSTART, 'utf8');
if (!/timeScale: 1 \}/.test(text)) throw new Error(`${QUICKSTART}: expected "timeScale: 1 }" to scale`);
const recipesDir = join(out, 'recipes');
mkdirSync(recipesDir, { recursive: true });
const scaled = (f: number) => {
  const file = join(recipesDir, `quickstart-x${f}.yaml`);
  writeFileSync(file, text.replace(/timeScale: 1 \}/, `timeScale: ${f} }`));
  return file;
};
for (const k of ['unchanged', 'slow10', 'slow30']) mkdirSync(join(out, k), { recursive: true });
const kinds = [
  { key: 'unchanged', label: 'unchanged', recipe: QUICKSTART, dir: join(out, 'unchanged'), want: (n: number) => n + 1 },
  { key: 'slow10', label: '10% slower', recipe: scaled(1.1), dir: join(out, 'slow10'), want: (n: number) => n },
  { key: 'slow30', label: '30% slower', recipe: scaled(1.3), dir: join(out, 'slow30'), want: (n: number) => n },
] as const;

const outcomeOf = (d: string) => (JSON.parse(readFileSync(runPaths(d).capacity, 'utf8')) as { outcome: string }).outcome;
/** Whether the gate takes the run as a measurement (a search that converged, or one whose load
 *  budget ran out with its interval stated, as the README's recipe does), by the gate's own rule. */
const measured = (d: string) => refusalOf(readEvidence(d)) === null;
/** Completed runs directly under `dir`, oldest first. */
const completed = (dir: string) =>
  findRunDirs(dir)
    .filter((d) => readManifest(runPaths(d).manifest)?.status === 'completed')
    .sort((a, b) => (readManifest(runPaths(a).manifest)?.startedAt ?? '').localeCompare(readManifest(runPaths(b).manifest)?.startedAt ?? ''));
/**
 * The nights of `dir`: completed runs the gate takes as measurements. A run the host spoiled (its
 * client could not keep time, so the search stopped on invalid probes) is a night the gate
 * refuses (exit 5); the proof counts it and measures another night in its place.
 */
const finished = (dir: string) => completed(dir).filter(measured);

const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(0);
const tAll = performance.now();
let retried = 0;
let refusedNights = 0;
const seenSpoiled = new Set<string>();
const wall: Record<string, number[]> = { unchanged: [], slow10: [], slow30: [] };

/** One more finished run of `kind`: `fluidcap run` (which indexes it under its --out folder). */
function runOnce(kind: (typeof kinds)[number]): void {
  mkdirSync(kind.dir, { recursive: true });
  const t0 = performance.now();
  const before = finished(kind.dir).length;
  // A busy shared host can spoil the prefill profile (the run refuses it, exit 2): such a night is
  // tried again after a pause, up to thirty times (a saturated shared host can refuse many in a row), and counted.
  let runs: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const r = spawnSync(process.execPath, [CLI, 'run', kind.recipe, '--out', kind.dir], { encoding: 'utf8' });
    runs = finished(kind.dir);
    if (runs.length > before) break;
    const last = completed(kind.dir).pop();
    const spoiled = last && !runs.includes(last) && !seenSpoiled.has(last) ? (seenSpoiled.add(last), `its search ended ${outcomeOf(last)}`) : null;
    process.stderr.write(`${kind.label}: fluidcap run exited ${r.status} without a night the gate takes (attempt ${attempt}): ${spoiled ?? (r.stderr.trim().split('\n').pop() ?? '').slice(0, 300)}\n`);
    if (spoiled) refusedNights++;
    else retried++;
    if (attempt === 30) throw new Error(`${kind.label}: fluidcap run ${kind.recipe} failed thirty times`);
    spawnSync('sleep', ['30']);
  }
  wall[kind.key].push((performance.now() - t0) / 1000);
  const cap = JSON.parse(readFileSync(runPaths(runs[runs.length - 1]).capacity, 'utf8')) as { capacityQps: number; bracket: { passQps: number | null; failQps: number | null }; outcome: string; interval?: { estimateQps: number | null; loQps: number | null; hiQps: number | null } };
  const iv = cap.interval ? ` interval ${cap.interval.estimateQps?.toFixed(1)} [${cap.interval.loQps?.toFixed(1) ?? 'open'}, ${cap.interval.hiQps?.toFixed(1) ?? 'open'}]` : '';
  process.stderr.write(`${kind.label} ${runs.length}/${kind.want(nights)}: ${cap.capacityQps} QPS [${cap.bracket.passQps}, ${cap.bracket.failQps})${iv} ${cap.outcome} in ${secs(t0)} s (load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})\n`);
}

for (const k of kinds) for (const d of completed(k.dir)) if (!measured(d)) seenSpoiled.add(d);
if (values.phase !== 'judge') {
  // In turns, so that a proof stopped early still has nights of every kind.
  for (let round = 0; round <= nights; round++) {
    for (const kind of kinds) if (finished(kind.dir).length < Math.min(kind.want(nights), round + (kind.key === 'unchanged' ? 1 : 0))) runOnce(kind);
  }
  process.stderr.write(`runs phase: ${((performance.now() - tAll) / 60000).toFixed(1)} min, ${retried} run(s) tried again after a refused profile, ${refusedNights} night(s) the gate refuses (invalid probes) measured again\n`);
}
if (values.phase === 'runs') process.exit(0);

// ---- judging: each night as the nightly job judges it ------------------------------------------
const unchangedIndex = join(kinds[0].dir, 'index.jsonl');
// As the nightly job does before judging: the index rebuilt from the run directories.
if (values.phase !== 'runs') spawnSync(process.execPath, [CLI, 'compare', '--reindex', kinds[0].dir], { encoding: 'utf8' });
interface Row {
  kind: string;
  night: number;
  capacity: string;
  reference: string;
  exit: number | null;
  verdict: string;
  confirmations: string;
  confirmLoadS: number;
  runWallS: number;
  wallS: number;
  reason: string;
}
const rows: Row[] = [];
const tJudge = performance.now();
// A night judged again reuses its confirming probes: its compare wall time is the longest one seen.
const wallsFile = join(out, 'compare-walls.json');
const walls: Record<string, number> = existsSync(wallsFile) ? JSON.parse(readFileSync(wallsFile, 'utf8')) : {};
for (const kind of kinds) {
  // The first unchanged night is every other night's first history: it is not judged itself.
  const dirs = finished(kind.dir).slice(kind.key === 'unchanged' ? 1 : 0, kind.want(nights));
  dirs.forEach((dir, i) => {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [CLI, 'compare', dir, '--index', unchangedIndex, '--max-drop', values['max-drop'], '--confirm-budget', values['confirm-budget'], '--json'], { encoding: 'utf8' });
    const wallS = Math.max((performance.now() - t0) / 1000, walls[dir] ?? 0);
    walls[dir] = wallS;
    writeFileSync(wallsFile, JSON.stringify(walls, null, 1));
    let verdict = '?';
    let capacity = '?';
    let reference = '—';
    let confirmations = '';
    let reason = r.stderr.trim().split('\n').pop() ?? '';
    try {
      const d = JSON.parse(r.stdout).gate.decisions[0];
      verdict = d.verdict === 'inconclusive' ? 'undecided' : d.verdict;
      const own = JSON.parse(readFileSync(runPaths(dir).capacity, 'utf8')) as { interval?: { estimateQps: number | null; loQps: number | null; hiQps: number | null } };
      const n = (x: number | null | undefined) => (x === null || x === undefined ? '∞' : x.toFixed(1));
      // The night's own interval, then the candidate's after confirming probes when they moved it.
      capacity = `${n(own.interval?.estimateQps)} [${n(own.interval?.loQps)}, ${n(own.interval?.hiQps)}]`;
      const after = `[${n(d.candidate.lowQps)}, ${n(d.candidate.highQps)}]`;
      if (after !== `[${n(own.interval?.loQps)}, ${n(own.interval?.hiQps)}]`) capacity += ` → ${after}`;
      if (d.reference) reference = `${n(d.reference.capacityQps)} [${n(d.reference.lowQps)}, ${n(d.reference.highQps)}] ${d.reference.basis} of ${d.reference.nights}`;
      confirmations = (d.candidate.confirmations ?? []).map((c: { qps: number; decision: string; confidence: number | null }) => `${c.qps} ${c.decision}${c.confidence !== null ? ` ${(c.confidence * 100).toFixed(0)}%` : ''}`).join(', ');
      reason = d.reason;
    } catch {
      // compare printed no JSON (exit 2): its last stderr line is the reason
    }
    const m = readManifest(runPaths(dir).manifest) as { startedAt?: string; endedAt?: string } | null;
    const runWallS = m?.startedAt && m.endedAt ? (Date.parse(m.endedAt) - Date.parse(m.startedAt)) / 1000 : NaN;
    rows.push({ kind: kind.label, night: i + 1, capacity, reference, exit: r.status, verdict, confirmations, confirmLoadS: readConfirmations(dir).loadS, runWallS, wallS, reason });
    process.stderr.write(`${kind.label} night ${i + 1}: exit ${r.status} ${verdict} in ${wallS.toFixed(0)} s\n`);
  });
}

console.log('| night | arm | capacity QPS [95% interval] (→ after confirming) | reference QPS [interval] | verdict | exit | confirming probes | confirm load-s | run wall s | compare wall s |');
console.log('|--:|---|---|---|---|--:|---|--:|--:|--:|');
for (const r of rows) console.log(`| ${r.night} | ${r.kind} | ${r.capacity} | ${r.reference} | ${r.verdict} | ${r.exit} | ${r.confirmations || '—'} | ${r.confirmLoadS.toFixed(0)} | ${r.runWallS.toFixed(0)} | ${r.wallS.toFixed(0)} |`);
console.log('');
for (const r of rows) console.log(`- ${r.kind} ${r.night}: ${r.reason}`);
const of = (label: string) => rows.filter((r) => r.kind === label);
const count = (label: string, ok: (r: Row) => boolean) => `${of(label).filter(ok).length}/${of(label).length}`;
console.log('');
console.log(`unchanged nights judged a regression (exit 4): ${count('unchanged', (r) => r.exit === 4)} (goal 0); exit codes ${of('unchanged').map((r) => r.exit).join(' ')}`);
console.log(`30% slower nights caught (exit 4): ${count('30% slower', (r) => r.exit === 4)} (goal all); exit codes ${of('30% slower').map((r) => r.exit).join(' ')}`);
console.log(`10% slower nights caught or undecided (exit 4 or 6): ${count('10% slower', (r) => r.exit === 4 || r.exit === 6)} (goal all; passed with exit 0: ${count('10% slower', (r) => r.exit === 0)})`);
console.log(`judging wall time: ${((performance.now() - tJudge) / 60000).toFixed(1)} min; this invocation: ${((performance.now() - tAll) / 60000).toFixed(1)} min; mean run wall time this invocation: ${Object.entries(wall).map(([k, v]) => `${k} ${v.length ? (v.reduce((a, b) => a + b, 0) / v.length).toFixed(0) : '—'} s`).join(', ')}`);
console.log(`nights the host spoiled (the gate refuses them: a nightly job's exit 5), measured again: ${kinds.map((k) => `${k.label} ${completed(k.dir).filter((d) => !measured(d)).length}`).join(', ')}`);
const ok = of('unchanged').every((r) => r.exit !== 4) && of('30% slower').every((r) => r.exit === 4) && of('10% slower').every((r) => r.exit === 4 || r.exit === 6);
process.exitCode = ok ? 0 : 1;
