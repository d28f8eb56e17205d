// `fluidcap analyze`: recomputes every metric from archived timelines, streaming. Each line is
// read, turned into per-request metrics, written out (with --json) and reduced to numbers in typed
// arrays; records are never kept, so 100,000 requests × 200 tokens fit well under 1 GiB.
//
// Bad lines: until the first valid record they are held back; if the input has no valid record at
// all, they become the one UserError (exit 2) so "a file with a negative time" prints exactly that
// line's problem. Once metrics exist, bad lines go to stderr as they are met, the metrics of the
// valid lines are printed, and the outcome's exit code is 1 (not 0: a script must notice).
import type { TimelineRecord, TokenArrivals } from '../timeline/record.ts';
import { readTimelines } from '../timeline/reader.ts';
import { UserError } from '../util/errors.ts';
import { computeRequestMetrics } from '../metrics/request.ts';
import { SummaryAccumulator } from '../metrics/summary.ts';
import type { PercentileMethod } from '../metrics/percentile.ts';
import type { SloOverrides } from '../metrics/slo.ts';
import { locateRunFiles } from './runFiles.ts';
import { planDeadlines, type DeadlinePlan } from './deadlines.ts';
import { requestJson } from './requestJson.ts';
import { formatTable, verdictWord, type ProbeReport } from './table.ts';
import { SloDecisionAccumulator, statisticsOfDecision, withRates } from '../capacity/sloDecision.ts';
import { DEFAULT_DECISION } from '../capacity/decision.ts';
import { capacityFromArchive, formatArchiveCapacity, perSloFromArchive, type ArchiveCapacity, type ArchivePerSlo } from './capacity.ts';
import { sloDefinitions } from '../capacity/perSloSearch.ts';
import { arrivalQpsOver } from '../metrics/arrivalRate.ts';

/** What to analyse and how. */
export interface AnalyzeOptions {
  target: string;
  json: boolean;
  method: PercentileMethod;
  overrides: SloOverrides & { ttftDeadlineS?: number };
  /** Also say what capacity the probes support under the SLO, and what would need probing. */
  capacity?: boolean;
  /** Which arrival of a token is measured (--arrivals); default: the run's, else engine. */
  arrivals?: TokenArrivals;
  /** Bad lines printed per file before the rest are only counted. */
  maxProblemsPerFile?: number;
}

/** Output channels: write honours backpressure (stdout), warn is one stderr line. */
export interface AnalyzeDeps {
  write(text: string): Promise<void>;
  warn(line: string): void;
}

/** Result for the CLI: what was printed and the exit code to set (0 clean, 1 some bad lines). */
export interface AnalyzeOutcome {
  probes: ProbeReport[];
  capacity: (ArchiveCapacity & { perSlo: ArchivePerSlo[] }) | null;
  badLines: number;
  exitCode: 0 | 2;
}

// Joins small writes into ~64 KiB pieces so 100k request objects do not cost 100k syscalls.
class BufferedOut {
  private parts: string[] = [];
  private size = 0;
  constructor(private readonly write: (text: string) => Promise<void>) {}
  async add(text: string): Promise<void> {
    this.parts.push(text);
    this.size += text.length;
    if (this.size >= 1 << 16) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.size === 0) return;
    const text = this.parts.join('');
    this.parts = [];
    this.size = 0;
    await this.write(text);
  }
}

/** Runs the analysis, printing as it goes; throws UserError when nothing usable was found. */
export async function analyzeTarget(opts: AnalyzeOptions, deps: AnalyzeDeps): Promise<AnalyzeOutcome> {
  const files = locateRunFiles(opts.target);
  const arrivals: TokenArrivals = opts.arrivals ?? files.runArrivals ?? 'engine';
  const arrivalsFrom = opts.arrivals ? '--arrivals' : files.runArrivals ? "the run's search.probe.tokenArrivals" : 'default';
  // Planned at the first valid record, so a broken file is reported before a missing fit.
  let planned: DeadlinePlan | null = null;
  const plan = () =>
    (planned ??= planDeadlines({ fit: files.fit, fitPath: files.fitPath, runSlo: files.runSlo, overrides: opts.overrides, slackOnlyWithoutFit: files.slackOnlyWithoutFit }));
  const maxProblems = opts.maxProblemsPerFile ?? 20;
  const out = new BufferedOut(deps.write);
  const held: string[] = [];
  const reports: ProbeReport[] = [];
  let records = 0;
  let badLines = 0;
  let warmupExcluded = 0;
  const emptyFiles: string[] = [];

  for (const file of files.probes) {
    let acc: SummaryAccumulator | null = null;
    let decisions: SloDecisionAccumulator | null = null;
    let lines = 0;
    let good = 0;
    let bad = 0;
    let warmups = 0;
    let firstScheduledS = Infinity;
    let lastScheduledS = -Infinity;
    let lastEndS = 0;
    for await (const item of readTimelines(file.path, file.displayPath)) {
      lines += 1;
      if (item.problem !== undefined) {
        bad += 1;
        badLines += 1;
        if (bad <= maxProblems) {
          if (records === 0) held.push(item.problem);
          else deps.warn(item.problem);
        }
        continue;
      }
      const record = item.record as TimelineRecord;
      // Warm-up requests (marked by the probe runner) are not part of the measurement.
      if (record.warmup === true) {
        warmups += 1;
        continue;
      }
      const p = plan();
      acc ??= new SummaryAccumulator({ slo: p.slo, method: opts.method });
      const m = computeRequestMetrics(record, { ...p.deadlineFor(record.promptTokens), tbtDeadlineS: p.tbtDeadlineS, arrivals, tieRule: p.slo.fluidity?.tieRule });
      const meets = acc.add(m);
      (decisions ??= new SloDecisionAccumulator(p.slo)).add(m);
      firstScheduledS = Math.min(firstScheduledS, m.scheduledS);
      lastScheduledS = Math.max(lastScheduledS, m.scheduledS);
      lastEndS = Math.max(lastEndS, m.endS);
      good += 1;
      if (records === 0) {
        for (const p of held) deps.warn(p);
        held.length = 0;
        if (opts.json) await out.add('{"requests":[\n');
      } else if (opts.json) await out.add(',\n');
      records += 1;
      if (opts.json) await out.add(JSON.stringify(requestJson(m, file.probe, meets)));
    }
    warmupExcluded += warmups;
    if (bad > maxProblems) {
      const more = `${file.displayPath}: ${bad - maxProblems} more bad lines not shown`;
      if (records === 0) held.push(more);
      else deps.warn(more);
    }
    if (lines === 0) {
      if (files.kind === 'file') throw new UserError(`${file.displayPath}: empty file (no timeline lines)`);
      emptyFiles.push(file.displayPath);
      continue;
    }
    if (good === 0 || acc === null) continue;
    // With warm-up excluded the measured window starts at the first measured arrival.
    const durationS = warmups > 0 ? lastEndS - firstScheduledS : (file.durationS ?? undefined);
    // The archive holds what the probe measured: the test judges all of it at once.
    const statistics = decisions ? withRates(statisticsOfDecision(decisions.decide(DEFAULT_DECISION, { mode: 'whole' })), arrivalQpsOver(good, firstScheduledS, lastScheduledS), file.burstQps) : undefined;
    reports.push({ probe: file.probe, qps: file.qps, file: file.displayPath, summary: acc.summarize({ durationS }), status: file.status, statistics });
  }

  if (records === 0) {
    if (held.length > 0) throw new UserError(held.join('\n'));
    throw new UserError(
      warmupExcluded > 0
        ? `${files.target}: only warm-up requests, nothing to measure`
        : `${files.target}: every timelines file is empty (${emptyFiles.join(', ')})`,
    );
  }
  for (const f of emptyFiles) deps.warn(`note: ${f} is empty (no requests ended in that probe); skipped`);
  if (badLines > 0) deps.warn(`${badLines} bad line${badLines === 1 ? '' : 's'} skipped; the metrics cover the ${records} valid requests`);

  const { slo, firstTokenDeadline, tbtDeadlineS, ttftSlackS } = plan();
  const archive = opts.capacity
    ? {
        probes: files.probes.map((f) => {
          const r = reports.find((x) => x.file === f.displayPath);
          const passedBy = r ? Object.fromEntries(r.summary.slo.results.map((x) => [x.name, x.passed])) : undefined;
          return { probe: f.probe, qps: f.qps, passed: r ? r.summary.slo.passed : null, passedBy, ...f.status, parts: r?.statistics?.parts, arrivalQps: r?.statistics?.arrivalQps, burstQps: r?.statistics?.burstQps, durationS: r?.summary.durationS ?? null };
        }),
        runSlo: files.runSlo,
        slo,
        firstTokenDeadlineChanged: opts.overrides.ttftDeadlineS !== undefined,
        tolerance: files.tolerance,
      }
    : null;
  // Under several SLO entries, each also on its own, as the run's per-SLO search judged them.
  const capacity = archive ? { ...capacityFromArchive(archive), perSlo: perSloFromArchive(archive) } : null;
  if (opts.json) {
    const summary = {
      target: files.target,
      kind: files.kind,
      percentileMethod: opts.method,
      slo,
      sloFrom: files.runSloSource ?? 'default (Metron fluidity) and flags',
      firstTokenDeadline,
      fluidityDeadlines: { tbtDeadlineS, ttftSlackS, tieRule: slo.fluidity?.tieRule ?? 'met' },
      tokenArrivals: arrivals,
      requests: records,
      badLines,
      warmupExcluded,
      probes: reports.map((r) => ({ probe: r.probe, qps: r.qps, file: r.file, verdict: verdictWord(r), ...(r.status ?? {}), ...(r.statistics ? { statistics: r.statistics } : {}), ...r.summary })),
      ...(capacity ? { capacity } : {}),
    };
    await out.add(`\n],\n"summary":${JSON.stringify(summary)}}\n`);
  } else {
    // The SLO is spelled out once; everything after names its entries. A run's early stops quote the
    // run's own SLO text: where flags changed an entry, that one is "the run's <name>".
    const defs = sloDefinitions(slo);
    const runDefs = files.runSlo ? sloDefinitions(files.runSlo).map((d) => (defs.some((x) => x.source === d.source) ? d : { ...d, name: `the run's ${d.name}` })) : [];
    const named = [...defs, ...runDefs];
    const header = [
      `fluidcap analyze ${files.target}: ${records} requests in ${reports.length} probe${reports.length === 1 ? '' : 's'}${warmupExcluded ? ` (${warmupExcluded} warm-up excluded)` : ''}`,
      `first-token deadline D_p: ${firstTokenDeadline.text}`,
      `token arrivals: ${arrivals} (${arrivalsFrom}): ${arrivals === 'engine' ? 'when the engine emitted each token, with or without text' : 'when its text reached the reader'}`,
      `SLO (${files.runSloSource ?? 'default'}): ${Object.values(slo).map((x) => x.source).join('; ')}`,
      `percentiles: ${opts.method}, exact; failed requests count against every SLO; decision: the sequential test on the same requests (docs/verdicts.md)`,
    ];
    const evidence = capacity ? new Map(capacity.probes.map((p) => [p.probe, p])) : undefined;
    await out.add(formatTable(reports, header, { defs: named, entries: defs.map((d) => d.name), evidence }).join('\n') + '\n');
    if (capacity) await out.add(['', ...formatArchiveCapacity(capacity, named)].join('\n') + '\n');
    for (const p of capacity?.perSlo ?? []) {
      await out.add(['', ...formatArchiveCapacity(p, named, { under: `${p.name} alone`, probes: true })].join('\n') + '\n');
    }
  }
  await out.flush();
  // Bad lines are bad input (2), as everywhere; the metrics of the valid ones are printed all the same.
  return { probes: reports, capacity, badLines, exitCode: badLines > 0 ? 2 : 0 };
}
