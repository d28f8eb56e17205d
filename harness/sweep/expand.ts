// A sweep's matrix as its list of configurations (every combination, in the order the file lists
// the fields and values, minus the excluded ones, then the `include` entries), and each configuration as recipe text: the base
// recipe with the matrix values set, comments and layout kept, so the run's recipe.yaml reads like
// the base. Pure: text in, text out.
import { isAbsolute, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { resolveField } from './fields.ts';
import type { SweepFile } from './sweepFile.ts';
import { checkSize } from '../util/sizeBounds.ts';

export type MatrixValue = SweepFile['matrix'][string][number];

/** One combination of matrix values: `c03-maxNumSeqs8-timeScale1`. */
export interface SweepConfig {
  /** Stable within a sweep file: its position and its values; names the recipe and the run. */
  id: string;
  index: number;
  /** Matrix key (as written in the sweep file) → value. */
  values: Record<string, MatrixValue>;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function slugOf(key: string, value: MatrixValue): string {
  const field = key.split('.').pop() ?? key;
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return `${field}${text}`.replace(/[^A-Za-z0-9._]+/g, '_').replace(/_+$/, '').slice(0, 40);
}

/**
 * Every combination of the matrix, minus those matching an `exclude` entry on all the fields it
 * names, then each `include` entry not already among them. With an empty matrix and includes,
 * only the includes run (an empty matrix alone is the base recipe, once).
 */
export function expandMatrix(sweep: Pick<SweepFile, 'matrix' | 'exclude'> & { include?: SweepFile['include']; file?: string }): SweepConfig[] {
  const include = sweep.include ?? [];
  const product = Object.values(sweep.matrix).reduce((n, values) => n * values.length, 1);
  checkSize('sweepConfigurations', product, `${sweep.file ? `${sweep.file}: ` : ''}matrix (${Object.entries(sweep.matrix).map(([k, v]) => `${k}: ${v.length}`).join(' × ')} values)`);
  let combos: Record<string, MatrixValue>[] = Object.keys(sweep.matrix).length === 0 && include.length > 0 ? [] : [{}];
  for (const [key, values] of Object.entries(sweep.matrix)) {
    combos = combos.flatMap((c) => values.map((v) => ({ ...c, [key]: v })));
  }
  const kept = combos.filter((c) => !sweep.exclude.some((ex) => Object.entries(ex).every(([k, v]) => same(c[k], v))));
  const sameCombo = (a: Record<string, MatrixValue>, b: Record<string, MatrixValue>) =>
    Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => same(b[k], v));
  for (const extra of include) if (!kept.some((c) => sameCombo(c, extra))) kept.push({ ...extra });
  const width = String(kept.length).length < 2 ? 2 : String(kept.length).length;
  return kept.map((values, i) => {
    const slug = Object.entries(values).map(([k, v]) => slugOf(k, v)).join('-');
    const index = i + 1;
    return { id: `c${String(index).padStart(width, '0')}${slug ? `-${slug}` : ''}`, index, values };
  });
}

/** Human-readable values of a configuration: `maxNumSeqs=8 timeScale=1`. */
export function describeValues(values: Record<string, MatrixValue>): string {
  const parts = Object.entries(values).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
  return parts.length > 0 ? parts.join(' ') : '(base recipe)';
}

/** What placement adds to a configuration's recipe. */
export interface PlacementFields {
  host?: string;
  gpus?: number[];
  port?: number;
}

/**
 * The base recipe's text with the configuration's values, name and placement set. A relative
 * trace path is made absolute: the configuration's recipe lives in the sweep directory, not
 * beside the base recipe.
 */
export function configRecipeText(baseText: string, baseDir: string, baseName: string, config: SweepConfig, place: PlacementFields = {}): string {
  const doc = parseDocument(baseText);
  // A recipe name is at most 64 characters; the id's leading cNN keeps a shortened name unique.
  const name = `${baseName}-${config.id}`;
  doc.set('name', name.length <= 64 ? name : `${baseName.slice(0, 20)}-${config.id}`.slice(0, 64));
  for (const [key, value] of Object.entries(config.values)) {
    const field = resolveField(key);
    if (!field.ok) throw new Error(`matrix key ${key} passed validation but does not resolve: ${field.message}`);
    doc.setIn(field.path, value);
  }
  if (place.host !== undefined) doc.setIn(['target', 'host'], place.host);
  if (place.gpus !== undefined) doc.setIn(['target', 'gpus'], doc.createNode(place.gpus, { flow: true }));
  if (place.port !== undefined) doc.setIn(['target', 'port'], place.port);
  const trace = doc.getIn(['workload', 'lengths', 'trace']);
  if (typeof trace === 'string' && !isAbsolute(trace)) doc.setIn(['workload', 'lengths', 'trace'], resolve(baseDir, trace));
  return doc.toString();
}

// How a value reads without its field name where the value alone would not say what it is.
const SHORT_FIELDS: Readonly<Record<string, string>> = {
  tensorParallel: 'TP',
  pipelineParallel: 'PP',
  maxNumSeqs: 'seqs',
  maxNumBatchedTokens: 'batchTokens',
  maxModelLen: 'len',
  chunkSize: 'chunk',
  gpuMemoryUtilization: 'mem',
  timeScale: 'timeScale',
};
// Fields whose values name themselves (a scheduler, a model, a GPU profile).
const SELF_NAMED = new Set(['model', 'engine', 'image', 'gpuProfile', 'host', 'scheduler']);

/**
 * Short names of a sweep's configurations for pages and the console, e.g.
 * `c81 h100 TP4 sarathi seqs128 chunk2048`: the id's `cNN` and each value, with a short field name
 * where the value alone does not say what it is. A GPU profile is cut to its first word when that
 * still tells the sweep's profiles apart. Unique (the `cNN` is) and stable (it depends on the
 * matrix only). The ids stay as they are: journals, recipe files and run names are keyed by them.
 */
export function configLabels(configs: readonly { id: string; values: Record<string, unknown> }[]): Map<string, string> {
  const gpuNames = [...new Set(configs.flatMap((c) => Object.entries(c.values).filter(([k]) => k === 'gpuProfile').map(([, v]) => String(v))))];
  const shortGpu = new Set(gpuNames.map((g) => g.split('-')[0])).size === gpuNames.length;
  const part = (key: string, value: unknown): string => {
    const field = key.split('.').pop() ?? key;
    const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
    if (key === 'gpuProfile') return shortGpu ? text.split('-')[0] : text;
    if (SELF_NAMED.has(key)) return text;
    const short = SHORT_FIELDS[key];
    return short ? `${short}${text}` : `${field}=${text}`;
  };
  return new Map(configs.map((c) => [c.id, [c.id.split('-')[0], ...Object.entries(c.values).map(([k, v]) => part(k, v))].join(' ')]));
}
