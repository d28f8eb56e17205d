#!/usr/bin/env zx
// The nightly capacity job: run the night's matrix (a sweep file through `fluidcap sweep`, and/or
// recipes through `fluidcap run`) over an inventory into a night folder under the results folder,
// rebuild the results index, and judge every configuration against its earlier nights with
// `fluidcap compare`. An undecided answer gets confirming probes of the candidate at the rates the
// gate names (confirmBudget load-seconds each). A configuration still judged a regression or
// undecided runs once more and is judged again with both runs (a regression only when both show
// it: one run on a busy host can fail a probe it would pass on a quiet one). Writes the JUnit XML,
// the Prometheus textfile and the markdown summary, refreshes the history chart, and exits with
// compare's code: 0 every configuration passed (or is new), 4 a regression, 5 a run refused
// (search did not converge, probes invalid, run failed, baseline under another SLO), 6 an answer
// still undecided, 2 bad input.
//
// Usage: npx zx scripts/nightly.mjs --config nightly.yaml [--dry-run]   (--help: this text)
//
// nightly.yaml (paths relative to it):
//   results: results/nightly          # results folder: night folders, index.jsonl, history.{md,svg}
//   hosts: inventory.yaml             # optional: the inventory every run and sweep gets
//   sweep: recipes/sweeps/nightly.yaml  # optional: a sweep file (needs the sweep verb)
//   recipes: [recipes/a.yaml, recipes/b.yaml]  # optional: recipes run one after another
//   maxDrop: 0.05                     # optional: largest allowed capacity drop (default 5%)
//   confirm: true                     # optional: rerun a regressed or undecided configuration before failing (default true)
//   confirmBudget: 180                # optional: load-seconds of confirming probes per undecided configuration (default 180; 0: none)
//   outputs: results/nightly/gate     # optional: where gate.xml, gate.prom and gate.md go (default <results>/gate)
import { $, argv, fs, path, YAML } from 'zx';

$.verbose = false;
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const cli = path.join(repo, 'bin', 'fluidcap.js');
const say = (line) => process.stderr.write(`nightly: ${line}\n`);
const die = (message, code = 2) => {
  process.stderr.write(`nightly: ${message}\n`);
  process.exit(code);
};

if (argv.help || argv.h) {
  // The usage is this file's header comment, so the two never disagree.
  const own = await fs.readFile(new URL(import.meta.url), 'utf8');
  const header = own.split('\n').slice(1).filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, ''));
  process.stdout.write(header.join('\n') + '\n');
  process.exit(0);
}

// ---- the config file: every problem named with the file, the field and the value ----------------
if (typeof argv.config !== 'string') die('give the nightly config with --config <nightly.yaml> (--help for the format)');
const configFile = path.resolve(argv.config);
if (!(await fs.pathExists(configFile))) die(`--config: ${configFile} does not exist`);
let raw;
try {
  raw = YAML.parse(await fs.readFile(configFile, 'utf8'));
} catch (err) {
  die(`${configFile}: not valid YAML (${err.message})`);
}
if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) die(`${configFile}: expected a mapping with results, recipes or sweep, got ${JSON.stringify(raw)}`);
const problems = [];
const known = new Set(['results', 'hosts', 'sweep', 'recipes', 'maxDrop', 'confirm', 'confirmBudget', 'outputs']);
for (const key of Object.keys(raw)) if (!known.has(key)) problems.push(`${key}: unknown field (known: ${[...known].join(', ')})`);
const base = path.dirname(configFile);
const pathField = async (key, { required = false, mustExist = true } = {}) => {
  const v = raw[key];
  if (v === undefined) {
    if (required) problems.push(`${key}: required`);
    return null;
  }
  if (typeof v !== 'string' || v === '') {
    problems.push(`${key}: must be a path, got ${JSON.stringify(v)}`);
    return null;
  }
  const p = path.resolve(base, v);
  if (mustExist && !(await fs.pathExists(p))) problems.push(`${key}: ${JSON.stringify(v)} does not exist (${p})`);
  return p;
};
const results = await pathField('results', { required: true, mustExist: false });
const hosts = await pathField('hosts');
const sweep = await pathField('sweep');
const outputs = (await pathField('outputs', { mustExist: false })) ?? (results ? path.join(results, 'gate') : null);
const recipes = [];
if (raw.recipes !== undefined) {
  if (!Array.isArray(raw.recipes)) problems.push(`recipes: must be a list of recipe paths, got ${JSON.stringify(raw.recipes)}`);
  else
    for (const [i, r] of raw.recipes.entries()) {
      if (typeof r !== 'string' || r === '') problems.push(`recipes[${i}]: must be a path, got ${JSON.stringify(r)}`);
      else if (!(await fs.pathExists(path.resolve(base, r)))) problems.push(`recipes[${i}]: ${JSON.stringify(r)} does not exist`);
      else recipes.push(path.resolve(base, r));
    }
}
if (!sweep && recipes.length === 0) problems.push('recipes or sweep: name at least one recipe or a sweep file');
const maxDrop = raw.maxDrop ?? 0.05;
if (typeof maxDrop !== 'number' || !(maxDrop >= 0 && maxDrop < 1)) problems.push(`maxDrop: must be a fraction >= 0 and < 1 (0.05 = 5%), got ${JSON.stringify(raw.maxDrop)}`);
const confirm = raw.confirm ?? true;
if (typeof confirm !== 'boolean') problems.push(`confirm: must be true or false, got ${JSON.stringify(raw.confirm)}`);
// A pass near a flat knee needs thousands of requests (~620 × the clustering time τ at 95% of the
// capacity; τ ≈ 5 on the quickstart): two thirds of 180 s at ~40 QPS covers that.
const confirmBudget = raw.confirmBudget ?? 180;
if (typeof confirmBudget !== 'number' || !(confirmBudget >= 0 && confirmBudget <= 86400)) problems.push(`confirmBudget: must be load-seconds from 0 to 86400, got ${JSON.stringify(raw.confirmBudget)}`);
if (problems.length) die(problems.map((p) => `${configFile}: ${p}`).join('\n'));

// ---- the night --------------------------------------------------------------------------------
const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
const nightDir = path.join(results, `night-${stamp}`);
const hostArgs = hosts ? ['--hosts', hosts] : [];
const fluidcap = (args) => $({ nothrow: true, stdio: ['ignore', 'pipe', 'inherit'] })`${process.execPath} ${cli} ${args}`;

if (argv['dry-run']) {
  say(`would run into ${nightDir}: ${[sweep ? `sweep ${sweep}` : null, ...recipes.map((r) => `run ${r}`)].filter(Boolean).join('; ')}`);
  say(`then: fluidcap compare <the night's runs> --index ${path.join(results, 'index.jsonl')} --max-drop ${maxDrop} --confirm-budget ${confirmBudget} --junit/--prom/--markdown in ${outputs}`);
  process.exit(0);
}
await fs.ensureDir(nightDir);

if (sweep) {
  const probe = await fluidcap(['sweep', '--help']);
  if (probe.exitCode !== 0) die(`${configFile}: sweep: this fluidcap has no sweep verb; list the recipes under recipes instead`);
  say(`sweep ${sweep} → ${nightDir}`);
  const r = await fluidcap(['sweep', sweep, '--out', nightDir, ...hostArgs]);
  // A failed run inside the sweep is judged (refused) below, not fatal here.
  if (r.exitCode !== 0) say(`the sweep exited ${r.exitCode}; its finished runs are judged`);
}
for (const recipe of recipes) {
  say(`run ${recipe} → ${nightDir}`);
  const r = await fluidcap(['run', recipe, '--out', nightDir, ...hostArgs]);
  // The run's result lines: the estimate with its interval ("capacity 41.3 QPS, 95% interval
  // 35.2–41.7, …"; "capacity: …" in runs without one), the bracket and where the results are.
  for (const line of r.stdout.split('\n').filter((l) => /^(capacity[ :]|highest passing probe:|bracket:|results:)/.test(l))) say(`${path.basename(recipe)}: ${line}`);
  if (r.exitCode !== 0) say(`${path.basename(recipe)} exited ${r.exitCode}; judged below as refused when it left a run directory`);
}

/** Run directories (holding manifest.json) under `dir`, sweep runs included. */
async function runDirsUnder(dir) {
  const found = [];
  const walk = async (d, depth) => {
    if (await fs.pathExists(path.join(d, 'manifest.json'))) return void found.push(d);
    if (depth >= 4) return;
    for (const e of await fs.readdir(d, { withFileTypes: true })) if (e.isDirectory() && !e.name.startsWith('.')) await walk(path.join(d, e.name), depth + 1);
  };
  await walk(dir, 0);
  return found.sort();
}

const candidates = await runDirsUnder(nightDir);
if (candidates.length === 0) die(`no run directory was written under ${nightDir}: nothing to judge`, 5);

// The index is rebuilt from the results folder every night, so runs added by hand or by an
// interrupted night are never missing from the history.
const indexFile = path.join(results, 'index.jsonl');
const reindex = await fluidcap(['compare', '--reindex', results]);
if (reindex.exitCode !== 0) die(`fluidcap compare --reindex ${results} exited ${reindex.exitCode}`, reindex.exitCode ?? 1);

await fs.ensureDir(outputs);
const gateArgs = (runs) => ['compare', ...runs, '--index', indexFile, '--max-drop', String(maxDrop), '--confirm-budget', String(confirmBudget), ...hostArgs, '--junit', path.join(outputs, 'gate.xml'), '--prom', path.join(outputs, 'gate.prom'), '--markdown', path.join(outputs, 'gate.md')];
let judged = await fluidcap([...gateArgs(candidates), '--json']);
let exitCode = judged.exitCode;

if ((exitCode === 4 || exitCode === 6) && confirm) {
  const { gate } = JSON.parse(judged.stdout);
  const open = gate.decisions.filter((d) => d.verdict === 'regression' || d.verdict === 'inconclusive');
  const confirmDir = path.join(nightDir, 'confirm');
  for (const d of open) {
    // Each run keeps the recipe it ran (recipe.yaml), so the rerun is the same configuration.
    const recipe = path.join(d.candidate.runDir, 'recipe.yaml');
    say(`${d.config}: judged ${d.verdict === 'regression' ? 'a regression' : 'undecided'}; confirming with a rerun of ${recipe}`);
    const r = await fluidcap(['run', recipe, '--out', confirmDir, ...hostArgs]);
    if (r.exitCode !== 0) say(`the confirming run exited ${r.exitCode}`);
  }
  const confirmations = (await fs.pathExists(confirmDir)) ? await runDirsUnder(confirmDir) : [];
  judged = await fluidcap([...gateArgs([...candidates, ...confirmations]), '--json']);
  exitCode = judged.exitCode;
}

const history = await fluidcap(['compare', '--history', '--index', indexFile]);
if (history.exitCode !== 0) say(`the history chart was not refreshed (exit ${history.exitCode})`);
if ([0, 4, 5, 6].includes(judged.exitCode)) {
  const { gate } = JSON.parse(judged.stdout);
  const q = (x) => (x === null || x === undefined ? '∞' : `${+x.toPrecision(4)}`);
  for (const d of gate.decisions) {
    const c = d.candidate;
    const source = c.intervalSource === 'interval' ? '95% interval' : c.intervalSource === 'decided-bracket' ? 'decided bracket' : 'search bracket';
    const confirmed = c.confirmations?.length ? ` after ${c.confirmations.length} confirming probe(s)` : '';
    process.stdout.write(`capacity ${q(c.estimateQps)} QPS, ${source} ${q(c.lowQps)}–${q(c.highQps)}${confirmed}: ${c.runId} (${c.runDir})\n`);
    process.stdout.write(`${(d.verdict === 'inconclusive' ? 'undecided' : d.verdict).padEnd(12)} ${d.config}: ${d.reason}\n`);
  }
  for (const x of gate.rejectedIndexLines ?? []) process.stdout.write(`index line not used: ${x}\n`);
  const c = gate.counts;
  process.stdout.write(`\n${c.regression} regression, ${c.refused} refused, ${c.inconclusive} undecided, ${c.pass} pass, ${c.new} new\n`);
  process.stdout.write(`JUnit ${path.join(outputs, 'gate.xml')}, Prometheus ${path.join(outputs, 'gate.prom')}, summary ${path.join(outputs, 'gate.md')}, history ${path.join(results, 'history.md')}\n`);
}
process.exit(exitCode ?? 1);
