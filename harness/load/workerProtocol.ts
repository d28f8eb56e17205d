// Messages between runProbe (main thread) and its receiving workers.
import type { DispatchOptions } from './dispatcher.ts';
import type { RawExchange } from './exchange.ts';
import type { PlannedRequest } from './plan.ts';
import type { ThreadCpu } from './threadCpu.ts';

/** Main → worker: start a share of the plan, or stop (cancel in flight, send nothing more). */
export type ToWorker = { type: 'start'; requests: PlannedRequest[]; options: DispatchOptions } | { type: 'stop'; reason: string };

/** Worker → main: a request went out, a request ended, or the share is finished (with event-loop delay). */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'sent'; id: string }
  | { type: 'end'; raw: RawExchange }
  | { type: 'finished'; unsent: number; eldP50Ns: number; eldP99Ns: number; eldMaxNs: number; cpu: ThreadCpu | null; gcPauses: Float64Array };
