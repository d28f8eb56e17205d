// `fluidcap run <recipe.yaml>`: the capacity pipeline, or its resolved plan with --dry-run.
// Ctrl-C stops the probe in progress, keeps what it received, releases the engine, prints the
// resume command and exits 130; a second Ctrl-C waits at most 10 s for the engine's removal, then
// exits 130 with the `fluidcap clean` command for anything it could not confirm.
import { stringify } from 'yaml';
import { verb } from '../command.ts';
import { EXIT, UserError } from '../../util/errors.ts';
import { createProgress } from '../../capacity/progress.ts';
import { intervalHeadline } from '../../capacity/interval.ts';
import { passOutsideInterval } from '../../report/capacityWords.ts';
import { withInterrupts } from '../interrupts.ts';
import { formatDockerRun, type ContainerSpec } from '../../provision/containerSpec.ts';
import { formatProcessCommand } from '../../provision/processSpec.ts';
import { describeVersion } from '../../provision/engineVersion.ts';
import type { RunPlan } from '../../capacity/runPlan.ts';
import { REPORT_FILES, RUN_FILES } from '../../runDir/layout.ts';
import type { Rehearsal } from '../../twin/rehearse.ts';


// The plan as printed: a trace table is named by its file and size, not dumped row by row.
export function printablePlan(plan: RunPlan): Record<string, unknown> {
  const lengths = plan.workload.lengths;
  return { ...plan, trace: plan.trace ? { file: lengths.kind === 'trace' ? lengths.trace : null, rows: plan.trace.rows } : null };
}

// Which engine version the argv and env were written for: a dry run inspects no image.
function versionNote(b: ContainerSpec['basis']): string | null {
  if (b.family !== 'vllm') return null;
  if (b.version === null) return 'engine version: unknown from the image tag; the launch reads it from the image and writes the version-dependent flags and env then';
  return `engine version: ${describeVersion(b.version, b.versionSource)}; the launch reads it from the image and refuses flags the image does not have`;
}

function describePlan(plan: RunPlan): string {
  const shown = { ...printablePlan(plan), profile: { ...plan.profile, requests: `${plan.profile.requests.length} requests` } };
  const lines = [stringify(shown, { aliasDuplicateObjects: false }).trimEnd()];
  if (plan.engine.kind === 'container') {
    const note = versionNote(plan.engine.spec.basis);
    if (note) lines.push('', `# ${note}`);
    lines.push('', `# equivalent docker command (not executed):`, `# ${formatDockerRun(plan.engine.spec)}`);
  } else if (plan.engine.kind === 'process') {
    const b = plan.engine.spec.basis;
    if (b.family === 'vllm') {
      lines.push('', b.version === null
        ? '# engine version: unknown (target.process.version names it; without it no version-dependent flag or env is added, and the start-up log check stops a run whose scheduler is not the one asked for)'
        : `# engine version: ${describeVersion(b.version, b.versionSource)}`);
    }
    lines.push('', `# equivalent command on ${plan.engine.host} (not executed; the launch starts it in its own process group with a state directory):`, `# ${formatProcessCommand(plan.engine.spec)}`);
  }
  return lines.join('\n') + '\n';
}

export const runCommand = verb({
  command: 'run [recipe]',
  describe: 'find the highest request rate that meets the recipe\'s SLO (provision, profile, search, archive, report)',
  exits: [
    [0, 'a capacity found (or, with --dry-run, the plan printed)'],
    [3, 'infrastructure fault (SSH, Docker, an engine that died or stopped answering, the results disk), or a search that ended on probes the client could not trust'],
    [130, 'interrupted (Ctrl-C, SIGTERM): data kept, the resume command printed'],
  ],
  builder: (y) =>
    y
      .positional('recipe', { type: 'string', describe: 'recipe YAML file' })
      .option('hosts', { type: 'string', describe: 'inventory YAML naming the GPU hosts' })
      .option('out', { type: 'string', default: 'results', describe: 'directory that receives the run directory' })
      .option('resume', { type: 'string', describe: 'continue an interrupted run directory' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'print the resolved plan and exit' })
      .option('json', { type: 'boolean', default: false, describe: `print the plan or ${RUN_FILES.capacity} as JSON` })
      .option('rehearse', { type: 'boolean', default: false, describe: 'run the search on the simulated twin first (seconds) and start the real search from its bracket' })
      .option('early-stop', { type: 'boolean', describe: 'override search.earlyStop (--no-early-stop runs every probe to its end)' })
      .option('accept-new-host-key', { type: 'boolean', default: false, describe: 'pin the key of a host missing from known_hosts' })
      .option('reuse-profile', { type: 'string', describe: 'take the prefill fit of this run directory instead of profiling, when its engine and recipe (all but search) match; else profile (compare --confirm-budget uses it)' }),
  handler: async (args, setExit) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { dryRun, runCapacity } = await import('../../capacity/runCapacity.ts');
    const { loadInventory } = await import('../../provision/inventory.ts');
    if (!args.recipe && !args.resume) throw new UserError('run needs a recipe file (or --resume <runDir>)');
    if (args.dryRun) {
      if (!args.recipe) throw new UserError('--dry-run needs a recipe file');
      const plan = await dryRun(args.recipe, new Date(), (w) => process.stderr.write(`fluidcap: warning: ${w}\n`));
      process.stdout.write(args.json ? JSON.stringify(printablePlan(plan), null, 2) + '\n' : describePlan(plan));
      return;
    }
    const inventory = args.hosts ? await loadInventory(args.hosts) : undefined;
    const rehearsed = args.rehearse ? await rehearsal(args.recipe, args.resume) : undefined;
    const progress = createProgress(process.stderr);
    let started: { runId: string; containerHost: string | null } | null = null;
    const cleanHint = () => cleanCommand(started, args.hosts);
    await withInterrupts('stopping the current probe and releasing the engine', async (signal) => {
      const outcome = await runCapacity({
        onStart: (run) => (started = run),
        recipeFile: args.recipe ?? '',
        outDir: args.out,
        resumeDir: args.resume,
        inventory,
        connect: { acceptNewHostKey: args.acceptNewHostKey },
        signal,
        log: (line) => progress.log(line),
        progress,
        earlyStop: args.earlyStop,
        reuseFitFrom: args.reuseProfile,
        warmStart: rehearsed?.bracket,
        rehearsal: rehearsed?.record,
        recalibrate: rehearsed ? (runDir) => rehearsed.recalibrate(runDir, (line) => progress.log(line)) : undefined,
      });
      if (outcome.status === 'interrupted') {
        process.stderr.write(`fluidcap: run interrupted (${outcome.reason}); data kept in ${outcome.runDir}\n`);
        process.stderr.write(`resume with: fluidcap run --resume ${outcome.runDir}\n`);
        setExit(130);
        return;
      }
      const cap = outcome.capacity!;
      // A search that ended on untrusted probes has no capacity to report: the measuring machinery
      // (client or host) could not be trusted, which is an infrastructure fault, not a bug.
      if (cap.outcome === 'invalid-probes') setExit(EXIT.infra);
      if (args.json) process.stdout.write(JSON.stringify(cap, null, 2) + '\n');
      else {
        // The estimate with its interval is the headline; the search's highest passing probe follows.
        process.stdout.write(
          (cap.interval ? `${intervalHeadline(cap.interval)}\n` : '') +
            `${cap.interval ? 'highest passing probe' : 'capacity'}: ${cap.capacityQps} QPS (${cap.reason})${passNote(cap)}\n` +
            `bracket: pass ${cap.bracket.passQps ?? '-'} / fail ${cap.bracket.failQps ?? '-'} QPS, ${cap.probes.length} probes, ${cap.probeTimeS.toFixed(0)} s of load\n` +
            `results: ${outcome.runDir} (${[RUN_FILES.capacity, ...REPORT_FILES].join(', ')})\n`,
        );
      }
    }, { cleanHint });
  },
});

/** The highest passing probe's line's note where it lies outside the interval printed above it. */
function passNote(cap: { capacityQps: number | null; interval?: { loQps: number | null; hiQps: number | null } | null }): string {
  const note = cap.interval ? passOutsideInterval(cap.capacityQps, cap.interval) : null;
  return note ? `; ${note}` : '';
}

/**
 * The twin's bracket for the recipe (a resumed run's own recipe), printed with what it cost, and
 * how to recalibrate it: once the run has measured its profile and a probe, the twin's iteration
 * model is fitted to them (twin-calibration.json) and its search gives the warm start's new bracket.
 */
async function rehearsal(recipeFile: string | undefined, resumeDir: string | undefined) {
  const { loadRunRecipe, resolveRun } = await import('../../capacity/resolveRun.ts');
  const twin = await import('../../twin/rehearse.ts');
  const { recalibratedRehearsal } = await import('../../twin/calibrateRun.ts');
  const { runPaths } = await import('../../runDir/layout.ts');
  let file = recipeFile;
  if (!file && resumeDir) {
    const { readManifest } = await import('../../runDir/read.ts');
    const found = readManifest(runPaths(resumeDir).manifest)?.recipeFile;
    if (typeof found !== 'string') throw new UserError(`--rehearse: ${resumeDir} names no recipe file in its manifest`);
    file = found;
  }
  // A resumed run's recipe is read as it started (storedRun), as the run itself reads it.
  const recipe = await loadRunRecipe(file!, { hosts: 'unchecked', storedRun: file !== recipeFile });
  const plan = resolveRun(recipe, `${recipe.name}-rehearsal`);
  const { rehearse, UncalibratedTwin } = twin;
  let r: Rehearsal | null = null;
  try {
    r = rehearse(recipe, plan);
    process.stderr.write(
      `rehearsal on the simulated twin: ${r.interval ? intervalHeadline(r.interval) : `capacity ${r.capacityQps} QPS, ${r.probes.length} probes`}; bracket pass ${r.bracket.passQps ?? '-'} / fail ${r.bracket.failQps ?? '-'} QPS, ` +
        `probes at ${r.probes.map((p) => `${p.qps}${p.passed ? '✓' : '✗'}`).join(' ')} (${r.outcome}), in ${r.wallS.toFixed(1)} s (×${r.speedup.toFixed(0)} real time); the search starts there ` +
        `(uncalibrated twin: the ${recipe.target.gpuProfile ?? 'default'} roofline; it is calibrated to the run after the first probe)\n`,
    );
  } catch (err) {
    if (!(err instanceof UncalibratedTwin)) throw err;
    process.stderr.write(`rehearsal: ${err.message}; the search starts cold and warm-starts from the twin calibrated to its first probe\n`);
  }
  const recalibrate = async (runDir: string, log: (line: string) => void) => {
    try {
      const done = await recalibratedRehearsal(recipe, plan, runDir, log);
      if (!done) return null;
      const c = done.rehearsal;
      log(
        `warm start: the twin calibrated to this run (${RUN_FILES.calibration}) puts capacity at ${c.capacityQps} QPS` +
          `${c.interval ? ` (${intervalHeadline(c.interval)})` : ''}, bracket pass ${c.bracket.passQps ?? '-'} / fail ${c.bracket.failQps ?? '-'} QPS (uncalibrated: ${r ? `${r.capacityQps} QPS` : 'none'}); the search continues from there`,
      );
      return { bracket: c.bracket, rehearsal: twin.rehearsalRecord(c, 'calibrated') };
    } catch (err) {
      // The measurements are kept whatever happens here; only the warm start stays uncalibrated.
      log(`warm start: calibrating the twin failed (${(err as Error).message}); the search keeps the uncalibrated twin's bracket`);
      return null;
    }
  };
  return { bracket: r?.bracket, record: r ? twin.rehearsalRecord(r, 'roofline') : undefined, recalibrate };
}

/** The `fluidcap clean` command that removes what a run may leave behind (null: it launches no container). */
export function cleanCommand(run: { runId: string; containerHost: string | null } | null, inventoryFile: string | undefined): string | null {
  if (run === null || run.containerHost === null) return null;
  const local = run.containerHost === 'local' ? ' --local' : '';
  return `fluidcap clean ${inventoryFile ?? '<inventory.yaml>'}${local} --run ${run.runId}`;
}
