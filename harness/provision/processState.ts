// An engine run as a process leaves its state on its host, one directory per run under a root
// (default `~/.cache/fluidcap/engines/<runId>/`), so teardown, a later attempt of the run and
// `fluidcap clean` find it without fluidcap's memory:
//   pid          the process group's id (its leader: the shell that waits for the engine)
//   labels.json  what the engine is (this module's format; the container's labels, its command)
//   engine.log   the engine's stdout and stderr
//   exit         the engine's exit code, once it ended on its own
//   boot         the host's boot id at start (a later boot has no such process)
// Every process of the group carries FLUIDCAP_ENGINE_STATE=<that directory> in its environment:
// a group id read from a file is signalled only when a process of that group carries it.
// Pure: text in, data out; the shell side is processScripts.ts.
import { UserError, describeValue, printable } from '../util/errors.ts';
import { RUN_ID_RE } from './containerSpec.ts';

/** Where state directories live on a host when the caller names no other root (`~/` = the SSH user's home). */
export const DEFAULT_STATE_ROOT = '~/.cache/fluidcap/engines';
/** The environment variable that marks every process of an engine's group. */
export const STATE_ENV = 'FLUIDCAP_ENGINE_STATE';
export const LABELS_FORMAT = 'fluidcap-engine-process/1';

/** What labels.json holds. */
export interface ProcessLabels {
  format: typeof LABELS_FORMAT;
  runId: string;
  /** The container name the same engine would have (fluidcap-<runId>-<engine>). */
  name: string;
  engine: string;
  port: number;
  labels: Record<string, string>;
  /** The whole argv (launcher prefix, command, flags). */
  argv: string[];
  startedAt: string;
}

/** `<root>/<runId>`; the run id is checked, so the path never leaves the root. */
export function stateDirOf(root: string, runId: string): string {
  if (!RUN_ID_RE.test(runId)) throw new Error(`run id ${describeValue(runId)} cannot name a state directory`);
  if (!root.startsWith('/')) throw new Error(`state root ${describeValue(root)} must be an absolute path`);
  return `${root.replace(/\/+$/, '')}/${runId}`;
}

export function formatLabels(l: Omit<ProcessLabels, 'format'>): string {
  return JSON.stringify({ format: LABELS_FORMAT, ...l });
}

/** labels.json's content, or why it is not one (the file was written by another version, or by someone else). */
export function parseLabels(text: string): ProcessLabels | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { problem: `not JSON: ${describeValue(text.slice(0, 80))}` };
  }
  const o = v as Partial<ProcessLabels> | null;
  if (o === null || typeof o !== 'object' || o.format !== LABELS_FORMAT) return { problem: `format is not ${LABELS_FORMAT}` };
  const strings = (x: unknown) => typeof x === 'object' && x !== null && Object.values(x).every((s) => typeof s === 'string');
  if (typeof o.runId !== 'string' || !RUN_ID_RE.test(o.runId)) return { problem: `runId ${describeValue(o.runId)} is not a run id` };
  if (typeof o.name !== 'string' || typeof o.engine !== 'string' || typeof o.startedAt !== 'string') return { problem: 'name, engine or startedAt is not text' };
  if (!Number.isInteger(o.port)) return { problem: `port ${describeValue(o.port)} is not a whole number` };
  if (!strings(o.labels) || !Array.isArray(o.argv) || !strings(o.argv)) return { problem: 'labels or argv are not text' };
  return { ...(o as ProcessLabels), name: printable(o.name) };
}

/** A process id as a pid file holds it (decimal digits, above 1), or null. */
export function parsePid(text: string): number | null {
  const t = text.trim();
  if (!/^[0-9]{1,10}$/.test(t)) return null;
  const n = Number(t);
  return n > 1 && n < 2 ** 31 ? n : null;
}

/** The entries of a state root's listing that may be run directories, and those that may not (reported, never touched). */
export function stateEntries(listing: string, runId?: string): { runIds: string[]; refused: string[] } {
  const runIds: string[] = [];
  const refused: string[] = [];
  for (const name of listing.split('\n')) {
    if (name === '') continue;
    if (!RUN_ID_RE.test(name)) refused.push(printable(name));
    else if (runId === undefined || name === runId) runIds.push(name);
  }
  return { runIds, refused };
}

/** What stopping a state directory's process group found, as the stop script prints it. */
export type StopOutcome =
  | { kind: 'none' }
  | { kind: 'gone'; pgid: number }
  | { kind: 'stopped'; pgid: number; killed: boolean }
  | { kind: 'stale'; pgid: number }
  | { kind: 'remaining'; pgid: number };

/** The stop script's last line as data; null when it printed something else. */
export function parseStopOutcome(stdout: string): StopOutcome | null {
  const line = stdout.trim().split('\n').pop() ?? '';
  const m = /^(none|gone|stopped|stale|remaining)(?: ([0-9]+))?( killed)?$/.exec(line);
  if (!m) return null;
  if (m[1] === 'none') return { kind: 'none' };
  const pgid = parsePid(m[2] ?? '');
  if (pgid === null) return null;
  if (m[1] === 'stopped') return { kind: 'stopped', pgid, killed: m[3] !== undefined };
  return { kind: m[1] as 'gone' | 'stale' | 'remaining', pgid };
}

/** The environment a process starts with, as the start script reads it from stdin: one NAME=value line each. */
export function envLines(env: Record<string, string>, describe: (name: string) => string): string {
  let out = '';
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UserError(`${describe(name)}: ${describeValue(name)} is not an environment variable name`);
    if (value.includes('\n') || value.includes('\0')) throw new UserError(`${describe(name)}: the value must not contain a line break or NUL (the engine's environment is passed one line per variable)`);
    out += `${name}=${value}\n`;
  }
  return out;
}
