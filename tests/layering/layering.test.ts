// Imports flow one way (STYLE habit 11). One table says which folders of harness/ each folder may
// import; the test walks every source file and checks: each import is allowed by the table, the
// folders form no cycle, pure modules reach no I/O at run time (directly or through what they
// import), and only harness/runDir names the files of a run directory.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const HARNESS = join(ROOT, 'harness');

/** Folders each folder may import from (type-only imports included: they bind the layers too). */
const ALLOWED: Record<string, string[]> = {
  util: [],
  timeline: ['util'],
  catalog: ['util'],
  metrics: ['timeline', 'util'],
  load: ['metrics', 'timeline', 'util'],
  sim: ['catalog', 'util'],
  provision: ['util'],
  slurm: ['provision', 'runDir', 'util'],
  recipe: ['catalog', 'load', 'metrics', 'provision', 'sim', 'util'],
  // '..' is bin/sourcesHash.js: an agent's version is the one hash of fluidcap's sources (as dist/'s).
  agent: ['..', 'load', 'metrics', 'provision', 'timeline', 'util'],
  runDir: ['load', 'metrics', 'provision', 'recipe', 'timeline', 'util'],
  analyze: ['capacity', 'metrics', 'runDir', 'timeline', 'util'],
  report: ['catalog', 'metrics', 'runDir', 'util'],
  capacity: ['agent', 'catalog', 'load', 'metrics', 'provision', 'recipe', 'report', 'runDir', 'slurm', 'timeline', 'util'],
  sweep: ['agent', 'capacity', 'catalog', 'load', 'metrics', 'provision', 'recipe', 'report', 'runDir', 'slurm', 'util'],
  gate: ['report', 'runDir', 'util'],
  twin: ['agent', 'capacity', 'catalog', 'load', 'metrics', 'provision', 'recipe', 'report', 'runDir', 'sim', 'sweep', 'timeline', 'util'],
  figures: ['agent', 'capacity', 'catalog', 'load', 'metrics', 'provision', 'recipe', 'report', 'runDir', 'sweep', 'timeline', 'twin', 'util'],
  cli: ['agent', 'analyze', 'capacity', 'catalog', 'figures', 'gate', 'load', 'metrics', 'provision', 'recipe', 'report', 'runDir', 'sim', 'slurm', 'sweep', 'timeline', 'twin', 'util'],
};

/** Modules that compute without side effects: at run time they may not reach I/O, through any import. */
const PURE = [
  'metrics/*',
  'twin/calibrate.ts',
  'capacity/fit.ts', 'capacity/search.ts', 'capacity/perSloSearch.ts', 'capacity/earlyStop.ts', 'capacity/decision.ts', 'capacity/sloDecision.ts', 'capacity/profilePlan.ts', 'capacity/cost.ts', 'capacity/runPlan.ts', 'capacity/interval.ts',
  'report/buildReport.ts', 'report/markdown.ts', 'report/html.ts', 'report/escape.ts', 'report/charts/spec.ts', 'report/charts/style.ts', 'report/format.ts', 'report/doc.ts', 'report/compareRuns.ts', 'report/runData.ts',
  'report/loadSections.ts', 'report/probeDetail.ts', 'report/csv.ts',
  'analyze/deadlines.ts', 'analyze/table.ts', 'analyze/requestJson.ts', 'analyze/capacity.ts',
  'sim/costModel.ts', 'sim/scheduler.ts', 'sim/kvCache.ts', 'sim/request.ts', 'sim/engine.ts', 'sim/faults.ts', 'sim/text.ts',
  'sim/openaiRequest.ts', 'sim/promMetrics.ts', 'sim/vllmMetrics.ts', 'catalog/models.ts', 'catalog/gpuProfile.ts',
  'load/dialect.ts', 'sim/strictOpenai.ts', 'agent/partition.ts', 'agent/protocol.ts', 'agent/version.ts',
  'runDir/layout.ts', 'runDir/schema.ts', 'runDir/configKey.ts',
  'sweep/expand.ts', 'sweep/placement.ts', 'sweep/plan.ts', 'sweep/sweepReport.ts', 'capacity/warmStart.ts',
  'sim/virtualClock.ts', 'twin/virtualProbe.ts', 'twin/virtualProfile.ts', 'twin/judge.ts', 'twin/twinSearch.ts', 'twin/twinSweepRank.ts', 'twin/twinSweepPage.ts',
  'gate/decide.ts', 'gate/evidence.ts', 'gate/outputs.ts', 'gate/history.ts',
  'figures/paperNumbers.ts', 'figures/claimsTable.ts', 'figures/endpointsFile.ts', 'figures/metronFacts.ts', 'figures/output.ts', 'figures/metronFig5d.ts', 'figures/metronFig3.ts', 'figures/metronFig6.ts', 'figures/vidurFigs.ts', 'figures/deepspeedThroughput.ts',
];
const IO = /^(node:)?(fs|fs\/promises|net|http|https|http2|child_process|worker_threads|dgram|tls|readline)$|^(ssh2|node-ssh|dockerode|execa|undici|zx)(\/|$)/;

/** The names of a run directory's files: only harness/runDir may spell them. */
const RUN_DIR_NAMES = [
  'manifest.json', 'events.jsonl', 'capacity.json', 'report.md', 'report.html', 'prefill.jsonl', 'fit.json',
  'summary.json', 'plan.json', 'gpu.jsonl', '-qps-', 'timelines.jsonl', 'server-metrics.jsonl', 'server.log',
  'twin-calibration.json',
];
// Modules that write or read one file inside a directory they are handed keep that file's name.
const NAME_EXEMPT: Record<string, string[]> = {
  'load/runProbe.ts': ['timelines.jsonl', 'server-metrics.jsonl'],
  'timeline/reader.ts': ['timelines.jsonl'],
  'provision/launcher.ts': ['server.log'],
  'provision/engineSession.ts': ['server.log'],
  'provision/endpointEngine.ts': ['server.log'],
};

interface Import {
  from: string;
  spec: string;
  to: string | null;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sourceFiles(p) : /\.(ts|mjs)$/.test(n) ? [p] : [];
  });
}

const IMPORT_RE = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

function importsOf(file: string): Import[] {
  const out: Import[] = [];
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
    const spec = m[3] ?? m[4];
    const to = spec.startsWith('.') ? resolve(dirname(file), spec) : null;
    out.push({ from: file, spec, to, typeOnly: Boolean(m[2]) });
  }
  return out;
}

const files = sourceFiles(HARNESS);
const rel = (p: string) => relative(HARNESS, p);
const folderOf = (p: string) => rel(p).split('/')[0];
const all = files.flatMap(importsOf);

test('every folder is in the table, and every import between folders is one it allows', () => {
  const folders = new Set(files.map(folderOf));
  assert.equal([...folders].sort(), Object.keys(ALLOWED).sort(), 'a folder of harness/ is missing from ALLOWED (or the table names one that is gone)');
  const bad = all
    .filter((i) => i.to !== null && folderOf(i.to) !== folderOf(i.from))
    .filter((i) => !ALLOWED[folderOf(i.from)].includes(folderOf(i.to!)))
    .map((i) => `${rel(i.from)} imports ${rel(i.to!)}`);
  assert.equal(bad, []);
  assert.ok(all.filter((i) => i.to !== null).length > 200, 'the walk found too few imports to be checking anything');
});

test('the folders form no cycle (the table itself is acyclic, and so is what the code does)', () => {
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]) => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') return void cycles.push([...path, f].join(' → '));
    state.set(f, 'open');
    // '..' (bin/, outside harness/) imports nothing of harness/.
    for (const g of ALLOWED[f] ?? []) visit(g, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of Object.keys(ALLOWED)) visit(f, []);
  assert.equal(cycles, []);
});

test('pure modules reach no I/O at run time, directly or through their imports', () => {
  const pure = files.filter((f) => PURE.some((p) => (p.endsWith('/*') ? rel(f).startsWith(p.slice(0, -1)) : rel(f) === p)));
  assert.ok(pure.length >= PURE.length, `only ${pure.length} pure files found`);
  const byFile = new Map<string, Import[]>();
  for (const i of all) byFile.set(i.from, [...(byFile.get(i.from) ?? []), i]);
  const problems: string[] = [];
  for (const start of pure) {
    const seen = new Set<string>();
    const stack = [{ file: start, via: [rel(start)] }];
    while (stack.length) {
      const { file, via } = stack.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const i of byFile.get(file) ?? []) {
        if (i.typeOnly) continue; // erased at run time
        if (IO.test(i.spec)) problems.push(`${via.join(' → ')} imports ${i.spec}`);
        if (i.to) stack.push({ file: i.to, via: [...via, rel(i.to)] });
      }
    }
  }
  assert.equal([...new Set(problems)], []);
});

test('the check can fail: the I/O side does import I/O', () => {
  const io = ['report/loadRun.ts', 'runDir/jsonFiles.ts', 'capacity/runCapacity.ts'];
  for (const f of io) assert.ok(importsOf(join(HARNESS, f)).some((i) => IO.test(i.spec)), `${f} imports no I/O module`);
});

test('`fluidcap report` and `compare` load neither the probe runner nor the capacity pipeline', () => {
  const byFile = new Map<string, Import[]>();
  for (const i of all) byFile.set(i.from, [...(byFile.get(i.from) ?? []), i]);
  const reached = new Set<string>();
  const stack = ['cli/commands/report.ts', 'cli/commands/compare.ts'].map((f) => join(HARNESS, f));
  while (stack.length) {
    const f = stack.pop()!;
    if (reached.has(f)) continue;
    reached.add(f);
    for (const i of byFile.get(f) ?? []) if (!i.typeOnly && i.to) stack.push(i.to);
  }
  const loaded = [...reached].map(rel);
  assert.ok(loaded.includes('report/loadRun.ts') && loaded.includes('runDir/read.ts'), loaded.join(', '));
  // capacity/interval.ts is the interval's arithmetic (pure, no pipeline): compare pools earlier nights' probes with it.
  const maths = new Set(['capacity/interval.ts']);
  assert.equal(loaded.filter((f) => !maths.has(f) && (f.startsWith('capacity/') || f.startsWith('load/') || f.startsWith('provision/'))), []);
});

// String literals (quotes, template text, regular expressions) with comments removed.
function literals(src: string): string[] {
  const code = src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  return code.match(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`|\/(?:[^/\\\n]|\\.)+\/[gimsuy]*/g) ?? [];
}

test('only harness/runDir names the files of a run directory', () => {
  const named: string[] = [];
  for (const f of files) {
    if (folderOf(f) === 'runDir') continue;
    const lits = literals(readFileSync(f, 'utf8'));
    for (const name of RUN_DIR_NAMES) {
      if (NAME_EXEMPT[rel(f)]?.includes(name)) continue;
      if (lits.some((l) => l.includes(name) || l.includes(name.replace('.', '\\.')))) named.push(`${rel(f)}: ${name}`);
    }
  }
  assert.equal(named, []);
  const layout = literals(readFileSync(join(HARNESS, 'runDir', 'layout.ts'), 'utf8'));
  for (const name of RUN_DIR_NAMES) assert.ok(layout.some((l) => l.includes(name)), `runDir/layout.ts does not name ${name}`);
});

test.run();
