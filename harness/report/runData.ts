// What a report is rendered from: a run directory's files converted once into complete types.
// Runs written by older versions (or by hand, as the committed examples are) carry less, so every
// figure that may be missing is `null` here and the renderer says it is absent; nothing past this
// module guesses at the shape of a file. Pure: the converters take parsed JSON (loadRun reads it).
import type { Slo } from '../metrics/slo.ts';
import type { CapacityIntervalJson, GpuTelemetrySummary, PerSloCapacity, PrefillLine, ProbeStatistics, RehearsalJson, ServerMetricsSummary } from '../runDir/schema.ts';
import type { ProbeDetail } from './probeDetail.ts';

/** What the run was: recipe, engine, model and GPUs, each resolved from capacity.json, else the manifest. */
export interface ReportTarget {
  recipeName: string | null;
  description: string | null;
  engine: string | null;
  model: string | null;
  gpuProfile: string | null;
  gpuCount: number | null;
}

/** Facts about the engine and its host, as the manifest recorded them once the engine was up. */
export interface ReportHost {
  engine: string | null;
  launch: string | null;
  host: string | null;
  access: string | null;
  /** Where probes were sent from (absent in older runs). */
  loadFrom: string | null;
  image: string | null;
  /** The image digest, else the image id. */
  imageDigest: string | null;
  dockerVersion: string | null;
  timeToReadyS: number | null;
  tunnelAddedMsP50: number | null;
  /** What the started engine said it runs (generation, chunked prefill, version); absent in older runs. */
  engineRuns: string | null;
  gpu: { available: boolean; reason: string | null; gpus: { index: number | null; name: string | null; memoryTotalMiB: number | null; driverVersion: string | null }[] } | null;
}

/** manifest.json's provenance and status. */
export interface ReportManifest {
  runId: string | null;
  status: string | null;
  exitReason: string | null;
  toolVersion: string | null;
  gitSha: string | null;
  gitDirty: boolean;
  node: string | null;
  seed: number | null;
  recipeFile: string | null;
  recipeSha256: string | null;
  startedAt: string | null;
  endedAt: string | null;
  target: ReportTarget;
  host: ReportHost | null;
  /** How prompts were written and what the run noted about them (absent in older runs). */
  prompts: { format: string | null; cache: string | null; notes: string[] } | null;
  /** Which arrival of a token the run measured, and whether it asked for a count on every chunk (null: not recorded). */
  tokenArrivals: string | null;
  continuousUsage: boolean | null;
}

/** One scrape of the engine's gauges during a probe (server-metrics.jsonl). */
export interface ServerSample {
  tS: number;
  running: number | null;
  waiting: number | null;
  kvUsage: number | null;
}

/** The fluid token generation rate at capacity. */
export interface ReportFluidRate {
  tokensPerS: number | null;
  note: string | null;
  percentile: number;
  minFluidity: number;
  tbtDeadlineS: number | null;
  resolutionS: number | null;
  search: string | null;
}

/** Capacity economics as capacity.json recorded them. */
export interface ReportCost {
  usdPerHour: number | null;
  qpsPerUsdPerHour: number | null;
  outputTokensPerS: number | null;
  usdPerMillionOutputTokens: number | null;
}

/** capacity.json, complete: SPEC §4's required fields checked by the reader, the rest null when absent. */
export interface ReportCapacity {
  runId: string | null;
  capacityQps: number;
  outcome: string | null;
  reason: string | null;
  belowMin: boolean;
  atLeastMax: boolean;
  slo: Slo;
  bracket: { passQps: number | null; failQps: number | null };
  /** The bracket of the statistical decisions alone (null in older runs). */
  decidedBracket: { passQps: number | null; failQps: number | null; passConfidence: number | null; failConfidence: number | null } | null;
  /** The estimate from every probe's evidence with its 95% interval (null in older runs). */
  interval: CapacityIntervalJson | null;
  /** What `run --rehearse` proposed and how far the run moved from it (empty: not rehearsed). */
  rehearsals: RehearsalJson[];
  tolerance: number | null;
  /** null when the run recorded no baseline SLO verdicts. */
  baselineCapacityQps: Record<string, number | null> | null;
  /** Each SLO entry's own search (capacity.json perSlo); null in runs from before it existed. */
  perSlo: ReportPerSlo[] | null;
  fluidRate: ReportFluidRate | null;
  warmupFraction: number | null;
  probeTimeS: number | null;
  probeCount: number;
  gpuSeconds: number | null;
  costUsd: number | null;
  costNote: string | null;
  cost: ReportCost | null;
  gpuProfile: string | null;
  gpuCount: number | null;
}

/** One SLO result of a baseline definition, as a probe's summary.json recorded it. */
export interface ReportSloResult {
  /** The SLO text as judged (its source), else its name. */
  text: string | null;
  value: number | null;
  note: string | null;
}

/** A probe: its row of capacity.json merged with its summary.json (the row wins where both say). */
export interface ReportProbe {
  /** The probe's number: as recorded, else its position in capacity.json (run order). */
  index: number;
  qps: number;
  /** Whether a summary.json was found and read. */
  hasSummary: boolean;
  passed: boolean | null;
  valid: boolean | null;
  /** Why the client's measurement is not trusted (summary.json's client reason). */
  invalidReason: string | null;
  requests: number | null;
  planned: number | null;
  warmupRequests: number | null;
  durationS: number | null;
  earlyStop: string | null;
  /** The statistical decision on the probe's requests (absent in older runs). */
  statistics: ProbeStatistics | null;
  sloValue: number | null;
  goodputQps: number | null;
  throughputQps: number | null;
  ttftP50S: number | null;
  ttftP99S: number | null;
  tbtP50S: number | null;
  tbtP99S: number | null;
  fluidityP99: number | null;
  fluidityP50: number | null;
  clientErrorS: number | null;
  /** When the client error exceeded its tolerance: how far it could have moved the verdict, and whether the verdict holds (absent in older runs). */
  clientErrorNote: string | null;
  percentileMethod: string | null;
  baselines: Record<string, ReportSloResult[]>;
  serverMetrics: ServerMetricsSummary | null;
  gpu: GpuTelemetrySummary | null;
  /** Token accounting of summary.json (absent in older runs). */
  tokenCounts: { verdict: string | null; note: string | null; multiTokenChunks: number | null } | null;
  /** Requests sent again on a fresh connection. */
  retried: number | null;
  /** Receive − emit of the streamed chunks (the client's own delay), and its p99 and max over the TBT deadline. */
  recvMinusEmit: { p50S: number | null; p99S: number | null; maxS: number | null; p99OfTbtDeadline: number | null; maxOfTbtDeadline: number | null } | null;
  /** The engine's gauges over the probe's time; [] when not scraped. */
  series: ServerSample[];
  /** Figures from the probe's timelines; loaded only for the probes around capacity. */
  detail: ProbeDetail | null;
}

/** profile/fit.json: the coefficients (all three, or the fit is absent) and what else it recorded. */
export interface ReportFit {
  a: number;
  b: number;
  c: number;
  r2: number | null;
  n: number | null;
  rmseS: number | null;
  maxRepeatCv: number | null;
  ttftSlackS: number | null;
  lengths: { promptTokens: number; count: number | null; meanS: number | null; sdS: number | null }[];
}

/** The GPU profile's price as gpu-profiles/<name>.yaml states it. */
export interface GpuPrice {
  usdPerGpuHour: number;
  source: string;
  date: string;
}

/** Everything the renderers need; built by loadRun (I/O) or by tests from literals. */
export interface RunReportData {
  runId: string;
  capacity: ReportCapacity;
  manifest: ReportManifest | null;
  fit: ReportFit | null;
  prefill: PrefillLine[];
  probes: ReportProbe[];
  /** null with a reason when the profile has no price or is unknown here. */
  price: GpuPrice | null;
  priceNote: string | null;
  /** Files that were absent or unreadable; stated in the report instead of failing it. */
  notes: string[];
}

// ---- converters: parsed JSON of any version in, complete types out -------------------------------

type Json = Record<string, unknown>;
const num = (v: unknown): number | null => (typeof v === 'number' && !Number.isNaN(v) ? v : null);
/** One SLO entry's measured capacity (capacity.json perSlo). */
export type ReportPerSlo = PerSloCapacity;

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const has = (v: unknown): boolean => v !== null && typeof v === 'object';

/** capacity.json (its SPEC §4 fields already checked) and the manifest's target for what it lacks. */
export function toReportCapacity(raw: unknown, target: ReportTarget | null): ReportCapacity {
  const c = obj(raw);
  const bracket = obj(c.bracket);
  const f = has(c.fluidTokenRateAtCapacity) ? obj(c.fluidTokenRateAtCapacity) : null;
  const cost = has(c.cost) ? obj(c.cost) : null;
  const caps = has(c.baselineCapacityQps) ? obj(c.baselineCapacityQps) : null;
  return {
    runId: str(c.runId),
    capacityQps: num(c.capacityQps) ?? 0,
    outcome: str(c.outcome),
    reason: str(c.reason),
    belowMin: c.belowMin === true,
    atLeastMax: c.atLeastMax === true,
    slo: obj(c.slo) as Slo,
    bracket: { passQps: num(bracket.passQps), failQps: num(bracket.failQps) },
    decidedBracket: has(c.decidedBracket)
      ? (({ passQps, failQps, passConfidence, failConfidence }) => ({ passQps: num(passQps), failQps: num(failQps), passConfidence: num(passConfidence), failConfidence: num(failConfidence) }))(obj(c.decidedBracket))
      : null,
    interval: has(c.interval) ? intervalOf(obj(c.interval)) : null,
    rehearsals: arr(c.rehearsals).map((v) => rehearsalOf(obj(v))),
    tolerance: num(c.tolerance),
    baselineCapacityQps: caps ? Object.fromEntries(Object.entries(caps).map(([k, v]) => [k, num(v)])) : null,
    perSlo: Array.isArray(c.perSlo)
      ? c.perSlo.map((raw) => {
          const e = obj(raw);
          const b = obj(e.bracket);
          return {
            name: str(e.name) ?? '?',
            source: str(e.source) ?? '',
            capacityQps: num(e.capacityQps) ?? 0,
            bracket: { passQps: num(b.passQps), failQps: num(b.failQps) },
            outcome: str(e.outcome) ?? '?',
            reason: str(e.reason) ?? '',
            probesUsed: arr(e.probesUsed).flatMap((i) => (typeof i === 'number' ? [i] : [])),
          };
        })
      : null,
    fluidRate: f
      ? {
          tokensPerS: num(f.tokensPerS),
          note: str(f.note),
          percentile: num(f.percentile) ?? 99,
          minFluidity: num(f.minFluidity) ?? 0.9,
          tbtDeadlineS: num(f.tbtDeadlineS),
          resolutionS: num(f.resolutionS),
          search: str(f.search),
        }
      : null,
    warmupFraction: num(c.warmupFraction),
    probeTimeS: num(c.probeTimeS),
    probeCount: arr(c.probes).length,
    gpuSeconds: num(c.gpuSeconds),
    costUsd: num(c.costUsd),
    costNote: str(c.costNote),
    cost: cost
      ? {
          usdPerHour: num(cost.usdPerHour),
          qpsPerUsdPerHour: num(cost.qpsPerUsdPerHour),
          outputTokensPerS: num(cost.outputTokensPerS),
          usdPerMillionOutputTokens: num(cost.usdPerMillionOutputTokens),
        }
      : null,
    gpuProfile: str(c.gpuProfile) ?? target?.gpuProfile ?? null,
    gpuCount: num(c.gpuCount) ?? target?.gpuCount ?? null,
  };
}

/** manifest.json of any version. */
export function toReportManifest(raw: unknown): ReportManifest {
  const m = obj(raw);
  const recipe = obj(m.recipe);
  const target = obj(recipe.target);
  const host = has(m.host) ? obj(m.host) : null;
  const gpu = host && has(host.gpu) ? obj(host.gpu) : null;
  return {
    runId: str(m.runId),
    status: str(m.status),
    exitReason: str(m.exitReason),
    toolVersion: str(m.toolVersion),
    gitSha: str(m.gitSha),
    gitDirty: m.gitDirty === true,
    node: str(m.node),
    seed: num(m.seed),
    recipeFile: str(m.recipeFile),
    recipeSha256: str(m.recipeSha256),
    tokenArrivals: str(obj(obj(m.plan).probe).tokenArrivals),
    continuousUsage: typeof obj(obj(m.plan).probe).continuousUsage === 'boolean' ? (obj(obj(m.plan).probe).continuousUsage as boolean) : null,
    startedAt: str(m.startedAt),
    endedAt: str(m.endedAt),
    target: {
      recipeName: str(recipe.name),
      description: str(recipe.description),
      engine: str(target.engine) ?? str(host?.engine),
      model: str(target.model),
      gpuProfile: str(target.gpuProfile),
      gpuCount: num(target.tensorParallel),
    },
    host: host
      ? {
          engine: str(host.engine),
          launch: str(host.launch),
          host: str(host.host),
          access: str(host.access),
          loadFrom: str(host.loadFrom),
          image: str(host.image),
          imageDigest: str(host.imageDigest) ?? str(host.imageId),
          dockerVersion: str(host.dockerVersion),
          timeToReadyS: num(host.timeToReadyS),
          tunnelAddedMsP50: num(obj(host.tunnel).addedMsP50),
          engineRuns: str(host.engineRuns),
          gpu: gpu
            ? {
                available: gpu.available === true,
                reason: str(gpu.reason),
                gpus: arr(gpu.gpus).map((g) => {
                  const o = obj(g);
                  return { index: num(o.index), name: str(o.name), memoryTotalMiB: num(o.memoryTotalMiB), driverVersion: str(o.driverVersion) };
                }),
              }
            : null,
        }
      : null,
    prompts: has(m.prompts)
      ? {
          format: str(obj(m.prompts).format),
          cache: str(obj(obj(m.prompts).cache).mode),
          notes: arr(obj(m.prompts).notes).flatMap((n) => (typeof n === 'string' ? [n] : [])),
        }
      : null,
  };
}

/** A probe from its capacity.json row and (when found) its summary.json and GPU samples. */
export function toReportProbe(
  rowRaw: unknown,
  summaryRaw: unknown | null,
  position: number,
  extra: { serverMetrics: ServerMetricsSummary | null; gpu: GpuTelemetrySummary | null; series?: ServerSample[] },
): ReportProbe {
  const row = obj(rowRaw);
  const s = obj(summaryRaw);
  const m = obj(s.metrics);
  const dist = (k: string) => obj(m[k]);
  const pick = <T>(conv: (v: unknown) => T | null, key: string): T | null => conv(row[key]) ?? conv(s[key]);
  const baselines: Record<string, ReportSloResult[]> = {};
  for (const [name, b] of Object.entries(obj(s.baselines))) {
    baselines[name] = arr(obj(b).results).map((r) => {
      const o = obj(r);
      return { text: str(o.source) ?? str(o.name), value: num(o.value), note: str(o.note) };
    });
  }
  const serverMetrics = has(s.serverMetrics) ? (s.serverMetrics as ServerMetricsSummary) : extra.serverMetrics;
  return {
    index: num(row.index) ?? num(s.index) ?? position,
    qps: num(row.qps) ?? 0,
    hasSummary: summaryRaw !== null,
    passed: pick(bool, 'passed'),
    valid: pick(bool, 'valid'),
    invalidReason: str(s.validity) ?? str(obj(s.client).reason),
    requests: pick(num, 'requests'),
    planned: num(s.planned),
    warmupRequests: num(s.warmupRequests),
    durationS: pick(num, 'durationS'),
    earlyStop: pick(str, 'earlyStop'),
    statistics: statisticsOf(row.statistics) ?? statisticsOf(s.statistics),
    sloValue: pick(num, 'sloValue'),
    goodputQps: num(m.goodputQps),
    throughputQps: num(m.requestThroughputQps),
    ttftP50S: num(dist('ttftS').p50),
    ttftP99S: num(dist('ttftS').p99),
    tbtP50S: num(dist('tbtS').p50),
    tbtP99S: num(dist('tbtS').p99),
    fluidityP99: num(dist('fluidity').p99),
    fluidityP50: num(dist('fluidity').p50),
    clientErrorS: num(obj(s.client).clientErrorS),
    clientErrorNote: str(obj(s.clientErrorEffect).note),
    percentileMethod: str(m.percentileMethod) ?? str(obj(s.slo).method),
    baselines,
    serverMetrics,
    gpu: extra.gpu,
    tokenCounts: has(s.tokenDrift)
      ? { verdict: str(obj(s.tokenDrift).verdict), note: str(obj(s.tokenDrift).note), multiTokenChunks: num(obj(s.tokenDrift).multiTokenChunks) }
      : null,
    retried: num(s.retried),
    recvMinusEmit: has(obj(s.client).recvMinusEmit)
      ? (() => {
          const r = obj(obj(s.client).recvMinusEmit);
          return { p50S: num(r.p50S), p99S: num(r.p99S), maxS: num(r.maxS), p99OfTbtDeadline: num(r.p99OfTbtDeadline), maxOfTbtDeadline: num(r.maxOfTbtDeadline) };
        })()
      : null,
    series: extra.series ?? [],
    detail: null,
  };
}

/** Rows of server-metrics.jsonl as samples; rows without a time are skipped. */
export function toServerSamples(rows: readonly Record<string, unknown>[]): ServerSample[] {
  return rows.flatMap((r) => (num(r.tS) === null ? [] : [{ tS: r.tS as number, running: num(r.running), waiting: num(r.waiting), kvUsage: num(r.kvUsage) }]));
}

/** profile/fit.json; null unless it has all three coefficients. */
export function toReportFit(raw: unknown): ReportFit | null {
  const f = obj(raw);
  const a = num(f.a);
  const b = num(f.b);
  const c = num(f.c);
  if (a === null || b === null || c === null) return null;
  return {
    a,
    b,
    c,
    r2: num(f.r2),
    n: num(f.n),
    rmseS: num(f.rmseS),
    maxRepeatCv: num(f.maxRepeatCv),
    ttftSlackS: num(f.ttftSlackS),
    lengths: arr(f.lengths)
      .map(obj)
      .filter((l) => num(l.promptTokens) !== null)
      .map((l) => ({ promptTokens: l.promptTokens as number, count: num(l.count), meanS: num(l.meanS), sdS: num(l.sdS) })),
  };
}

function statisticsOf(v: unknown): ProbeStatistics | null {
  const o = obj(v);
  const decision = str(o.decision);
  const confidence = num(o.confidence);
  if ((decision !== 'pass' && decision !== 'fail' && decision !== 'undecided') || confidence === null) return null;
  const leaning = str(o.leaning) === 'fail' ? 'fail' : 'pass';
  const positive = (x: number | null): x is number => x !== null && x > 0;
  const [arrivalQps, burstQps] = [num(o.arrivalQps), num(o.burstQps)];
  return { decision, confidence, leaning, evidence: str(o.evidence) ?? '', ...(positive(arrivalQps) ? { arrivalQps } : {}), ...(positive(burstQps) ? { burstQps } : {}) };
}

function rehearsalOf(r: Record<string, unknown>): RehearsalJson {
  const b = obj(r.bracket);
  const iv = has(r.interval) ? obj(r.interval) : null;
  const moved = has(r.movedBy) ? obj(r.movedBy) : null;
  return {
    twin: r.twin === 'calibrated' ? 'calibrated' : 'roofline',
    probes: arr(r.probes).map((v) => obj(v)).map((p) => ({ qps: num(p.qps) ?? 0, passed: p.passed === true, durationS: num(p.durationS) ?? 0 })),
    loadSeconds: num(r.loadSeconds) ?? 0,
    capacityQps: num(r.capacityQps) ?? 0,
    bracket: { passQps: num(b.passQps), failQps: num(b.failQps) },
    outcome: str(r.outcome) ?? '',
    reason: str(r.reason) ?? '',
    interval: iv ? { estimateQps: num(iv.estimateQps), loQps: num(iv.loQps), hiQps: num(iv.hiQps), open: iv.open === 'none' || iv.open === 'lo' || iv.open === 'hi' ? iv.open : 'both' } : null,
    ...(moved ? { movedBy: { estimate: num(moved.estimate), capacity: num(moved.capacity) } } : {}),
  };
}

function intervalOf(iv: Record<string, unknown>): CapacityIntervalJson {
  const open = iv.open === 'none' || iv.open === 'lo' || iv.open === 'hi' ? iv.open : 'both';
  return {
    estimateQps: num(iv.estimateQps),
    loQps: num(iv.loQps),
    hiQps: num(iv.hiQps),
    level: 0.95,
    method: str(iv.method) ?? '',
    probesUsed: num(iv.probesUsed) ?? 0,
    loadSeconds: num(iv.loadSeconds) ?? 0,
    open,
  };
}
