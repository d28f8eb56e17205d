// The typed contents of every JSON file of a run directory, as this version writes them. Readers
// of older runs convert what they find into these shapes at the edge (read.ts), so the code past
// the reader handles one shape. Pure types: nothing here reads or writes.
import type { ContainerSpec } from '../provision/containerSpec.ts';
import type { ProcessSpec } from '../provision/processSpec.ts';
import type { RecipeBody } from '../recipe/parse.ts';
import type { ProbeResult } from '../load/runProbe.ts';
import type { PromptCacheSpec } from '../load/workloadSpec.ts';
import type { LengthCheck } from '../load/tokenizeCalibration.ts';
import type { KneeWarmupRecord } from '../load/kneeWarmup.ts';
import type { DialectFound } from '../load/dialect.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import type { FluidRateResult } from '../metrics/fluidRate.ts';
import type { RequestSummary } from '../metrics/summary.ts';
import type { SloEvaluation } from '../metrics/sloCheck.ts';
import type { Slo } from '../metrics/slo.ts';
import type { TokenArrivals } from '../timeline/record.ts';

// ---- manifest.json ----------------------------------------------------------------------------

/** How the engine comes up: a local child process (sim without image), a container, a process on a host (runtime process), or nothing. */
export type EngineLaunch =
  | { kind: 'local-process'; argv: string[] }
  | { kind: 'container'; host: string; spec: ContainerSpec }
  | { kind: 'process'; host: string; spec: ProcessSpec }
  | { kind: 'endpoint'; url: string; apiKeyEnv: string | null };

/** The probe settings of a run plan (manifest.json keeps them as resolved). */
export interface ProbeSettings {
  /** A probe plans max(requests, ceil(rate × minDurationS)) requests, cut at durationLimitS. */
  requests: number;
  minDurationS: number;
  durationLimitS: number;
  warmupFraction: number;
  /** Bound on the warm-up of probes near the knee (recipe search.kneeWarmupMax; 0: none); absent in older runs: 10 s. */
  kneeWarmupMaxS?: number;
  requestTimeoutS: number;
  stallTimeoutS: number;
  concurrency: number | null;
  workers: number | null;
  earlyStop: boolean;
  /** null: the load generator's default, min(2 ms, 10% of the TBT deadline). */
  clientToleranceS: number | null;
  /** Ask the server for its running token count on every chunk (recipe search.probe.continuousUsage, or the engine's default). */
  continuousUsage: boolean;
  /** Which arrival of a token the metrics measure (recipe search.probe.tokenArrivals); absent in older runs: engine. */
  tokenArrivals?: TokenArrivals;
  /** Spinning SCHED_IDLE threads beside the receivers (recipe search.probe.keepCoresAwake); absent in older runs: 'auto'. */
  keepCoresAwake?: boolean | 'auto';
  /** Receivers under SCHED_FIFO where allowed (recipe search.probe.realtimeReceivers); absent in older runs: true. */
  realtimeReceivers?: boolean;
}

/** The parts of the resolved plan a reader of the run needs later. */
export interface ManifestPlan {
  engine: EngineLaunch;
  servedModel: string;
  maxContextTokens: number;
  profile: { promptLengths: number[]; repeats: number };
  search: {
    qps: { startQps: number; minQps: number; maxQps: number };
    tolerance: number;
    maxProbes: number;
    /** What set a probe's length (capacity/search.ts bracketStep); absent in runs written before: the bracket doubled. */
    probeLength?: { requests: number; minDurationS: number };
  };
  probe: ProbeSettings;
  /** Absent in runs written before prompts carried a nonce. */
  prompts?: RunPrompts;
  /** How probes were seeded (capacity/runPlan.ts probeSeed); absent in runs written before: 'workload'. */
  probeSeeds?: 'per-rate' | 'workload';
  /** Where probes' load is sent from (recipe `load`, or its default); absent in runs written before: client. */
  load?: LoadPlan;
}

/** Where a run's probes are sent from: load agents beside the engine, or this process. */
export interface LoadPlan {
  from: 'agent' | 'client';
  /** Whether the recipe said so or the engine's placement chose it. */
  chosenBy: 'recipe' | 'default';
  agents: number;
  /** Inventory hosts (or one group) the agents run on; null: the engine's host. */
  hosts: string[] | null;
}

/** How a run's prompts are written: the cache policy (off: the engine's cache-off switches are used) and its nonce. */
export interface RunPrompts {
  cache: PromptCacheSpec;
  /** Random per run, kept on --resume; null until the run starts (a dry run has none). */
  nonce: string | null;
  format: 'token-ids' | 'text';
  tokenIdRange: [number, number] | null;
}

/** What the run found out about prompts once the engine was up (model, sizing, length checks). */
export interface ManifestPrompts extends RunPrompts {
  model: string;
  extraBody: Record<string, unknown>;
  sizing: string | null;
  idOverheadTokens: number | null;
  checks: LengthCheck[];
  notes: string[];
  /** What the server refused of the fields fluidcap adds; absent in runs written before it was probed. */
  dialect?: DialectFound;
}

export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted';

/** Tool version, git commit and Node version that produced the run. */
export interface ToolInfo {
  toolVersion: string;
  gitSha: string | null;
  gitDirty: boolean | null;
  node: string;
}

/** manifest.json: the run's identity, its resolved recipe and plan, host facts and how it ended. */
export interface Manifest extends ToolInfo {
  runId: string;
  recipeFile: string;
  recipeSha256: string;
  seed: number;
  /** Random per run: it goes into every prompt so no engine's prompt cache can serve one (absent in older runs). */
  promptNonce?: string;
  startedAt: string;
  endedAt: string | null;
  status: RunStatus;
  exitReason: string | null;
  /** Seconds the engine held its GPUs, summed over every session of the run (resumes included). */
  engineUpS: number;
  recipe: RecipeBody;
  plan: ManifestPlan;
  /** Facts about the engine and its host (launch kind, image digest, GPUs), once it is up. */
  host: Record<string, unknown> | null;
  /** Set once the engine is up (absent in older runs). */
  prompts?: ManifestPrompts;
  /** The Slurm allocations the run's sessions ran in (runs on a Slurm inventory entry only). */
  slurm?: SlurmAllocationRecord[];
}

/** One Slurm allocation of a run: its job, node and GPU indices, and how long it waited in the queue. */
export interface SlurmAllocationRecord {
  jobId: string;
  partition: string;
  node: string;
  gpuIndices: number[];
  queuedS: number;
  slurmQueuedS: number | null;
  reattached: boolean;
}

/** What a probe's summary and capacity.json keep of its statistical decision (capacity/sloDecision.ts). */
export interface ProbeStatistics {
  decision: 'pass' | 'fail' | 'undecided';
  confidence: number;
  /** The side the evidence favours (= decision when decided). */
  leaning: 'pass' | 'fail';
  /** One line per SLO entry: misses, observations, allowance, indifference zone, clustering. */
  evidence: string;
  /** Each SLO entry's counts, what capacity/interval.ts pools across probes (absent in older runs). */
  parts?: { name: string; observed: number; misses: number; tau: number; allowedFraction: number }[];
  /** The arrival rate the judged requests realized (metrics/arrivalRate.ts), where the interval
   *  reads the probe's token-gap entries; absent in older runs (read at the planned rate) and with fewer than two. */
  arrivalQps?: number;
  /** The rate its judged requests' bursts put it at (capacity/burstRate.ts), where the interval
   *  reads its other entries; absent in older runs (read at arrivalQps) and for trace-timed arrivals. */
  burstQps?: number;
}

// ---- events.jsonl -----------------------------------------------------------------------------

/** A finished probe as the journal records it and capacity.json lists it. */
export interface ProbeOutcome {
  index: number;
  qps: number;
  /** Relative to the run directory; written for people, never read back to find the probe. */
  dir: string;
  passed: boolean;
  valid: boolean;
  requests: number;
  durationS: number;
  earlyStop: string | null;
  sloValue: number | null;
  /**
   * The statistical decision on the same requests (capacity/sloDecision.ts), beside the verdict
   * above, which counts misses against the sample's own nearest-rank budget. Absent in older runs.
   */
  statistics?: ProbeStatistics;
  /** See ProbeSummary.kneeWarmup; absent without one and in older runs. */
  kneeWarmup?: KneeWarmupRecord;
}

export type RunEvent =
  | { type: 'run-started'; runId: string; recipeFile: string; resumed: boolean }
  | { type: 'engine-ready'; baseUrl: string; timeToReadyS: number | null; engine: string }
  /** reusedFrom: the run whose fit was taken instead of profiling (capacity/fitReuse.ts). */
  | { type: 'profile-finished'; points: number; r2: number; reusedFrom?: string }
  | { type: 'probe-started'; index: number; qps: number; dir: string }
  | ({ type: 'probe-finished' } & ProbeOutcome)
  | { type: 'probe-interrupted'; index: number; qps: number; dir: string; movedTo: string }
  | { type: 'search-finished'; capacityQps: number; reason: string }
  /** The warm start moved to the bracket of the twin calibrated to this run (twin-calibration.json). */
  | { type: 'twin-calibrated'; file: string; passQps: number | null; failQps: number | null }
  | { type: 'engine-stopped'; verified: boolean }
  | { type: 'run-finished'; status: 'completed' | 'failed' | 'interrupted'; reason: string };

export type JournalLine = RunEvent & { atIso: string };

// ---- profile/ ---------------------------------------------------------------------------------

/** One line of profile/prefill.jsonl: one isolated prefill. */
export interface PrefillLine {
  seq: number;
  promptTokens: number;
  warmup: boolean;
  /** null for a warm-up request. */
  repeat: number | null;
  /** First token time minus send time; null when the request failed. */
  prefillS: number | null;
  status: string;
  httpStatus: number | null;
  error: string | null;
  usagePromptTokens: number | null;
  /**
   * The connection the request was written on, confirmed open by a GET just before (absent in
   * older runs, whose send times included connection set-up): reused from the pool, or new with
   * its TCP (and TLS) set-up in connectS; confirmS is that GET's round trip, which on a new
   * connection through an SSH tunnel includes opening the channel.
   */
  connectionReused?: boolean | null;
  connectS?: number | null;
  confirmS?: number | null;
}

/** Repeat statistics at one prompt length, kept so the report can show the noise behind the fit. */
export interface LengthStats {
  promptTokens: number;
  count: number;
  meanS: number;
  sdS: number;
  medianS: number;
  /** 1.4826·MAD: the sd of normal noise, not dominated by one outlier. */
  robustSdS: number;
  /** Robust coefficient of variation (robustSdS / median); 0 with a single point. */
  cv: number;
  /** Fitted D_p at this length, for the report's "measured vs fitted" table. */
  fittedS: number;
}

/** The fit, its quality figures, and why it must be refused (empty `problems` = usable). */
export interface PrefillFitResult extends PrefillFit {
  /** Root-mean-square residual in seconds. */
  rmseS: number;
  /** rmseS relative to the mean prefill time. */
  residualCv: number;
  /** Largest coefficient of variation between repeats at one length. */
  maxRepeatCv: number;
  /** Which coefficients the optimum left free (the others are held at 0 by the constraint). */
  freeCoefficients: Array<'a' | 'b' | 'c'>;
  lengths: LengthStats[];
  problems: string[];
  /** Why a fit outside a bound is used all the same (its error is small against the TTFT slack). */
  notes?: string[];
  ok: boolean;
}

/** profile/fit.json: the fit with the TTFT slack the run added to D_p. */
export type FitFile = PrefillFitResult & { ttftSlackS?: number };

// ---- probes/<nn>-qps-<rate>/summary.json ------------------------------------------------------

/** Peaks of the engine's gauges over a probe, and preemptions during it (server-metrics.jsonl). */
export interface ServerMetricsSummary {
  scrapes: number;
  maxRunning: number | null;
  maxWaiting: number | null;
  maxKvUsage: number | null;
  preemptions: number | null;
  /** Counter growth over the probe (absent in older runs): prompt tokens, generated tokens, and
   *  prompt tokens the engine served from its cache (the witness that prompts were not reused). */
  promptTokens?: number | null;
  generationTokens?: number | null;
  cachedPromptTokens?: number | null;
  /** Growth of the prefix-cache lookup counter (tokens), where the engine exports one. */
  prefixCacheQueries?: number | null;
  /** The counter read as cachedPromptTokens, or a sentence starting "no witness" (null in older runs). */
  prefixCacheWitness?: string | null;
}

/** summary.json of a probe of the search. */
export interface ProbeSummary {
  index: number;
  qps: number;
  dir: string;
  passed: boolean;
  /** false when the client's own timing error was beyond tolerance and could flip the verdict. */
  valid: boolean;
  /** Why the verdict is (or is not) trusted, with the client's figures. */
  validity: string;
  /** true when Ctrl-C (or an engine death) ended it: no verdict. */
  interrupted: boolean;
  /** Evaluated requests (warm-up excluded). */
  requests: number;
  planned: number;
  sent: number;
  warmupRequests: number;
  /** How the knee warm-up ended (load/kneeWarmup.ts); null without one; absent in older runs. */
  kneeWarmup?: KneeWarmupRecord | null;
  durationS: number;
  earlyStop: string | null;
  /** See ProbeOutcome.statistics. */
  statistics?: ProbeStatistics;
  /** The recipe SLO's headline value (fluidity at its percentile, else the first SLO's value). */
  sloValue: number | null;
  slo: SloEvaluation;
  /** Each baseline SLO's nearest-rank verdict and statistical decision (statistics absent in older runs). */
  baselines: Record<string, { passed: boolean; results: SloEvaluation['results']; statistics?: ProbeStatistics }>;
  metrics: Omit<RequestSummary, 'slo'>;
  client: ProbeResult['clientHealth'];
  tokenDrift: ProbeResult['tokenDrift'];
  byStatus: ProbeResult['byStatus'];
  /** Requests sent again on a fresh connection after their reused connection closed unread (absent in older runs). */
  retried?: number;
  serverMetrics: ServerMetricsSummary | null;
  seed: number;
  engineDied: string | null;
  /** Why a load agent was lost mid-probe (the probe is then interrupted); absent when none was. */
  agentLost?: string;
  /** Where the probe's load came from, per agent what it planned and sent (absent in older runs: client). */
  load?: { from: 'agent' | 'client'; agents: { host: string; version: string; planned: number; sent: number; clientErrorS: number | null }[] };
  /** The SLO entries the probe's early stop could fire for (absent in older runs: all of them). */
  earlyStopFor?: string[];
  /** When the client check failed: the SLO entries whose fail persists with every deadline loosened by the client's error. */
  clientTrustedFails?: string[];
  /** When the client check failed and the probe passed: the SLO entries whose pass holds with every deadline tightened by the client's error. */
  clientTrustedPasses?: string[];
  /** When the client check failed: how far the client's error could have moved the verdict, and whether it holds (judged in capacity/clientError.ts). */
  clientErrorEffect?: ClientErrorEffect;
}

/** Peaks of one probe's gpu.jsonl (nvidia-smi samples of the target's GPUs). */
export interface GpuTelemetrySummary {
  samples: number;
  maxMemoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
  maxUtilizationPct: number | null;
  maxPowerW: number | null;
}

// ---- capacity.json ----------------------------------------------------------------------------

/** Capacity economics at the found capacity. */
export interface CapacityCost {
  /** Price of the whole deployment: usdPerGpuHour × gpuCount. */
  usdPerHour: number | null;
  /** capacityQps / usdPerHour: requests per second bought by one dollar per hour. */
  qpsPerUsdPerHour: number | null;
  /** Output tokens per second at capacity. */
  outputTokensPerS: number;
  /** Dollars per million output tokens at capacity; null when nothing is generated (capacity 0). */
  usdPerMillionOutputTokens: number | null;
}

/** One SLO definition's own search (capacity/perSloSearch.ts): capacity.json's `perSlo` entry. */
export interface PerSloCapacity {
  /** The SLO entry's name as the recipe names it (fluidity, ttft, tbt, tpot, e2e, schedulingDelay). */
  name: string;
  source: string;
  capacityQps: number;
  bracket: { passQps: number | null; failQps: number | null };
  /** How its search ended (search.ts's outcomes). */
  outcome: string;
  reason: string;
  /** The probes (their numbers) that were evidence for it. */
  probesUsed: number[];
}

/** capacity.json's `interval` (capacity/interval.ts computes it). */
export interface CapacityIntervalJson {
  estimateQps: number | null;
  loQps: number | null;
  hiQps: number | null;
  level: 0.95;
  method: string;
  probesUsed: number;
  loadSeconds: number;
  open: 'none' | 'lo' | 'hi' | 'both';
  /** Each SLO entry's own estimate and interval; the fields above are all of them together. */
  perSlo?: { name: string; estimateQps: number | null; loQps: number | null; hiQps: number | null; open: 'none' | 'lo' | 'hi' | 'both' }[];
}

/** capacity.json: the search's result (SPEC §4). */
export interface CapacityJson {
  runId: string;
  capacityQps: number;
  outcome: string;
  reason: string;
  belowMin: boolean;
  atLeastMax: boolean;
  slo: Slo;
  bracket: { passQps: number | null; failQps: number | null };
  /** The statistical decision of the probes at the bracket's ends (absent in older runs). */
  bracketStatistics?: { passQps: ProbeStatistics | null; failQps: ProbeStatistics | null };
  /**
   * The bracket the statistical decisions alone support: the highest decided pass below the lowest
   * decided fail, with their confidences. Wider than `bracket` when its ends are undecided: the
   * capacity is only known as finely as this (absent in older runs).
   */
  decidedBracket?: { passQps: number | null; failQps: number | null; passConfidence: number | null; failConfidence: number | null };
  /**
   * The capacity as an estimate from every probe's evidence, with its 95% interval
   * (capacity/interval.ts); an end is null, and named in `open`, when the evidence does not bound
   * that side. Absent in older runs.
   */
  interval?: CapacityIntervalJson;
  /**
   * What `run --rehearse` proposed: the search on the simulated twin, first on its roofline model,
   * then (when the run calibrated it) on the model fitted to this run, and how far the real search
   * moved from each. Absent when the run was not rehearsed.
   */
  rehearsals?: RehearsalJson[];
  tolerance: number;
  probes: ProbeOutcome[];
  /** The baseline SLO definitions every probe was also judged under (Metron Fig. 6). */
  baselines: Record<string, Slo>;
  /** Capacity under each baseline SLO: highest probed rate that passed it with every lower probed rate passing too. */
  baselineCapacityQps: Record<string, number | null>;
  /** Each SLO entry of the recipe searched on its own (absent in older runs); capacityQps above stays the combined verdict. */
  perSlo?: PerSloCapacity[];
  fluidTokenRateAtCapacity: FluidRateResult | null;
  warmupFraction: number;
  probeTimeS: number;
  /** GPU time held (engine up to engine released) × GPUs; null when the GPUs are unknown (endpoint). */
  gpuSeconds: number | null;
  /** Present only when the GPU profile has a price and the GPU count is known. */
  costUsd?: number;
  cost: CapacityCost | null;
  /** Why money figures are absent (no GPU profile, no price, GPUs of an endpoint unknown). */
  costNote?: string;
  gpuProfile: string | null;
  gpuCount: number;
}

/** One rehearsal of the search on the twin (capacity.json's `rehearsals`). */
export interface RehearsalJson {
  /** The twin's iteration model: its GPU profile's roofline, or the model calibrated to this run. */
  twin: 'roofline' | 'calibrated';
  /** The probes it ran, in order (virtual seconds of load). */
  probes: { qps: number; passed: boolean; durationS: number }[];
  loadSeconds: number;
  capacityQps: number;
  bracket: { passQps: number | null; failQps: number | null };
  outcome: string;
  reason: string;
  /** Its estimate and 95% interval (null: its probes carried no evidence). */
  interval: Pick<CapacityIntervalJson, 'estimateQps' | 'loQps' | 'hiQps' | 'open'> | null;
  /** How far the real search moved from it, relative to the rehearsal's figure: (real − rehearsed) / rehearsed (null: either is missing). */
  movedBy?: { estimate: number | null; capacity: number | null };
}

// ---- twin-calibration.json --------------------------------------------------------------------

/** The twin's iteration model as fitted to a run (the fields of sim/costModel.ts's LinearCostModel). */
export interface CalibratedModel {
  prefillBaseS: number;
  perPromptTokenS: number;
  perAttentionPairS: number;
  decodeBaseS: number;
  perDecodeS: number;
}

/** Measured vs fitted isolated prefill at one prompt length. */
export interface CalibrationPrefillRow {
  promptTokens: number;
  count: number;
  measuredS: number;
  fittedS: number;
  relError: number;
  /** The twin's model before calibration at this length (null when there was none to compare). */
  uncalibratedS: number | null;
}

/** Measured vs fitted decode iteration time with `decoding` requests generating. */
export interface CalibrationDecodeRow {
  decoding: number;
  gaps: number;
  /** Median inter-token gap (s) in this bin. */
  measuredS: number;
  fittedS: number;
  relError: number;
  uncalibratedS: number | null;
}

/** twin-calibration.json: what the twin was fitted to, the model, and its error per term. */
export interface CalibrationFile {
  /** Run-relative files the calibration read. */
  source: { fit: string; prefill: string; probe: string | null };
  model: CalibratedModel;
  prefill: { points: number; rmseS: number; meanAbsRelError: number; maxAbsRelError: number; rows: CalibrationPrefillRow[] };
  /** null when no probe was measured yet (the decode terms then come from the profile alone). */
  decode: {
    /** Inter-token gaps read, and those used (no other request was in its prefill during them). */
    gaps: number;
    usedGaps: number;
    onlyDecodeGaps: boolean;
    rmseS: number;
    meanAbsRelError: number;
    maxAbsRelError: number;
    rows: CalibrationDecodeRow[];
  } | null;
  /**
   * Out of sample: the probe's requests that had the engine to themselves (nothing else in flight
   * when sent), their first-token time from send over the fitted prefill. Near 1 when the engine
   * under load behaves as in the profile; above 1 when the host slowed it (null: no such request).
   */
  probePrefill: { requests: number; medianRatio: number; p90Ratio: number; maxRatio: number } | null;
  /** Why a term could not be fitted as intended (empty when all went as planned). */
  notes: string[];
}

/** How far a probe's client error could have moved its verdict, and whether the verdict holds. */
export interface ClientErrorEffect {
  /** The probe's measured client error (seconds) every deadline was moved by. */
  errorS: number;
  verdict: 'pass' | 'fail';
  /** A pass is re-judged with deadlines tightened, a fail with them loosened. */
  moved: 'tightened' | 'loosened';
  /** The verdict is the same with every deadline moved against it: it stands. */
  holds: boolean;
  /** The SLO entries whose own fail persists with every deadline loosened (each definition's evidence). */
  failsHolding: string[];
  /** The SLO entries whose own pass persists with their deadlines tightened (each definition's evidence). */
  passesHolding: string[];
  /** One sentence for the report and the console. */
  note: string;
}
