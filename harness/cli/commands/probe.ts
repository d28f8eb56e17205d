// `fluidcap probe <recipe> --qps n [--requests n | --duration s]`: one load probe against an engine
// that is already running (an `endpoint` target's url, or --url). Writes
// <out>/probes/00-qps-<rate>/{timelines.jsonl, summary.json, server-metrics.jsonl}.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { VerbFactory } from '../command.ts';
import type { Recipe } from '../../recipe/parse.ts';
import { readTimelines } from '../../timeline/reader.ts';
import { UserError, describeValue } from '../../util/errors.ts';
import { parseDurationS, formatDurationS } from '../../util/duration.ts';
import { findModel } from '../../catalog/models.ts';
import type { ProbeResult } from '../../load/runProbe.ts';
import { computeRequestMetrics, summarizeRequests } from '../../metrics/index.ts';
import type { TimelineRecord } from '../../timeline/record.ts';
import { RUN_FILES, probePaths } from '../../runDir/layout.ts';
import { writeJsonFile } from '../../runDir/jsonFiles.ts';

interface ProbeArgs {
  recipe: string;
  qps: number;
  requests?: number;
  duration?: string;
  out?: string;
  url?: string;
  workers?: number;
  json?: boolean;
}

export const probeCommand: VerbFactory = (setExit) => ({
  command: 'probe <recipe>',
  describe: 'run one load probe at a fixed rate against a running engine',
  builder: (y) =>
    y
      .positional('recipe', { type: 'string', describe: 'recipe YAML', demandOption: true })
      .option('qps', { type: 'number', demandOption: true, describe: 'request rate (requests per second)' })
      .option('requests', { type: 'number', describe: 'planned requests (default: search.probe.requests)' })
      .option('duration', { type: 'string', describe: 'time limit of arrivals, e.g. 2m (default: search.probe.duration)' })
      .option('out', { type: 'string', describe: 'run directory (default: results/<probe-run-id>/)' })
      .option('url', { type: 'string', describe: "engine base URL (default: the recipe's endpoint url)" })
      .option('workers', { type: 'number', describe: 'receiving worker threads (0 = in the main thread)' })
      .option('json', { type: 'boolean', default: false, describe: 'print the summary as JSON' }),
  handler: async (args) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { loadRecipe } = await import('../../recipe/load.ts');
    const { planProbe } = await import('../../load/plan.ts');
    const { loadWorkloadTrace } = await import('../../load/traceFile.ts');
    const { runProbe } = await import('../../load/runProbe.ts');
    const { calibrateTokensPerWord } = await import('../../load/tokenizeCalibration.ts');
    const argv = args as unknown as ProbeArgs;
    if (!(argv.qps > 0) || !Number.isFinite(argv.qps)) throw new UserError(`--qps must be a rate > 0, got ${describeValue(argv.qps)}`);
    if (argv.requests !== undefined && !(Number.isInteger(argv.requests) && argv.requests > 0)) {
      throw new UserError(`--requests must be a whole number > 0, got ${describeValue(argv.requests)}`);
    }
    const durationS = argv.duration === undefined ? undefined : parseDurationS(argv.duration);
    if (durationS === null || (durationS !== undefined && !(durationS > 0))) {
      throw new UserError(`--duration must be a duration such as 25ms, 2s or 10m, got ${describeValue(argv.duration)}`);
    }
    if (argv.workers !== undefined && !(Number.isInteger(argv.workers) && argv.workers >= 0)) {
      throw new UserError(`--workers must be a whole number >= 0, got ${describeValue(argv.workers)}`);
    }
    const recipe = await loadRecipe(argv.recipe);
    const target = recipe.target as { engine: string; model?: string; endpoint?: { url: string; apiKeyEnv?: string }; engineArgs?: { maxModelLen?: number } };
    const baseUrl = argv.url ?? target.endpoint?.url;
    if (!baseUrl) throw new UserError(`probe needs a running engine: give --url, or a recipe whose target.engine is endpoint with endpoint.url (${argv.recipe} has engine ${describeValue(target.engine)})`);
    try {
      new URL(baseUrl);
    } catch {
      throw new UserError(`--url must be an http(s) URL such as http://127.0.0.1:8000, got ${describeValue(baseUrl)}`);
    }
    let apiKey: string | undefined;
    const keyEnv = target.endpoint?.apiKeyEnv;
    if (keyEnv) {
      apiKey = process.env[keyEnv];
      if (!apiKey) throw new UserError(`${argv.recipe}: target.endpoint.apiKeyEnv names ${keyEnv}, which is not set in the environment`);
    }
    const model = target.model ?? 'default';
    const maxContextTokens = target.engineArgs?.maxModelLen ?? findModel(model)?.maxContextTokens ?? 4096;
    const probeSection = recipe.search.probe;
    const trace = loadWorkloadTrace(recipe.workload, recipe.source.dir, argv.recipe);
    const bothDefault = argv.requests === undefined && durationS === undefined;
    const plan = planProbe({
      workload: recipe.workload,
      rateQps: argv.qps,
      requests: argv.requests ?? (bothDefault ? probeSection.requests : undefined),
      durationS: durationS ?? (bothDefault ? probeSection.durationLimitS : undefined),
      maxContextTokens,
      trace,
      idPrefix: '00',
    });
    if (plan.requests.length === 0) throw new UserError(`the plan has no requests at --qps ${argv.qps}${durationS ? ` within --duration ${argv.duration}` : ''}`);
    const runDir = argv.out ?? join('results', `probe-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${randomBytes(2).toString('hex')}`);
    const probe = probePaths(runDir, 0, argv.qps);
    const outDir = probe.dir;
    mkdirSync(outDir, { recursive: true });
    const notes: string[] = [];
    let tokensPerWord: number | undefined;
    if (plan.promptFormat === 'text') {
      const cal = await calibrateTokensPerWord(baseUrl, model, apiKey);
      tokensPerWord = cal.tokensPerWord ?? undefined;
      notes.push(cal.note);
    }
    const fluidity = recipe.slo.fluidity;
    const ac = new AbortController();
    const onSigint = () => ac.abort();
    process.once('SIGINT', onSigint);
    if (!argv.json) process.stderr.write(`fluidcap probe: ${plan.requests.length} requests at ${argv.qps} QPS against ${new URL(baseUrl).origin} → ${outDir}\n`);
    let result: ProbeResult;
    try {
      result = await runProbe(plan, {
        outDir,
        baseUrl,
        model,
        apiKey,
        requestTimeoutS: probeSection.requestTimeoutS,
        stallTimeoutS: probeSection.stallTimeoutS,
        concurrency: probeSection.concurrency,
        workers: argv.workers ?? probeSection.workers,
        warmupFraction: probeSection.warmupFraction,
        signal: ac.signal,
        tbtDeadlineS: fluidity?.tbtDeadlineS,
        tokensPerWord,
      });
    } finally {
      process.off('SIGINT', onSigint);
    }
    const summary = { ...result, plan: { rateQps: plan.rateQps, seed: plan.seed, requests: plan.requests.length, arrivals: plan.arrivals, api: plan.api, promptFormat: plan.promptFormat }, notes, metrics: await probeMetrics(result, recipe, notes) };
    writeJsonFile(probe.summary, summary);
    if (argv.json) process.stdout.write(JSON.stringify(summary) + '\n');
    else process.stdout.write(describeResult(result, outDir, notes));
    if (result.clientHealth.verdict === 'invalid' || result.byStatus.ok === 0 || result.cancelled) setExit(1);
  },
});

/** SPEC §5 metrics of the probe's non-warmup requests; without a prefill fit D_p is the TTFT slack alone (stated in notes). */
async function probeMetrics(result: ProbeResult, recipe: Recipe, notes: string[]) {
  const slo = recipe.slo;
  const records: TimelineRecord[] = [];
  for await (const line of readTimelines(result.timelinesFile)) if (line.record && line.record.warmup !== true) records.push(line.record);
  const ttftSlackS = slo.fluidity?.ttftSlackS ?? 0.3;
  notes.push(`no prefill fit in a standalone probe: fluidity uses D_p = TTFT slack (${formatDurationS(ttftSlackS)}); \`fluidcap analyze\` recomputes with a fit`);
  const metrics = records.map((r) => computeRequestMetrics(r, { dpS: ttftSlackS, tbtDeadlineS: slo.fluidity?.tbtDeadlineS ?? 0.025 }));
  return summarizeRequests(metrics, { slo, durationS: result.durationS });
}

function describeResult(r: ProbeResult, outDir: string, notes: string[]): string {
  const ms = (s: number | null | undefined) => (s === null || s === undefined ? 'n/a' : `${(s * 1000).toFixed(2)} ms`);
  const h = r.clientHealth;
  const lines = [
    `probe at ${r.rateQps} QPS: ${r.sent} sent of ${r.planned} in ${r.durationS.toFixed(1)} s — ok ${r.byStatus.ok}, error ${r.byStatus.error}, timeout ${r.byStatus.timeout}, cancelled ${r.byStatus.cancelled}${r.notSent ? `, not sent ${r.notSent}` : ''}`,
    r.earlyStop ? `stopped early: ${r.earlyStop}` : null,
    `client health: ${h.verdict} — ${h.reason}`,
    `  event-loop delay p99 ${ms(h.eventLoopDelayP99S)}, dispatch lag p99 ${ms(h.dispatchLagP99S)}, receive−emit p50/p99/max ${h.recvMinusEmit ? `${ms(h.recvMinusEmit.p50S)} / ${ms(h.recvMinusEmit.p99S)} / ${ms(h.recvMinusEmit.maxS)}` : 'n/a (engine sends no emit times)'}`,
    `token counts: ${r.tokenDrift.verdict} — ${r.tokenDrift.note}`,
    r.serverMetrics.available ? `server metrics: ${r.serverMetrics.scrapes} scrapes` : `server metrics: ${r.serverMetrics.note}`,
    ...notes.map((n) => `note: ${n}`),
    `wrote ${outDir}/${RUN_FILES.timelines} and ${RUN_FILES.summary}`,
  ];
  return lines.filter((l) => l !== null).join('\n') + '\n';
}
