// The results index, `<results>/index.jsonl`: one line per finished run (configuration, recipe
// hash, engine, image digest, GPU, capacity and bracket, date, run directory), so the nightly gate
// and `fluidcap compare --history` find earlier nights of a configuration without opening every
// run. The one module that owns the format: it builds a line from a run directory, appends it,
// reads the file back (torn lines skipped) and rebuilds it from a results folder.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { writeFileIn } from '../util/confinedFs.ts';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { UserError } from '../util/errors.ts';
import { appendJsonLine, readJsonLines } from './jsonFiles.ts';
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
   * What "the same configuration" means across nights: recipe name, engine, model and GPUs. The
   * image and the recipe hash are left out on purpose: a new image or an edited engine setting is
   * what a nightly comparison is there to judge.
   */
  config: string;
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

/** The configuration key of a run from its recipe name, engine, model and GPUs. */
export function configKey(parts: { recipeName: string | null; engine: string | null; model: string | null; gpuProfile: string | null; gpuCount: number | null }): string {
  const gpu = parts.gpuProfile ? `${parts.gpuProfile}×${parts.gpuCount ?? '?'}` : 'no-gpu-profile';
  return [parts.recipeName ?? 'unnamed', parts.engine ?? '?', parts.model ?? '?', gpu].join(' | ');
}

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
  return {
    v: 1,
    config: configKey({ recipeName, engine, model, gpuProfile, gpuCount }),
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

/** The entries of an index file ([] when absent); lines that are not entries are skipped. */
export function readIndex(file: string): IndexEntry[] {
  return readJsonLines(file).flatMap((l) => {
    if (l.v !== 1 || typeof l.config !== 'string' || typeof l.runDir !== 'string' || num(l.capacityQps) === null) return [];
    return [l as unknown as IndexEntry];
  });
}

/** The absolute run directory an entry of the index file `file` points at. */
export function resolveEntryDir(file: string, entry: Pick<IndexEntry, 'runDir'>): string {
  return resolve(resolve(file, '..'), entry.runDir);
}

// Sweeps nest runs (<sweep>/runs/<runId>); deeper than this is not a results folder's layout.
const MAX_DEPTH = 4;

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
      if (name.startsWith('.') || name === 'probes' || name === 'profile') continue;
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
