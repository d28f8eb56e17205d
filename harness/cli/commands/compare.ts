// `fluidcap compare`: runs side by side, and the capacity gate a nightly job runs. Each candidate
// is judged against its baseline run (--baseline) or the earlier nights of its configuration in
// the results index (--index); the decision weighs both capacities' intervals and the measured
// noise (harness/gate/decide.ts). Offline unless --confirm-budget is given: then an undecided
// answer gets confirming probes of the candidate (its recipe pinned to the rates the decision
// names) until it is decided or the budget of load-seconds is spent. `--reindex <results>`
// rebuilds the index; `--history` draws capacity per configuration across nights.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verb } from '../command.ts';
import { UserError, describeValue } from '../../util/errors.ts';
import { readRunCore } from '../../report/loadRun.ts';
import { compareRuns, formatComparison, runRowOf, type RunRow } from '../../report/compareRuns.ts';
import { historyPaths, readIndexLines, rebuildIndex } from '../../runDir/resultsIndex.ts';
import { configWithoutSlo } from '../../runDir/configKey.ts';
import {
  DEFAULT_GATE,
  combineByConfig,
  decideConfig,
  gateResult,
  historyFor,
  poolableNights,
  referenceOfHistory,
  referenceOfRun,
  refusalOf,
  type ConfigDecision,
  type GateOptions,
  type PooledInterval,
  type ProbeCounts,
  type Reference,
  type RunEvidence,
} from '../../gate/decide.ts';
import { capacityInterval } from '../../capacity/interval.ts';
import { readCandidate, readEvidence, readIndexEvidence } from '../../gate/load.ts';
import { confirmAt, readConfirmations, type RunPinned } from '../../gate/confirm.ts';
import { withConfirmations } from '../../gate/evidence.ts';
import { gateJunit, gateLines, gateMarkdown, gatePrometheus } from '../../gate/outputs.ts';
import { historyMarkdown, historySvg } from '../../gate/history.ts';

// yargs gives a number, or the text when it is not one: both are checked here, naming the flag.
function numberFlag(flag: string, given: unknown, ok: (n: number) => boolean, what: string): number {
  const n = typeof given === 'string' && given.trim() !== '' ? Number(given) : given;
  if (typeof n !== 'number' || !Number.isFinite(n) || !ok(n)) throw new UserError(`--${flag} must be ${what}, got ${describeValue(given)}`);
  return n;
}

function stringsFlag(flag: string, given: unknown): string[] {
  if (given === undefined) return [];
  const list = Array.isArray(given) ? given : [given];
  for (const v of list) if (typeof v !== 'string' || v === '') throw new UserError(`--${flag} must name a path, got ${describeValue(v)}`);
  return list as string[];
}

function pathFlag(flag: string, given: unknown): string | null {
  const list = stringsFlag(flag, given);
  if (list.length > 1) throw new UserError(`--${flag} takes one path, got ${list.length}: ${list.join(', ')}`);
  return list[0] ?? null;
}

function writeOut(file: string, text: string): void {
  mkdirSync(dirname(resolve(file)), { recursive: true });
  writeFileSync(file, text);
}

export const compareCommand = verb({
  command: 'compare [runDirs..]',
  describe: 'compare finished runs; the capacity gate of a nightly job (regression exit 4, refused run exit 5, undecided exit 6)',
  exits: [
    [0, 'every configuration passed (or is new)'],
    [4, 'a configuration regressed'],
    [5, 'a run was refused (its search did not converge, its probes were invalid, it did not complete, or its baseline was measured under another SLO) and none regressed'],
    [6, 'an answer stayed undecided (the intervals overlap around the allowed drop) and none regressed or was refused'],
  ],
  builder: (y) =>
    y
      .positional('runDirs', { type: 'string', array: true, describe: 'candidate run directories (results/<runId>, or the runs of a sweep); two runs of one configuration regress only when both do' })
      .option('baseline', { type: 'string', array: true, describe: 'baseline run directory; one is compared with every candidate, several are matched to candidates by configuration' })
      .option('index', { type: 'string', describe: 'results index (results/index.jsonl): earlier nights of each configuration are the reference and their spread the noise' })
      .option('nights', { default: 7, describe: 'how many of the latest earlier nights of a configuration the index contributes' })
      .option('max-drop', { default: DEFAULT_GATE.maxDrop, describe: 'largest allowed capacity drop, as a fraction (0.05 = 5%)' })
      .option('min-confidence', { default: DEFAULT_GATE.minConfidence, describe: 'a regression needs the probe verdicts it rests on at least this confident (when probes carry confidences)' })
      .option('noise-sigmas', { default: DEFAULT_GATE.noiseSigmas, describe: 'a drop within this many robust standard deviations of earlier nights is noise' })
      .option('min-history', { default: DEFAULT_GATE.minHistory, describe: 'earlier nights needed before their spread counts as the noise' })
      .option('confirm-budget', { default: 0, describe: 'load-seconds of confirming probes per undecided candidate (its recipe pinned to the rates the gate names; 0: none, the answer stays undecided)' })
      .option('hosts', { type: 'string', describe: 'inventory YAML for the confirming probes (as the candidate run had)' })
      .option('markdown', { type: 'string', describe: 'write the gate summary (markdown) to this file' })
      .option('junit', { type: 'string', describe: 'write JUnit XML (one test case per configuration) to this file' })
      .option('prom', { type: 'string', describe: 'write a Prometheus textfile (capacity, QPS per $/hour, verdict per configuration) to this file' })
      .option('reindex', { type: 'string', describe: 'rebuild <folder>/index.jsonl from the finished runs under the results folder, then go on' })
      .option('history', { type: 'boolean', default: false, describe: 'write history.svg and history.md (capacity per configuration across nights) beside the index' })
      .option('json', { type: 'boolean', default: false, describe: 'print {"gate":{decisions,counts,exitCode},"table":{...}}' }),
  handler: async (argv, setExit) => {
    const opts: GateOptions = {
      maxDrop: numberFlag('max-drop', argv.maxDrop, (n) => n >= 0 && n < 1, 'a fraction >= 0 and < 1 (0.05 = 5%)'),
      minConfidence: numberFlag('min-confidence', argv.minConfidence, (n) => n >= 0 && n <= 1, 'a probability from 0 to 1'),
      noiseSigmas: numberFlag('noise-sigmas', argv.noiseSigmas, (n) => n >= 0, 'a number >= 0'),
      minHistory: numberFlag('min-history', argv.minHistory, (n) => Number.isInteger(n) && n >= 2, 'a whole number >= 2'),
    };
    const nights = numberFlag('nights', argv.nights, (n) => Number.isInteger(n) && n >= 1, 'a whole number >= 1');
    const confirmBudget = numberFlag('confirm-budget', argv.confirmBudget, (n) => n >= 0 && n <= 86_400, 'load-seconds from 0 to 86400');
    const hostsFile = pathFlag('hosts', argv.hosts);
    const baselines = stringsFlag('baseline', argv.baseline);
    const reindex = pathFlag('reindex', argv.reindex);
    const outputs = { markdown: pathFlag('markdown', argv.markdown), junit: pathFlag('junit', argv.junit), prom: pathFlag('prom', argv.prom) };
    let indexFile = pathFlag('index', argv.index);
    const seen = new Set<string>();
    const dirs = (argv.runDirs ?? []).map(String).filter((d) => (seen.has(resolve(d)) ? false : (seen.add(resolve(d)), true)));
    if (dirs.length === 0 && !reindex && !argv.history) throw new UserError('give the run directories to compare, --reindex <results folder>, or --history --index <index.jsonl>');
    if (dirs.length === 0 && (outputs.markdown || outputs.junit || outputs.prom)) throw new UserError('--markdown, --junit and --prom describe a comparison: give the run directories to compare');
    const say = (line: string) => process.stderr.write(line + '\n');

    if (reindex) {
      const { file, entries, skipped } = rebuildIndex(reindex);
      say(`indexed ${entries.length} finished run(s) → ${file}`);
      for (const s of skipped) say(`skipped: ${s}`);
      indexFile ??= file;
    }
    if (argv.history) {
      if (!indexFile) throw new UserError('--history needs --index <results/index.jsonl> (or --reindex <results folder>)');
      // A history drawn from no index would be empty files under a name the user mistyped.
      if (!existsSync(indexFile)) throw new UserError(`--index: ${indexFile} does not exist (give the results folder's index.jsonl, or --reindex <results folder> to build it)`);
      const { entries, rejected } = readIndexLines(indexFile);
      for (const r of rejected) say(`index line not used: ${indexFile}:${r.line}: ${r.reason}`);
      const files = historyPaths(dirname(resolve(indexFile)));
      writeOut(files.svg, await historySvg(entries));
      const md = historyMarkdown(entries, files.svgRel);
      writeOut(files.md, md);
      say(`history of ${entries.length} run(s) → ${files.md}, ${files.svg}`);
      if (dirs.length === 0 && !argv.json) process.stdout.write(md);
    }
    if (dirs.length === 0) return;

    // Every directory is read before anything is written, so one bad path is one clear error.
    const baselineRuns = baselines.map((b) => readEvidence(b));
    const baseDirs = new Set(baselineRuns.map((b) => b.runDir));
    const candidates = dirs.map((d) => readCandidate(d)).filter((c) => !baseDirs.has(c.runDir));
    // A candidate is never another candidate's history (a confirming rerun is judged beside the run it confirms).
    const candidateDirs = new Set(candidates.map((c) => c.runDir));
    const indexed = indexFile ? readIndexEvidence(indexFile) : { runs: [], rejected: [] };
    for (const r of indexed.rejected) say(`index line not used: ${r}`);
    const indexRuns = indexed.runs.filter((r) => !candidateDirs.has(r.runDir));

    const decide = (cand: RunEvidence): ConfigDecision => {
      const history = indexFile ? historyFor(cand, indexRuns, nights) : [];
      const pool = poolableNights(history);
      const fromHistory = referenceOfHistory(history, opts.minHistory, pool ? pooledInterval(pool.probes, pool.runs.length) : null);
      // Several baselines are matched by configuration; one that differs only by its SLO is matched too, and refused by the decision.
      const base = baselineRuns.length === 1 ? baselineRuns[0] : (baselineRuns.find((b) => b.config === cand.config) ?? baselineRuns.find((b) => configWithoutSlo(b.config) === configWithoutSlo(cand.config)) ?? null);
      let reference: Reference | null = fromHistory;
      if (base) reference = { ...referenceOfRun(base), noiseFrac: fromHistory?.noiseFrac ?? null };
      const d = decideConfig(cand, reference, opts, base ? refusalOf(base) : null);
      return d.verdict === 'new' ? { ...d, reason: d.reason + otherSloNote(cand, indexRuns) } : d;
    };
    const runPinned = confirmBudget > 0 ? pinnedRunner(hostsFile, say) : null;
    const decisions: ConfigDecision[] = [];
    for (const first of candidates) {
      // Confirming probes measured before (an earlier compare of this candidate) are evidence too.
      const before = first.status === 'completed' ? readConfirmations(first.runDir) : { probes: [], loadS: 0 };
      let cand = before.probes.length ? withConfirmations(first, before.probes, opts.minConfidence) : first;
      let d = decide(cand);
      let spent = before.loadS;
      const tried = new Set(before.probes.map((p) => p.qps));
      // A confirming run that never probed (its profile refused on a busy host, say) used no load: tried again, twice at most.
      let failedRuns = 0;
      while (runPinned && d.verdict === 'inconclusive' && confirmBudget - spent >= 1 && failedRuns < 3) {
        const next = d.confirm.filter((r) => !tried.has(r.qps));
        if (next.length === 0) break;
        const rate = next[0];
        // The likelier side is probed first and gets two thirds of what is left: a pass near the
        // knee needs thousands of requests (its misses cluster), and a pass probe runs its whole length.
        const durationS = next.length > 1 ? ((confirmBudget - spent) * 2) / 3 : confirmBudget - spent;
        say(`${cand.runId}: undecided; confirming probe at ${rate.qps} QPS for ${Math.round(durationS)} s (a decided ${rate.settles === 'pass' ? 'pass' : 'fail'} there settles ${rate.settles === 'pass' ? 'a pass' : 'a regression'})`);
        const got = await confirmAt(cand.runDir, rate.qps, durationS, runPinned);
        if (got.problem) {
          say(`${cand.runId}: ${got.problem}`);
          failedRuns++;
        }
        if (got.loadS > 0 || got.probes.length > 0) tried.add(rate.qps);
        spent += got.loadS;
        for (const p of got.probes) say(`${cand.runId}: confirming probe at ${p.qps} QPS: ${p.decision === 'invalid' ? 'invalid (its client could not keep time: not evidence)' : p.decision}${p.confidence !== null ? ` (${(p.confidence * 100).toFixed(1)}% confident)` : ''}`);
        cand = withConfirmations(cand, got.probes, opts.minConfidence);
        d = decide(cand);
      }
      if (d.verdict === 'inconclusive' && d.confirm.length && confirmBudget === 0) d = { ...d, reason: `${d.reason} (no --confirm-budget: no confirming probe was run)` };
      else if (d.verdict === 'inconclusive' && spent > 0) d = { ...d, reason: `${d.reason} (still undecided after ${Math.round(spent)} s of confirming probes, budget ${confirmBudget} s)` };
      decisions.push(d);
    }
    // Several candidates of one configuration (a night's run and its confirming rerun) are one decision.
    const gate = gateResult(combineByConfig(decisions), opts, indexed.rejected);

    const tableRuns = candidates.flatMap((c) => tableRow(c.runDir));
    const baseRow = baselineRuns.length === 1 ? runRowOf(readRunCore(baselineRuns[0].runDir)) : null;
    const table = compareRuns(tableRuns, { baseline: baseRow });

    if (outputs.markdown) writeOut(outputs.markdown, gateMarkdown(gate));
    if (outputs.junit) writeOut(outputs.junit, gateJunit(gate));
    if (outputs.prom) writeOut(outputs.prom, gatePrometheus(gate));
    if (argv.json) {
      process.stdout.write(JSON.stringify({ gate, table }, (_k, v) => (v === Infinity ? null : v), 2) + '\n');
    } else {
      if (table.runs.length) process.stdout.write(formatComparison(table).join('\n') + '\n\n');
      process.stdout.write(gateLines(gate).join('\n') + '\n');
      const c = gate.counts;
      process.stdout.write(`\n${c.regression} regression, ${c.refused} refused, ${c.inconclusive} undecided, ${c.pass} pass, ${c.new} new\n`);
    }
    if (gate.exitCode !== 0) setExit(gate.exitCode);
  },
});

/** Earlier nights' probes pooled into one estimate and interval (the method of each run's own interval). */
function pooledInterval(probes: ProbeCounts[], nights: number): PooledInterval | null {
  const i = capacityInterval(probes);
  if (i.estimateQps === null) return null;
  return { estimateQps: i.estimateQps, lowQps: i.loQps ?? 0, highQps: i.hiQps ?? Infinity, probes: i.probesUsed, nights };
}

/** When a new configuration differs from earlier nights only by its SLO, it says so and names them. */
function otherSloNote(cand: RunEvidence, indexRuns: RunEvidence[]): string {
  const others = indexRuns.filter((r) => r.runId !== cand.runId && configWithoutSlo(r.config) === configWithoutSlo(cand.config) && r.config !== cand.config);
  if (others.length === 0) return '';
  const slos = [...new Set(others.map((r) => r.slo ?? 'unknown'))];
  return ` under its SLO "${cand.slo ?? 'unknown'}"; ${others.length} earlier run(s) of the same recipe, engine, model and GPUs were measured under ${slos.map((x) => `"${x}"`).join(', ')} and are not compared with it`;
}

// This CLI's own entry point: a confirming probe is a `fluidcap run` of its own, so that compare
// never loads the probe runner or the capacity pipeline (nor their start-up cost) unless asked to.
const BIN = fileURLToPath(new URL('../../../bin/fluidcap.js', import.meta.url));

/**
 * Runs a pinned recipe as `fluidcap run <recipe> --out <dir> --reuse-profile <candidate> [--hosts f]` in a child process, its
 * output passed on indented; the run directory it made is the new one under <dir>. Ctrl-C reaches
 * the child too (same process group), which stops its probe and releases the engine.
 */
function pinnedRunner(hostsFile: string | null, say: (line: string) => void): RunPinned {
  return (recipeFile, outDir, fitFrom) =>
    new Promise((done, fail) => {
      const before = new Set(existsSync(outDir) ? readdirSync(outDir) : []);
      const child = spawn(process.execPath, [BIN, 'run', recipeFile, '--out', outDir, '--reuse-profile', fitFrom, ...(hostsFile ? ['--hosts', hostsFile] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
      const relay = (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) say(`  ${line}`);
      };
      child.stdout.on('data', relay);
      child.stderr.on('data', relay);
      child.on('error', fail);
      child.on('close', (code) => {
        if (code === 130) return fail(new UserError('the confirming probe was interrupted'));
        const made = readdirSync(outDir).filter((n) => !before.has(n) && statSync(join(outDir, n)).isDirectory());
        done(made.length ? join(outDir, made.sort().pop()!) : null);
      });
    });
}

// A candidate refused for lacking capacity.json has no row in the side-by-side table.
function tableRow(runDir: string): RunRow[] {
  try {
    return [runRowOf(readRunCore(runDir))];
  } catch (err) {
    if (err instanceof UserError) return [];
    throw err;
  }
}
