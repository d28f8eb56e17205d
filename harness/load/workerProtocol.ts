// Messages between runProbe (main thread), its receiving workers and its decoding worker.
import type { MessagePort } from 'node:worker_threads';
import type { DispatchOptions } from './dispatcher.ts';
import type { RawExchange } from './exchange.ts';
import type { PlannedRequest } from './plan.ts';
import type { ThreadCpu } from './threadCpu.ts';
import type { TimelineRecord } from '../timeline/record.ts';

/**
 * Main → receiving worker: start a share of the plan, handing each ended exchange to `decoder`,
 * stop (cancel in flight, send nothing more), or limit (drop the requests from plan index `planned` on).
 */
export type ToWorker =
  | { type: 'start'; requests: PlannedRequest[]; options: DispatchOptions; decoder: MessagePort }
  | { type: 'stop'; reason: string }
  | { type: 'limit'; planned: number };

/** Receiving worker → main: ready, a request went out, or the share is finished (with its loop's health). */
export type FromWorker =
  | { type: 'ready'; threadId: number | null }
  | { type: 'sent'; id: string }
  | { type: 'finished'; unsent: number; eldP50Ns: number; eldP99Ns: number; eldMaxNs: number; cpu: ThreadCpu | null; gcPauses: Float64Array };

/** Receiving worker → decoding worker: exchanges that ended (buffers transferred), or no more. */
export type ReceiverToDecoder = { type: 'raw'; raws: RawExchange[] } | { type: 'done' };

/** Main → decoding worker: the probe's start and one port per receiving worker. */
export type ToDecoder = { type: 'start'; startNs: bigint; receivers: MessagePort[] };

/** Decoding worker → main: a decoded record with its client-timing samples, or every receiver is done. */
export type FromDecoder =
  | { type: 'ready' }
  | { type: 'decoded'; index: number; record: TimelineRecord; lagNs: number | null; recvMinusEmitNs: Float64Array; recvNs: Float64Array }
  | { type: 'drained' };
