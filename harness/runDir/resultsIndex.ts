// The results index, `<results>/index.jsonl`: one line per finished run (configuration, recipe
// hash, engine, image digest, GPU, capacity and bracket, date, run directory), so the nightly gate
// and `fluidcap compare --history` find earlier nights of a configuration without opening every
// run. The one module that owns the format: it builds a line from a run directory, appends it,
// reads the file back (lines that are no entry reported, not dropped in silence), checks a line
// against the run directory it names, and rebuilds the file from a results folder.
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { writeFileIn } from '../util/confinedFs.ts';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { UserError } from '../util/errors.ts';
import { appendJsonLine } from './jsonFiles.ts';
import { configKey, sloKey } from './configKey.ts';

export { configKey, sloKey };
import { RUN_FILES, runPaths } from './layout.ts';
import { readCapacityFile, readManifest } from './read.ts';

/** The index's file name inside a results folder. */
export const INDEX_FILE = 'index.jsonl';

/** Where the index of the results folder `resultsDir` lives. */
export const indexPath = (resultsDir: string) => join(resultsDir, INDEX_FILE);

/** Where `fluidcap compare --history` draws the index of `resultsDir`: the chart and the table that embeds it. */
export const historyPaths = (resultsDir: string) => ({ svg: join(resultsDir, 'history.svg'), md: join(resultsDir, 'history.md'), svgRel: 'history.svg' });

/** One line of index.jsonl. */
export interface IndexEntry {
  v: 1;
  /**
   * What "the same configuration" means across nights: recipe name, engine, model, GPUs and the
   * SLO (a capacity under another SLO is another quantity). The image and the recipe hash are left
   * out on purpose: a new image or an edited engine setting is what a nightly comparison judges.
   */
  config: string;
  /** The SLO the capacity was measured under, as `sloKey` spells it (absent in older lines). */
  slo?: string | null;
  runId: string;
  /** Relative to the index's folder when inside it, else absolute. */
  runDir: string;
  recipeName: string | null;
  recipeSha256: string | null;
  engine: string | null;
  model: string | null;
  image: string | null;
  imageDigest: string | null;
  gpuProfile: string | null;
  gpuCount: number | null;
  status: string | null;
  outcome: string | null;
  capacityQps: number;
  bracket: { passQps: number | null; failQps: number | null };
  tolerance: number | null;
  qpsPerUsdPerHour: number | null;
  usdPerMillionOutputTokens: number | null;
  gitSha: string | null;
  startedAt: string | null;
  endedAt: string | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/**
 * The SLO of a run that has no capacity.json, from the recipe its manifest keeps: the text as
 * written (durations unparsed), so it names the SLO but matches no finished run's key.
 */
const recipeSloText = (rawSlo: unknown): string | null => (rawSlo === undefined ? null : `as written ${JSON.stringify(rawSlo)}`);

/** The configuration key of a run directory, from capacity.json when it has one, else from manifest.json alone. */
export function runConfigKey(runDir: string): string {
  const paths = runPaths(runDir);
  if (existsSync(paths.capacity)) return indexEntryOf(runDir).config;
  const m = obj(readManifest(paths.manifest));
  const target = obj(obj(m.recipe).target);
  return configKey({
    recipeName: str(obj(m.recipe).name),
    engine: str(target.engine) ?? str(obj(m.host).engine),
    model: str(target.model),
    gpuProfile: str(target.gpuProfile),
    gpuCount: num(target.tensorParallel) ?? (Array.isArray(target.gpus) ? target.gpus.length : null),
    slo: recipeSloText(obj(m.recipe).slo),
  });
}

/** The index line of a finished run directory (one with capacity.json); UserError naming the file otherwise. */
export function indexEntryOf(runDir: string, indexDir?: string): IndexEntry {
  const paths = runPaths(runDir);
  if (!existsSync(paths.capacity)) throw new UserError(`${paths.capacity} does not exist: ${runDir} is not a finished run`);
  const c = obj(readCapacityFile(paths.capacity));
  const m = obj(readManifest(paths.manifest));
  const recipe = obj(m.recipe);
  const target = obj(recipe.target);
  const host = obj(m.host);
  const bracket = obj(c.bracket);
  const cost = obj(c.cost);
  const recipeName = str(recipe.name);
  const engine = str(target.engine) ?? str(host.engine);
  const model = str(target.model);
  const gpuProfile = str(c.gpuProfile) ?? str(target.gpuProfile);
  const gpuCount = num(c.gpuCount) ?? (Array.isArray(target.gpus) ? target.gpus.length : null);
  const abs = resolve(runDir);
  const rel = indexDir ? relative(resolve(indexDir), abs) : null;
  const slo = sloKey(c.slo);
  return {
    v: 1,
    config: configKey({ recipeName, engine, model, gpuProfile, gpuCount, slo }),
    slo,
    runId: str(m.runId) ?? str(c.runId) ?? basename(abs),
    runDir: rel !== null && !rel.startsWith('..') && !isAbsolute(rel) ? rel : abs,
    recipeName,
    recipeSha256: str(m.recipeSha256),
    engine,
    model,
    image: str(host.image) ?? str(target.image),
    imageDigest: str(host.imageDigest) ?? str(host.imageId),
    gpuProfile,
    gpuCount,
    status: str(m.status),
    outcome: str(c.outcome),
    capacityQps: num(c.capacityQps) ?? 0,
    bracket: { passQps: num(bracket.passQps), failQps: num(bracket.failQps) },
    tolerance: num(c.tolerance),
    qpsPerUsdPerHour: num(cost.qpsPerUsdPerHour),
    usdPerMillionOutputTokens: num(cost.usdPerMillionOutputTokens),
    gitSha: str(m.gitSha),
    startedAt: str(m.startedAt),
    endedAt: str(m.endedAt),
  };
}

/**
 * Appends the finished run `runDir` to `<resultsDir>/index.jsonl` (the results folder the run was
 * written under). One call when a run completes; a run already listed is not listed twice.
 */
export function appendToIndex(resultsDir: string, runDir: string): IndexEntry {
  const example = exampleReason(runDir);
  if (example) throw new UserError(`not indexed: ${example}`);
  const entry = indexEntryOf(runDir, resultsDir);
  const file = indexPath(resultsDir);
  const known = readIndex(file).some((e) => resolveEntryDir(file, e) === resolve(runDir));
  if (!known) {
    mkdirSync(resultsDir, { recursive: true });
    appendJsonLine(resultsDir, file, entry);
  }
  return entry;
}

/**
 * The run hook: `indexFinishedRun(opts.outDir, runDir, log)` once a run has written capacity.json.
 * The index is a convenience rebuilt by `fluidcap compare --reindex`, so a failure to append is
 * logged and never fails the run whose data is already safe on disk.
 */
export function indexFinishedRun(resultsDir: string, runDir: string, log: (line: string) => void): void {
  try {
    appendToIndex(resultsDir, runDir);
  } catch (err) {
    log(`results index ${indexPath(resultsDir)} not updated: ${(err as Error).message} (rebuild it with: fluidcap compare --reindex ${resultsDir})`);
  }
}

/** A line of an index file that is not used, and why. */
export interface RejectedLine {
  /** 1-based line number in the file. */
  line: number;
  reason: string;
}

/** Why a parsed line is no index entry, or null when it is one. */
function notAnEntry(l: unknown): string | null {
  if (l === null || typeof l !== 'object' || Array.isArray(l)) return 'not a JSON object';
  const e = l as Record<string, unknown>;
  if (e.v !== 1) return `version ${JSON.stringify(e.v)} is not 1`;
  if (typeof e.config !== 'string') return 'no config';
  if (typeof e.runDir !== 'string' || e.runDir === '') return 'no runDir';
  if (num(e.capacityQps) === null || (e.capacityQps as number) < 0) return `capacityQps ${JSON.stringify(e.capacityQps)} is not a rate`;
  if (typeof e.runId !== 'string') return 'no runId';
  return null;
}

/** The entries of an index file ([] when absent) and every other non-empty line with its reason. */
export function readIndexLines(file: string): { entries: IndexEntry[]; rejected: RejectedLine[] } {
  const entries: IndexEntry[] = [];
  const rejected: RejectedLine[] = [];
  if (!existsSync(file)) return { entries, rejected };
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      if (!text.trim()) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        rejected.push({ line: i + 1, reason: 'not JSON (a torn or edited line)' });
        return;
      }
      const why = notAnEntry(parsed);
      if (why) rejected.push({ line: i + 1, reason: why });
      else entries.push(parsed as IndexEntry);
    });
  return { entries, rejected };
}

/** The entries of an index file ([] when absent); see readIndexLines for the lines left out. */
export function readIndex(file: string): IndexEntry[] {
  return readIndexLines(file).entries;
}

/**
 * Why an index line cannot stand for the run it names, or null when it can: the run directory
 * must exist and still say what the line says (run id, configuration, capacity, bracket). A line
 * copied from elsewhere, edited, or left behind by a deleted or re-run directory is no earlier night.
 */
export function staleEntryReason(file: string, entry: IndexEntry): string | null {
  const dir = resolveEntryDir(file, entry);
  if (!existsSync(dir)) return `run directory ${dir} does not exist`;
  let now: IndexEntry;
  try {
    now = indexEntryOf(dir);
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    return err.message;
  }
  const same = (a: number | null, b: number | null) => (a === null || b === null ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a)));
  if (now.runId !== entry.runId) return `${dir} holds run ${now.runId}, not ${entry.runId}`;
  if (!same(now.capacityQps, entry.capacityQps)) return `capacity ${entry.capacityQps} QPS differs from ${dir}'s capacity.json (${now.capacityQps} QPS)`;
  const b = obj(entry.bracket);
  if (!same(now.bracket.passQps, num(b.passQps)) || !same(now.bracket.failQps, num(b.failQps))) return `bracket differs from ${dir}'s capacity.json`;
  // Lines written before the SLO joined the key differ here too: a rebuilt index has none.
  if (now.config !== entry.config) return `configuration "${entry.config}" differs from the run's own ("${now.config}"; rebuild the index with: fluidcap compare --reindex ${resolve(file, '..')})`;
  return null;
}

/** The absolute run directory an entry of the index file `file` points at. */
export function resolveEntryDir(file: string, entry: Pick<IndexEntry, 'runDir'>): string {
  return resolve(resolve(file, '..'), entry.runDir);
}

// Sweeps nest runs (<sweep>/runs/<runId>); deeper than this is not a results folder's layout.
const MAX_DEPTH = 4;

/** The folder of shipped example runs (results/examples/): not measurements, never indexed. */
export const EXAMPLES_DIR = 'examples';

/** Why a run directory is not a measurement of this project's nights (a shipped example), or null. */
export function exampleReason(runDir: string): string | null {
  const m = obj(readManifest(runPaths(runDir).manifest));
  if (m.synthetic !== undefined) return `${runDir} is a shipped example, not a measurement (${typeof m.synthetic === 'string' ? m.synthetic : 'synthetic'})`;
  return null;
}

/** Every finished run directory (holding capacity.json) under `dir`, oldest start first. */
export function findRunDirs(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string, depth: number) => {
    if (existsSync(join(d, RUN_FILES.capacity))) {
      found.push(d);
      return;
    }
    if (depth >= MAX_DEPTH) return;
    for (const name of readdirSync(d).sort()) {
      if (name.startsWith('.') || name === 'probes' || name === 'profile' || (name === EXAMPLES_DIR && depth === 0)) continue;
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p, depth + 1);
    }
  };
  walk(dir, 0);
  return found;
}

/**
 * Rewrites `<resultsDir>/index.jsonl` from the finished runs found under it, ordered by start
 * time. A run whose files cannot be read is skipped and named in `skipped`, never fatal: the
 * index of every other run is still written.
 */
export function rebuildIndex(resultsDir: string): { file: string; entries: IndexEntry[]; skipped: string[] } {
  if (!existsSync(resultsDir) || !statSync(resultsDir).isDirectory()) throw new UserError(`--reindex: ${resultsDir} is not a directory`);
  const entries: IndexEntry[] = [];
  const skipped: string[] = [];
  for (const dir of findRunDirs(resultsDir)) {
    try {
      const example = exampleReason(dir);
      if (example) {
        skipped.push(example);
        continue;
      }
      entries.push(indexEntryOf(dir, resultsDir));
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      skipped.push(err.message);
    }
  }
  entries.sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? '') || a.runId.localeCompare(b.runId));
  const file = indexPath(resultsDir);
  writeFileIn(resultsDir, file, entries.map((e) => JSON.stringify(e) + '\n').join(''));
  return { file, entries, skipped };
}
