// nice -n 10 npx tsx scripts/nightly-proof.ts [--out .tmp/nightly-proof] [--nights 5] [--phase all|runs|judge]
//   [--max-drop 0.05] [--confirm-budget 120]
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
// Finished runs under --out are reused, so `--phase runs` can start early and `--phase judge` later.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { findRunDirs } from '../harness/runDir/resultsIndex.ts';
import { readManifest } from '../harness/runDir/read.ts';
import { runPaths } from '../harness/runDir/layout.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: '.tmp/nightly-proof' },
    nights: { type: 'string', default: '5' },
    phase: { type: 'string', default: 'all' },
    'max-drop': { type: 'string', default: '0.05' },
    'confirm-budget': { type: 'string', default: '120' },
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

/** Finished runs directly under `dir` (not confirmations), oldest first. */
const finished = (dir: string) =>
  findRunDirs(dir)
    .filter((d) => !d.includes('/confirm'))
    .filter((d) => readManifest(runPaths(d).manifest)?.status === 'completed')
    .sort((a, b) => (readManifest(runPaths(a).manifest)?.startedAt ?? '').localeCompare(readManifest(runPaths(b).manifest)?.startedAt ?? ''));

const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(0);
const tAll = performance.now();
let retried = 0;
const wall: Record<string, number[]> = { unchanged: [], slow10: [], slow30: [] };

/** One more finished run of `kind`: `fluidcap run` (which indexes it under its --out folder). */
function runOnce(kind: (typeof kinds)[number]): void {
  mkdirSync(kind.dir, { recursive: true });
  const t0 = performance.now();
  const before = finished(kind.dir).length;
  // A busy shared host can spoil the prefill profile (the run refuses it, exit 2): such a night is
  // tried again, up to three times, and counted.
  let runs: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const r = spawnSync(process.execPath, [CLI, 'run', kind.recipe, '--out', kind.dir], { encoding: 'utf8' });
    runs = finished(kind.dir);
    if (runs.length > before) break;
    process.stderr.write(`${kind.label}: fluidcap run exited ${r.status} without a finished run (attempt ${attempt}): ${(r.stderr.trim().split('\n').pop() ?? '').slice(0, 300)}\n`);
    retried++;
    if (attempt === 3) throw new Error(`${kind.label}: fluidcap run ${kind.recipe} failed three times`);
  }
  wall[kind.key].push((performance.now() - t0) / 1000);
  const cap = JSON.parse(readFileSync(runPaths(runs[runs.length - 1]).capacity, 'utf8')) as { capacityQps: number; bracket: { passQps: number | null; failQps: number | null }; outcome: string };
  process.stderr.write(`${kind.label} ${runs.length}/${kind.want(nights)}: ${cap.capacityQps} QPS [${cap.bracket.passQps}, ${cap.bracket.failQps}) ${cap.outcome} in ${secs(t0)} s\n`);
}

if (values.phase !== 'judge') {
  // In turns, so that a proof stopped early still has nights of every kind.
  for (let round = 0; round <= nights; round++) {
    for (const kind of kinds) if (finished(kind.dir).length < Math.min(kind.want(nights), round + (kind.key === 'unchanged' ? 1 : 0))) runOnce(kind);
  }
  process.stderr.write(`runs phase: ${((performance.now() - tAll) / 60000).toFixed(1)} min, ${retried} run(s) tried again after a refused profile\n`);
}
if (values.phase === 'runs') process.exit(0);
