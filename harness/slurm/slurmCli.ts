// Slurm's command line as fluidcap uses it: argv arrays for sbatch, squeue, scontrol, scancel,
// srun and sinfo (each word travels quoted over SSH, nothing is pasted into a shell string), and
// parsers for what they print. Pure: nothing here runs a command.
//
// The formats are the plain `--format`/`--Format` ones with a `|` between fields rather than
// `--json`, whose layout changed with every OpenAPI version between Slurm 21 and 24.
import type { SlurmSettings } from '../provision/inventory.ts';

/** What one allocation asks for. */
export interface AllocationRequest {
  /** Slurm job name (shown in squeue); letters, digits, `._-` (others become `-`). */
  jobName: string;
  gpus: number;
}

const JOB_NAME_CHARS = /[^A-Za-z0-9._-]/g;

/** The GPU part of a request: `--gres=gpu[:type]:N` or `--gpus=[type:]N`; none for 0 GPUs. */
export function gpuFlags(s: SlurmSettings, gpus: number): string[] {
  if (gpus <= 0) return [];
  const type = s.gpuType ? `${s.gpuType}:` : '';
  return s.gpuRequest === 'gpus' ? [`--gpus=${type}${gpus}`] : [`--gres=gpu:${type}${gpus}`];
}

/**
 * A held batch job that only sleeps: the allocation. Chosen over `salloc --no-shell` because
 * sbatch returns the job id at once, while the job may still wait in the queue: the id is known
 * (journalled, cancellable on Ctrl-C) for the whole wait, and no SSH channel has to stay open
 * for the allocation to live. Engines start inside it as job steps (`srun --jobid --overlap`)
 * or on its node; the time limit ends it if fluidcap itself is killed.
 */
export function sbatchArgv(s: SlurmSettings, req: AllocationRequest): string[] {
  return [
    'sbatch',
    '--parsable',
    `--job-name=${req.jobName.replace(JOB_NAME_CHARS, '-')}`,
    `--partition=${s.partition}`,
    ...(s.account ? [`--account=${s.account}`] : []),
    ...(s.qos ? [`--qos=${s.qos}`] : []),
    `--time=${s.timeLimit}`,
    ...gpuFlags(s, req.gpus),
    ...(s.constraint ? [`--constraint=${s.constraint}`] : []),
    '--nodes=1',
    '--ntasks=1',
    '--output=/dev/null',
    '--wrap=exec sleep infinity',
  ];
}

export const SQUEUE_FORMAT = '%i|%T|%N|%r|%V|%S';

export function squeueArgv(jobId: string): string[] {
  return ['squeue', '--noheader', `--jobs=${jobId}`, `--format=${SQUEUE_FORMAT}`];
}

export function scontrolShowJobArgv(jobId: string): string[] {
  return ['scontrol', '--details', 'show', 'job', jobId];
}

export function scancelArgv(jobIds: string[]): string[] {
  return ['scancel', ...jobIds];
}

/** The prefix that runs a command as a step of the allocation, beside the sleeping batch step. */
export function srunPrefix(jobId: string): string[] {
  return ['srun', `--jobid=${jobId}`, '--overlap', '--nodes=1', '--ntasks=1'];
}

export const SINFO_FIELDS = ['NodeList', 'Partition', 'StateLong', 'Gres', 'GresUsed', 'Features', 'CPUsState'] as const;

/** One line per node and partition: its state, GPUs (gres), GPUs in use and features. */
export function sinfoNodesArgv(partition?: string): string[] {
  return ['sinfo', '--noheader', '--Node', ...(partition ? [`--partition=${partition}`] : []), `--Format=${SINFO_FIELDS.map((f) => `${f}:|`).join(',')}`];
}

// --- parsers ---------------------------------------------------------------------------------

/** `sbatch --parsable` prints `jobid` or `jobid;cluster`. */
export function parseSbatch(stdout: string): string | null {
  const m = /^(\d+)(;\S+)?$/.exec(stdout.trim());
  return m ? m[1] : null;
}

export type JobState = 'PENDING' | 'CONFIGURING' | 'RUNNING' | 'COMPLETING' | 'GONE' | string;

export interface QueueEntry {
  jobId: string;
  state: JobState;
  /** Node list (`gpu07`, or compressed `gpu[07-08]`); empty while pending. */
  nodes: string;
  /** Why it waits (`Resources`, `Priority`, `QOSMaxJobsPerUserLimit`…); `None` when running. */
  reason: string;
  submitTime: string | null;
  startTime: string | null;
}

const noTime = (t: string | undefined) => (t === undefined || t === '' || t === 'N/A' || t === 'Unknown' || t === 'None' ? null : t);

/** squeue lines in SQUEUE_FORMAT; lines that do not fit are skipped. */
export function parseSqueue(stdout: string): QueueEntry[] {
  const out: QueueEntry[] = [];
  for (const line of stdout.split('\n')) {
    const f = line.trim().split('|');
    if (f.length !== 6 || !/^\d+/.test(f[0])) continue;
    out.push({ jobId: f[0], state: f[1], nodes: f[2], reason: f[3], submitTime: noTime(f[4]), startTime: noTime(f[5]) });
  }
  return out;
}

/** squeue's answer for a job Slurm has already forgotten (its MinJobAge passed). */
export function isUnknownJob(stderr: string): boolean {
  return /Invalid job id specified/i.test(stderr);
}

export interface JobDetails {
  jobId: string;
  state: JobState;
  reason: string;
  nodes: string[];
  submitTime: string | null;
  startTime: string | null;
  /** GPU indices on the node (`GRES=gpu:h100:2(IDX:0-1)`), when Slurm gave some. */
  gpuIndices: number[];
}

/** `scontrol --details show job`: `Key=Value` words; a value ends at the next space. */
export function parseScontrolJob(text: string): JobDetails | null {
  const fields = new Map<string, string>();
  for (const m of text.matchAll(/(?:^|\s)([A-Za-z_/:]+)=(\S*)/g)) if (!fields.has(m[1])) fields.set(m[1], m[2]);
  const jobId = fields.get('JobId');
  if (!jobId) return null;
  const idx = /GRES=gpu[^(\s]*\(IDX:([0-9,-]+)\)/.exec(text);
  return {
    jobId,
    state: fields.get('JobState') ?? 'UNKNOWN',
    reason: fields.get('Reason') ?? '',
    nodes: expandNodeList(fields.get('NodeList') ?? ''),
    submitTime: noTime(fields.get('SubmitTime')),
    startTime: noTime(fields.get('StartTime')),
    gpuIndices: idx ? expandRanges(idx[1]) : [],
  };
}

/** `0-1,3` → [0, 1, 3]. */
export function expandRanges(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (!Number.isInteger(a)) continue;
    for (let i = a; i <= (Number.isInteger(b) ? b : a); i++) out.push(i);
  }
  return out;
}

/** Slurm's compressed host list: `gpu[07-08,10],login1` → gpu07, gpu08, gpu10, login1 (zero padding kept). */
export function expandNodeList(text: string): string[] {
  const out: string[] = [];
  const t = text.trim();
  if (t === '' || t === '(null)') return out;
  for (const m of t.matchAll(/([^,[\]]+)(?:\[([^\]]+)\])?([^,[\]]*)/g)) {
    const [, prefix, ranges, suffix] = m;
    if (!ranges) {
      out.push(prefix + suffix);
      continue;
    }
    for (const part of ranges.split(',')) {
      const [a, b] = part.split('-');
      const width = a.length;
      for (let i = Number(a); i <= Number(b ?? a); i++) out.push(`${prefix}${String(i).padStart(width, '0')}${suffix}`);
    }
  }
  return out;
}

/** Slurm's local timestamp (`2026-11-26T10:39:24`, the cluster's time zone) as seconds between two of them. */
export function secondsBetween(from: string | null, to: string | null): number | null {
  if (from === null || to === null) return null;
  const a = Date.parse(from);
  const b = Date.parse(to);
  return Number.isFinite(a) && Number.isFinite(b) ? (b - a) / 1000 : null;
}

export interface NodeInfo {
  node: string;
  partition: string;
  /** Without sinfo's `*` default-partition mark. */
  defaultPartition: boolean;
  state: string;
  /** Configured GPUs by type (`h100` → 4; an untyped gres is `gpu`). */
  gpus: Record<string, number>;
  gpusUsed: number;
  features: string[];
  /** The node takes new work: idle or mixed, not drained or down. */
  free: boolean;
}

/** `gpu:h100:4(S:0-1),gpu:a100:2` → { h100: 4, a100: 2 }. */
export function parseGres(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of text.split(/,(?![^(]*\))/)) {
    const m = /^gpu(?::([^:(]+))?:(\d+)/.exec(item.trim());
    if (m) out[m[1] ?? 'gpu'] = (out[m[1] ?? 'gpu'] ?? 0) + Number(m[2]);
  }
  return out;
}

/** sinfo lines from sinfoNodesArgv. */
export function parseSinfoNodes(stdout: string): NodeInfo[] {
  const out: NodeInfo[] = [];
  for (const line of stdout.split('\n')) {
    const f = line.trim().split('|');
    if (f.length < SINFO_FIELDS.length) continue;
    const [node, partition, state, gres, gresUsed, features] = f.map((x) => x.trim());
    const gpus = parseGres(gres);
    const gpusUsed = Object.values(parseGres(gresUsed)).reduce((a, b) => a + b, 0);
    const st = state.replace(/[*~#!%$@^-]+$/, '');
    out.push({
      node,
      partition: partition.replace(/\*$/, ''),
      defaultPartition: partition.endsWith('*'),
      state,
      gpus,
      gpusUsed,
      features: features === '(null)' ? [] : features.split(',').filter(Boolean),
      free: (st === 'idle' || st === 'mixed') && gpusUsed < Object.values(gpus).reduce((a, b) => a + b, 0),
    });
  }
  return out;
}
