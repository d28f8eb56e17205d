// `fluidcap probe <recipe> --qps n [--requests n | --duration s]`: one load probe against an engine
// that is already running (an `endpoint` target's url, or --url). It resolves the recipe exactly
// as `run` does (same context length, workload, probe settings, client tolerance, run id) and
// writes <out>/probes/00-qps-<rate>/{timelines.jsonl, summary.json, server-metrics.jsonl}.
import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { makeDirIn } from '../../util/confinedFs.ts';
import { join } from 'node:path';
import { verb } from '../command.ts';
import { readTimelines } from '../../timeline/reader.ts';
import { EXIT, UserError, describeValue } from '../../util/errors.ts';
import { checkSize } from '../../util/sizeBounds.ts';
import { checkDurationS, formatDurationS } from '../../util/duration.ts';
import type { ProbeResult } from '../../load/runProbe.ts';
import { computeRequestMetrics, summarizeRequests } from '../../metrics/index.ts';
import type { Slo } from '../../metrics/slo.ts';
import type { TimelineRecord, TokenArrivals } from '../../timeline/record.ts';
import { RUN_FILES, probePaths } from '../../runDir/layout.ts';
import { writeJsonFile } from '../../runDir/jsonFiles.ts';
import { withInterrupts } from '../interrupts.ts';
import { fluidityDeadlines } from '../../metrics/slo.ts';
import { evaluateSlo } from '../../metrics/sloCheck.ts';
import { judgeClientError, type ClientErrorEffect } from '../../capacity/clientError.ts';
import { probeLine, sloLegend } from '../../capacity/consoleLines.ts';
import { sloDefinitions } from '../../capacity/perSloSearch.ts';

export const probeCommand = verb({
  command: 'probe <recipe>',
  describe: 'run one load probe at a fixed rate against a running engine',
  exits: [
    [0, 'the probe ran and its verdict is printed (FAIL included)'],
    [3, 'no verdict to trust: a client error that could flip it, no request answered, or cut short'],
    [130, 'interrupted (Ctrl-C, SIGTERM): what it received is kept'],
  ],
  builder: (y) =>
    y
      .positional('recipe', { type: 'string', describe: 'recipe YAML', demandOption: true })
      .option('qps', { type: 'number', demandOption: true, describe: 'request rate (requests per second)' })
      .option('requests', { type: 'number', describe: 'planned requests (default: as a run plans them, max(search.probe.requests, rate × minDuration))' })
      .option('duration', { type: 'string', describe: 'time limit of arrivals, e.g. 2m (default: search.probe.duration)' })
      .option('out', { type: 'string', describe: 'run directory (default: results/<recipe name>-<time>/, as a run names it)' })
      .option('url', { type: 'string', describe: "engine base URL (default: the recipe's endpoint url)" })
      .option('workers', { type: 'number', describe: 'receiving worker threads (0 = in the main thread)' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'print the probe plan (settings and schedule) as YAML and exit; needs no engine' })
      .option('json', { type: 'boolean', default: false, describe: 'print the summary (with --dry-run: the plan and every request) as JSON' }),
  handler: async (argv, setExit) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { planProbe } = await import('../../load/plan.ts');
    const { runProbe } = await import('../../load/runProbe.ts');
    const { setUpPrompts } = await import('../../capacity/promptSetup.ts');
    const { loadRunRecipe, newRunId, resolveRun } = await import('../../capacity/resolveRun.ts');
    const { plannedRequests } = await import('../../capacity/runPlan.ts');
    if (!(argv.qps > 0) || !Number.isFinite(argv.qps)) throw new UserError(`--qps must be a rate > 0, got ${describeValue(argv.qps)}`);
    if (argv.requests !== undefined && !(Number.isInteger(argv.requests) && argv.requests > 0)) {
      throw new UserError(`--requests must be a whole number > 0, got ${describeValue(argv.requests)}`);
    }
    const checked = argv.duration === undefined ? undefined : checkDurationS(argv.duration);
    const durationS = checked === undefined ? undefined : 's' in checked ? checked.s : null;
    if (durationS === null || (durationS !== undefined && !(durationS > 0))) {
      const why = checked !== undefined && 'problem' in checked && checked.bare !== undefined ? checked.problem : 'must be a duration such as 25ms, 2s or 10m';
      throw new UserError(`--duration ${why}, got ${describeValue(argv.duration)}`);
    }
    if (argv.workers !== undefined && !(Number.isInteger(argv.workers) && argv.workers >= 0)) {
      throw new UserError(`--workers must be a whole number >= 0, got ${describeValue(argv.workers)}`);
    }
    const recipe = await loadRunRecipe(argv.recipe, { hosts: 'unchecked' });
    const outParent = 'results';
    const runId = newRunId(recipe.name, new Date(), outParent);
    // Random per probe, as per run: no prompt of this probe repeats one an engine's prompt cache holds.
    const runPlan = resolveRun(recipe, runId, randomBytes(8).toString('hex'));
    const urlGiven = argv.url ?? (runPlan.engine.kind === 'endpoint' ? runPlan.engine.url : undefined);
    if (urlGiven !== undefined) {
      try {
        new URL(urlGiven);
      } catch {
        throw new UserError(`--url must be an http(s) URL such as http://127.0.0.1:8000, got ${describeValue(urlGiven)}`);
      }
    }
    const settings = runPlan.probe;
    const bothDefault = argv.requests === undefined && durationS === undefined;
    const requests = argv.requests ?? (bothDefault ? plannedRequests(settings, argv.qps) : undefined);
    const probeDurationS = durationS ?? (bothDefault ? settings.durationLimitS : undefined);
    checkSize(
      'probeRequests',
      Math.min(requests ?? Infinity, argv.qps * (probeDurationS ?? Infinity)),
      argv.requests !== undefined ? `--requests (${argv.requests})` : bothDefault ? `--qps (${argv.qps}) × ${argv.recipe}: search.probe.minDuration (${settings.minDurationS} s)` : `--qps (${argv.qps}) × --duration (${argv.duration})`,
    );
    const plan = planProbe({
      workload: runPlan.workload,
      rateQps: argv.qps,
      requests,
      durationS: probeDurationS,
      maxContextTokens: runPlan.maxContextTokens,
      trace: runPlan.trace ?? undefined,
      idPrefix: '00',
      promptNonce: runPlan.prompts.nonce ?? undefined,
    });
    if (plan.requests.length === 0) throw new UserError(`the plan has no requests at --qps ${argv.qps}${durationS ? ` within --duration ${argv.duration}` : ''}`);
    const runDir = argv.out ?? join(outParent, runId);
    const probe = probePaths(runDir, 0, argv.qps);
    const { tbtDeadlineS } = fluidityDeadlines(runPlan.slo);
    const options = {
      outDir: probe.dir,
      // A dry run sends nothing, so it needs no engine: the plan shows where the probe would go, if known.
      baseUrl: urlGiven ?? null,
      model: runPlan.session.requestedModel ?? runPlan.servedModel,
      requestTimeoutS: settings.requestTimeoutS,
      stallTimeoutS: settings.stallTimeoutS,
      concurrency: settings.concurrency ?? undefined,
      workers: argv.workers ?? settings.workers ?? undefined,
      warmupFraction: settings.warmupFraction,
      tbtDeadlineS,
      clientToleranceS: settings.clientToleranceS ?? undefined,
      continuousUsage: settings.continuousUsage,
    };
    if (argv.dryRun) {
      // As `run --dry-run`: YAML for a person to read, the whole plan (every request) as JSON with --json.
      const shown = { runDir, maxContextTokens: runPlan.maxContextTokens, slo: runPlan.slo, ...options, plan: { ...plan, requests: `${plan.requests.length} requests` } };
      process.stdout.write(argv.json ? JSON.stringify({ ...shown, plan }, null, 2) + '\n' : stringify(shown, { aliasDuplicateObjects: false }));
      return;
    }
    const baseUrl = urlGiven;
    if (!baseUrl) throw new UserError(`probe needs a running engine: give --url, or a recipe whose target.engine is endpoint with endpoint.url (${argv.recipe} has engine ${describeValue(recipe.target.engine)})`);
    let apiKey: string | undefined;
    const keyEnv = runPlan.engine.kind === 'endpoint' ? runPlan.engine.apiKeyEnv : null;
    if (keyEnv) {
      apiKey = process.env[keyEnv];
      if (!apiKey) throw new UserError(`${argv.recipe}: target.endpoint.apiKeyEnv names ${keyEnv}, which is not set in the environment`);
    }
    // The same prompt set-up as a run: the served model, exact lengths, the engine's cache-off switch.
    const setup = await setUpPrompts(runPlan, { name: recipe.target.engine, baseUrl, apiKey }, plan.requests.map((r) => r.promptTokens));
    options.model = setup.model;
    const sending = { ...options, baseUrl };
    makeDirIn(runDir, probe.dir);
    const notes: string[] = [...setup.notes];
    if (!argv.json) process.stderr.write(`fluidcap probe: ${plan.requests.length} requests at ${argv.qps} QPS against ${new URL(baseUrl).origin} → ${probe.dir}\n`);
    await withInterrupts('stopping the probe (what it received is kept)', async (signal) => {
      const result: ProbeResult = await runProbe({ ...plan, promptFormat: setup.format }, { ...sending, apiKey, signal, content: setup.content, extraBody: setup.extraBody });
      const summary = {
        ...result,
        plan: { rateQps: plan.rateQps, seed: plan.seed, requests: plan.requests.length, arrivals: plan.arrivals, api: plan.api, promptFormat: setup.format, prompts: plan.prompts, tokenArrivals: settings.tokenArrivals ?? 'engine' },
        notes,
        // The SLO as resolved, so `fluidcap analyze` judges this directory by the recipe's deadlines.
        recipeSlo: runPlan.slo,
        ...(await probeMetrics(result, runPlan.slo, notes, settings.tokenArrivals ?? 'engine')),
      };
      writeJsonFile(runDir, probe.summary, summary);
      const interrupted = result.cancelled && signal.aborted;
      if (argv.json) process.stdout.write(JSON.stringify(summary) + '\n');
      else {
        // The verdict first, in the words `fluidcap run` uses for its probes; the client's figures follow.
        const defs = sloDefinitions(runPlan.slo);
        const trusted = (result.clientHealth.verdict === 'valid' || summary.clientErrorEffect?.holds === true) && result.tokenDrift.verdict !== 'drift';
        const line = probeLine(
          {
            index: 0,
            qps: argv.qps,
            interrupted,
            valid: trusted,
            passed: summary.metrics.slo.passed && result.earlyStop === null,
            requests: summary.metrics.requests,
            durationS: result.durationS,
            earlyStop: interrupted ? null : result.earlyStop,
            engineDied: null,
            tokenDrift: result.tokenDrift,
            client: result.clientHealth,
            validity: result.clientHealth.reason,
            clientErrorEffect: summary.clientErrorEffect,
            metrics: summary.metrics,
            slo: summary.metrics.slo,
          },
          defs,
        );
        process.stdout.write([...sloLegend(defs), line, ''].join('\n') + describeResult(result, probe.dir, notes, summary.clientErrorEffect));
      }
      if (interrupted) {
        process.stderr.write(`fluidcap: probe interrupted; data kept in ${probe.dir}\n`);
        setExit(130);
      } else if (probeUntrusted(result, summary.clientErrorEffect)) setExit(EXIT.infra);
    });
  },
});

/**
 * SPEC §5 metrics of the probe's non-warmup requests; without a prefill fit D_p is the TTFT slack alone (stated in notes).
 * When the client check failed, whether the verdict holds with every deadline moved against it by the client's error.
 */
export async function probeMetrics(result: ProbeResult, slo: Slo, notes: string[], arrivals: TokenArrivals): Promise<{ metrics: ReturnType<typeof summarizeRequests>; clientErrorEffect?: ClientErrorEffect }> {
  const records: TimelineRecord[] = [];
  for await (const line of readTimelines(result.timelinesFile)) if (line.record && line.record.warmup !== true) records.push(line.record);
  notes.push(`no prefill fit in a standalone probe: fluidity uses D_p = TTFT slack (${formatDurationS(fluidityDeadlines(slo).ttftSlackS)}); \`fluidcap analyze\` recomputes with a fit`);
  const under = (s: Slo) => {
    const { tbtDeadlineS, ttftSlackS, tieRule } = fluidityDeadlines(s);
    return records.map((r) => computeRequestMetrics(r, { dpS: ttftSlackS, tbtDeadlineS, arrivals, tieRule }));
  };
  const metrics = summarizeRequests(under(slo), { slo, durationS: result.durationS });
  if (result.clientHealth.verdict === 'valid') return { metrics };
  // An early stop is a fail whatever the partial sample shows.
  const strict = result.earlyStop === null ? metrics.slo : { ...metrics.slo, passed: false };
  return { metrics, clientErrorEffect: judgeClientError(slo, result.clientHealth.clientErrorS, strict, (s) => evaluateSlo(under(s), s)) };
}

/** Whether the probe gives no verdict to trust (exit 3): a client error that could flip it, no request answered, or cut short. */
export function probeUntrusted(result: Pick<ProbeResult, 'clientHealth' | 'byStatus' | 'cancelled'>, effect: ClientErrorEffect | undefined): boolean {
  return (result.clientHealth.verdict === 'invalid' && !effect?.holds) || result.byStatus.ok === 0 || result.cancelled;
}

export function describeResult(r: ProbeResult, outDir: string, notes: string[], effect: ClientErrorEffect | undefined): string {
  const ms = (s: number | null | undefined) => (s === null || s === undefined ? 'n/a' : `${(s * 1000).toFixed(2)} ms`);
  const h = r.clientHealth;
  const lines = [
    `probe at ${r.rateQps} QPS: ${r.sent} sent of ${r.planned} in ${r.durationS.toFixed(1)} s — ok ${r.byStatus.ok}, error ${r.byStatus.error}, timeout ${r.byStatus.timeout}, cancelled ${r.byStatus.cancelled}${r.notSent ? `, not sent ${r.notSent}` : ''}`,
    r.earlyStop ? `stopped early: ${r.earlyStop}` : null,
    `client health: ${h.verdict} — ${h.reason}`,
    effect ? `  ${effect.holds ? `verdict kept despite the client error: ${effect.note}` : effect.note}` : null,
    `  event-loop delay p99 ${ms(h.eventLoopDelayP99S)}, dispatch lag p99 ${ms(h.dispatchLagP99S)}, receive−emit p50/p99/max ${h.recvMinusEmit ? `${ms(h.recvMinusEmit.p50S)} / ${ms(h.recvMinusEmit.p99S)} / ${ms(h.recvMinusEmit.maxS)}` : 'n/a (engine sends no emit times)'}`,
    `token counts: ${r.tokenDrift.verdict} — ${r.tokenDrift.note}`,
    r.serverMetrics.available ? `server metrics: ${r.serverMetrics.scrapes} scrapes` : `server metrics: ${r.serverMetrics.note}`,
    ...notes.map((n) => `note: ${n}`),
    `wrote ${outDir}/${RUN_FILES.timelines} and ${RUN_FILES.summary}`,
  ];
  return lines.filter((l) => l !== null).join('\n') + '\n';
}
