// Client health and token-count drift, stated in every probe summary: numbers a probe must not
// be trusted without. Pure: computed from records and the workers' loop-delay figures.
import { percentiles } from '../metrics/percentile.ts';
import type { TimelineRecord } from '../timeline/record.ts';
import type { ThreadCpu } from './threadCpu.ts';

/** The client's own timing error and whether the probe can be trusted with it. */
export interface ClientHealth {
  eventLoopDelayP99S: number;
  eventLoopDelayMaxS: number;
  dispatchLagP99S: number | null;
  dispatchLagMaxS: number | null;
  /** Receive time minus the engine's emit time per chunk; null when the engine sends no `fluidcap_emit_ns`. */
  recvMinusEmit: { p50S: number; p99S: number; maxS: number; samples: number; p50OfTbtDeadline?: number; p99OfTbtDeadline?: number; maxOfTbtDeadline?: number } | null;
  /** The error compared with the tolerance: max(receive − emit p99 (or loop delay p99 without it), dispatch lag p99). */
  clientErrorS: number;
  toleranceS: number;
  verdict: 'valid' | 'invalid';
  reason: string;
  /**
   * The receiving loops' threads, summed: time run, time spent runnable waiting for a CPU, and that
   * wait per wake-up (null off Linux). A wait per wake-up near the client error means the machine,
   * not the client's work, made it late.
   */
  cpuWait?: { runS: number; runnableWaitS: number; waitPerWakeS: number } | null;
  /**
   * Garbage-collection pauses of the receiving loops, and the share of the receive − emit tail
   * (samples at or above its p99) whose wait overlapped one: how much of the tail they explain.
   */
  gc?: { pauses: number; totalS: number; maxS: number; tailSamples: number; tailInGcShare: number | null } | null;
  /** Spinning SCHED_IDLE threads that kept the receivers' CPUs from idling (keepAwake.ts); 0 when off or not possible. */
  coresKeptAwake?: number;
  /** Receiving threads that ran under SCHED_FIFO (threadPriority.ts); 0 when off or not allowed. */
  realtimeReceivers?: number;
  /** The engine-log relay's share of the probe (bytes, lines, main-thread time), where a log is followed. */
  logRelay?: LogRelayShare;
  /** The SSH tunnel's share of the probe, where this process sent the load through one. */
  tunnelRelay?: TunnelRelayShare;
}

/** The engine-log relay's cumulative counters (provision/logStream.ts), as a probe reads them. */
export interface LogRelayCounters {
  bytes: number;
  lines: number;
  busyS: number;
  pausedS: number;
  droppedBytes: number;
}

/** The log relay's share of one probe: what was relayed and the main-thread time it took. */
export interface LogRelayShare {
  bytes: number;
  lines: number;
  /** Main-thread time spent relaying (the log connection's reads and decryption, the handler). */
  busyS: number;
  /** busyS over the probe's duration: the share of the main thread the log took. */
  busyShare: number;
  /** Time reading was held back by the relay's byte-rate bound (the log then lags the engine). */
  pausedS: number;
  droppedBytes: number;
}

/** The difference between two readings of the relay's counters, over a probe of `durationS`. */
export function logRelayShare(before: LogRelayCounters, after: LogRelayCounters, durationS: number): LogRelayShare {
  const busyS = after.busyS - before.busyS;
  return {
    bytes: after.bytes - before.bytes,
    lines: after.lines - before.lines,
    busyS: round(busyS),
    busyShare: durationS > 0 ? Math.round((busyS / durationS) * 1e6) / 1e6 : 0,
    pausedS: round(after.pausedS - before.pausedS),
    droppedBytes: after.droppedBytes - before.droppedBytes,
  };
}

/** The SSH tunnel's cumulative counters (provision/sshTunnel.ts), as a probe reads them. */
export interface TunnelRelayCounters {
  bytesFromEngine: number;
  bytesToEngine: number;
  channels: number;
  openS: number;
}

/**
 * The SSH tunnel's share of one probe. Every byte the engine sends is decrypted and written to a
 * receiving worker's socket on the main thread, so the main thread's event-loop delay is the time
 * a token can wait in the relay before the worker's clock sees it.
 */
export interface TunnelRelayShare {
  bytesFromEngine: number;
  bytesToEngine: number;
  /** Channels opened during the probe (one per new connection) and the time spent opening them. */
  channels: number;
  openS: number;
  mainLoopDelayP99S: number;
  mainLoopDelayMaxS: number;
}

/** The difference between two readings of the tunnel's counters, with the main thread's loop delay over the probe (ns). */
export function tunnelRelayShare(before: TunnelRelayCounters, after: TunnelRelayCounters, mainLoopDelay: { p99Ns: number; maxNs: number }): TunnelRelayShare {
  return {
    bytesFromEngine: after.bytesFromEngine - before.bytesFromEngine,
    bytesToEngine: after.bytesToEngine - before.bytesToEngine,
    channels: after.channels - before.channels,
    openS: round(after.openS - before.openS),
    mainLoopDelayP99S: round(mainLoopDelay.p99Ns / 1e9),
    mainLoopDelayMaxS: round(mainLoopDelay.maxNs / 1e9),
  };
}

/** Default tolerance: 2 ms or 10% of the TBT deadline, whichever is smaller. */
export function defaultClientToleranceS(tbtDeadlineS?: number): number {
  return tbtDeadlineS === undefined ? 0.002 : Math.min(0.002, 0.1 * tbtDeadlineS);
}

const round = (s: number) => Math.round(s * 1e7) / 1e7;

/** Judges client health from per-loop delay p99s (ns), dispatch lags (s) and receive − emit samples (ns). */
export function judgeClientHealth(input: {
  eldP99Ns: number[];
  eldMaxNs: number[];
  dispatchLagS: ArrayLike<number>;
  recvMinusEmitNs: ArrayLike<number>;
  toleranceS: number;
  /** Per receiving loop, its thread's scheduler figures over the probe (null where unknown). */
  loopCpu?: (ThreadCpu | null)[];
  /** Per receiving loop, its GC pauses as flattened [start ns, duration ns] pairs on the probe clock. */
  gcPausesNs?: ArrayLike<number>[];
  /** Receive time (ns on the probe clock) of each receive − emit sample, in the same order. */
  recvNs?: ArrayLike<number>;
  /** The SLO's TBT deadline: receive − emit p99 is also stated as a fraction of it. */
  tbtDeadlineS?: number;
  /** The engine-log relay's share of this probe, where a log is followed. */
  logRelay?: LogRelayShare;
  /** The SSH tunnel's share, where the load went through one: its main-thread delay counts in the client error. */
  tunnelRelay?: TunnelRelayShare;
}): ClientHealth {
  const eldP99S = Math.max(0, ...input.eldP99Ns) / 1e9;
  const eldMaxS = Math.max(0, ...input.eldMaxNs) / 1e9;
  const lag = input.dispatchLagS.length > 0 ? percentiles(input.dispatchLagS, [99, 100]) : null;
  const rme = input.recvMinusEmitNs.length > 0 ? percentiles(input.recvMinusEmitNs, [50, 99, 100]) : null;
  const recvMinusEmit: ClientHealth['recvMinusEmit'] = rme ? { p50S: round(rme[50] / 1e9), p99S: round(rme[99] / 1e9), maxS: round(rme[100] / 1e9), samples: input.recvMinusEmitNs.length } : null;
  // How much of a TBT deadline the client's own error takes up, typically, at p99 and at worst.
  const ofDeadline = (s: number) => Math.round((s / input.tbtDeadlineS!) * 1000) / 1000;
  if (recvMinusEmit && input.tbtDeadlineS) {
    recvMinusEmit.p50OfTbtDeadline = ofDeadline(recvMinusEmit.p50S);
    recvMinusEmit.p99OfTbtDeadline = ofDeadline(recvMinusEmit.p99S);
    recvMinusEmit.maxOfTbtDeadline = ofDeadline(recvMinusEmit.maxS);
  }
  const timingErrorS = recvMinusEmit ? recvMinusEmit.p99S : eldP99S;
  const lagP99S = lag ? lag[99] : 0;
  const tr = input.tunnelRelay;
  // A receiving worker's own loop delay misses the relay's wait (its bytes reach the socket late),
  // and receive − emit holds it only for an engine that stamps emits on this machine's clock: the
  // main thread's delay, what any relayed byte can wait, counts on its own.
  const clientErrorS = Math.max(timingErrorS, lagP99S, tr ? tr.mainLoopDelayP99S : 0);
  const valid = clientErrorS <= input.toleranceS;
  const what = recvMinusEmit ? 'receive−emit p99' : 'event-loop delay p99 (engine sends no emit times)';
  const known = (input.loopCpu ?? []).filter((c): c is ThreadCpu => c !== null);
  const cpuWait =
    known.length > 0 && known.length === (input.loopCpu ?? []).length
      ? (() => {
          const run = known.reduce((s, c) => s + c.runNs, 0);
          const wait = known.reduce((s, c) => s + c.waitNs, 0);
          const slices = known.reduce((s, c) => s + c.slices, 0);
          return { runS: round(run / 1e9), runnableWaitS: round(wait / 1e9), waitPerWakeS: round(slices > 0 ? wait / slices / 1e9 : 0) };
        })()
      : null;
  const contention = cpuWait && cpuWait.runnableWaitS > 0 ? `; its receiving threads waited ${ms(cpuWait.waitPerWakeS)} per wake-up for a CPU (${Math.round(cpuWait.runnableWaitS * 1000)} ms waiting, ${Math.round(cpuWait.runS * 1000)} ms running)` : '';
  const share = (f: number | undefined) => `${((f ?? 0) * 100).toFixed(1)}%`;
  const spread = recvMinusEmit
    ? `; receive−emit p50/p99/max ${ms(recvMinusEmit.p50S)} / ${ms(recvMinusEmit.p99S)} / ${ms(recvMinusEmit.maxS)}${
        input.tbtDeadlineS ? ` = ${share(recvMinusEmit.p50OfTbtDeadline)} / ${share(recvMinusEmit.p99OfTbtDeadline)} / ${share(recvMinusEmit.maxOfTbtDeadline)} of the ${ms(input.tbtDeadlineS)} TBT deadline` : ''
      }`
    : '';
  const lr = input.logRelay;
  const relay = lr
    ? `; engine log relayed ${lr.bytes} bytes, ${lr.lines} lines, ${ms(lr.busyS)} of main-thread time (${(lr.busyShare * 100).toFixed(2)}%)${lr.pausedS > 0 ? `, held back ${lr.pausedS.toFixed(2)} s by its rate bound` : ''}`
    : '';
  const tunnel = tr
    ? `; tokens relayed through the SSH tunnel: ${tr.bytesFromEngine} bytes, main-thread delay p99 ${ms(tr.mainLoopDelayP99S)} (max ${ms(tr.mainLoopDelayMaxS)})${tr.channels > 0 ? `, ${tr.channels} channels opened in ${ms(tr.openS)}` : ''}`
    : '';
  const reason = valid
    ? `client error ${ms(clientErrorS)} within tolerance ${ms(input.toleranceS)} (${what} ${ms(timingErrorS)}, dispatch lag p99 ${ms(lagP99S)}${spread}${tunnel}${relay})`
    : `client error ${ms(clientErrorS)} exceeds tolerance ${ms(input.toleranceS)} (${what} ${ms(timingErrorS)}, dispatch lag p99 ${ms(lagP99S)}${spread}${contention}${tunnel}${relay}): numbers from this probe are not trusted`;
  return {
    eventLoopDelayP99S: round(eldP99S),
    eventLoopDelayMaxS: round(eldMaxS),
    dispatchLagP99S: lag ? round(lag[99]) : null,
    dispatchLagMaxS: lag ? round(lag[100]) : null,
    recvMinusEmit,
    clientErrorS: round(clientErrorS),
    toleranceS: input.toleranceS,
    verdict: valid ? 'valid' : 'invalid',
    reason,
    cpuWait,
    gc: input.gcPausesNs ? gcFigures(input.gcPausesNs, input.recvMinusEmitNs, input.recvNs, rme ? rme[99] : null) : null,
    ...(lr ? { logRelay: lr } : {}),
    ...(tr ? { tunnelRelay: tr } : {}),
  };
}

/** GC pause totals and the share of tail samples (receive − emit >= its p99) whose wait overlapped a pause. */
function gcFigures(perLoop: ArrayLike<number>[], rmeNs: ArrayLike<number>, recvNs: ArrayLike<number> | undefined, p99Ns: number | null): NonNullable<ClientHealth['gc']> {
  const starts: number[] = [];
  const ends: number[] = [];
  let total = 0;
  let max = 0;
  for (const pairs of perLoop) {
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      starts.push(pairs[i]);
      ends.push(pairs[i] + pairs[i + 1]);
      total += pairs[i + 1];
      max = Math.max(max, pairs[i + 1]);
    }
  }
  let tail = 0;
  let inGc = 0;
  if (p99Ns !== null && recvNs && recvNs.length === rmeNs.length) {
    for (let j = 0; j < rmeNs.length; j++) {
      if (rmeNs[j] < p99Ns) continue;
      tail++;
      const recv = recvNs[j];
      const emitted = recv - rmeNs[j];
      for (let i = 0; i < starts.length; i++) {
        if (starts[i] < recv && ends[i] > emitted) {
          inGc++;
          break;
        }
      }
    }
  }
  return { pauses: starts.length, totalS: round(total / 1e9), maxS: round(max / 1e9), tailSamples: tail, tailInGcShare: tail > 0 ? Math.round((inGc / tail) * 1000) / 1000 : null };
}

const ms = (s: number) => `${(s * 1000).toFixed(3)} ms`;

/** Whether the engine produced the token counts asked for, per the server's `usage`. */
export interface TokenDrift {
  tolerance: number;
  /** Ok requests whose usage could be compared. */
  checked: number;
  usageMissing: number;
  promptOutside: number;
  outputOutside: number;
  /** Ok requests whose usage could not be reconciled with the streamed chunks (or was implausible). */
  unreconciled: number;
  /** Ok requests whose per-chunk counts the server stated (exact) or the client inferred; older timelines count as inferred. */
  exactCounts: number;
  inferredCounts: number;
  /** Chunks (of ok requests) that carried more than one token. */
  multiTokenChunks: number;
  maxPromptDriftFrac: number;
  maxOutputDriftFrac: number;
  /** `drift` makes the probe invalid: its lengths or counts are not what the SLO was judged on. */
  verdict: 'ok' | 'drift' | 'unmeasured';
  note: string;
}

/**
 * Compares requested with reported token counts over the ok requests. `outputPinned: false` (a
 * server that takes neither min_tokens nor ignore_eos) lets an output end early: only one longer
 * than max_tokens counts as drift.
 */
export function judgeTokenDrift(records: readonly TimelineRecord[], tolerance: number, opts: { outputPinned?: boolean } = {}): TokenDrift {
  const pinned = opts.outputPinned ?? true;
  let checked = 0;
  let usageMissing = 0;
  let promptOutside = 0;
  let outputOutside = 0;
  let unreconciled = 0;
  let exactCounts = 0;
  let inferredCounts = 0;
  let multiTokenChunks = 0;
  let firstProblem: string | null = null;
  let maxP = 0;
  let maxO = 0;
  for (const r of records) {
    if (r.status !== 'ok') continue;
    if (r.tokenCounts === 'exact') exactCounts++;
    else inferredCounts++;
    for (const c of r.chunks) if (c[1] > 1) multiTokenChunks++;
    if (typeof r.tokenCountProblem === 'string') {
      unreconciled++;
      firstProblem ??= `${r.id}: ${r.tokenCountProblem}`;
    }
    const up = r.usagePromptTokens;
    const uo = r.usageOutputTokens;
    if (typeof up !== 'number' || typeof uo !== 'number') {
      usageMissing++;
      continue;
    }
    checked++;
    const dp = Math.abs(up - r.promptTokens) / r.promptTokens;
    const dO = (pinned ? Math.abs(uo - r.maxTokens) : Math.max(0, uo - r.maxTokens)) / r.maxTokens;
    maxP = Math.max(maxP, dp);
    maxO = Math.max(maxO, dO);
    if (dp > tolerance) promptOutside++;
    if (dO > tolerance) outputOutside++;
  }
  const verdict = promptOutside + outputOutside + unreconciled > 0 ? 'drift' : checked === 0 ? 'unmeasured' : 'ok';
  const parts: string[] = [];
  if (verdict === 'unmeasured') parts.push('the engine reported no usage: requested token counts could not be checked');
  else if (promptOutside + outputOutside > 0) parts.push(`token counts drift beyond ${tolerance * 100}%: ${promptOutside} prompts and ${outputOutside} outputs of ${checked} (max ${(maxP * 100).toFixed(1)}% / ${(maxO * 100).toFixed(1)}%)`);
  else if (checked > 0) parts.push(`prompt and output token counts within ${tolerance * 100}% of the plan for all ${checked} checked requests`);
  if (unreconciled > 0) parts.push(`${unreconciled} requests' usage disagrees with what was streamed (first: ${firstProblem})`);
  if (multiTokenChunks > 0) parts.push(`${multiTokenChunks} chunks carried more than one token`);
  if (inferredCounts > 0 && exactCounts > 0) parts.push(`per-chunk counts exact for ${exactCounts} requests, inferred for ${inferredCounts}`);
  return {
    tolerance,
    checked,
    usageMissing,
    promptOutside,
    outputOutside,
    unreconciled,
    exactCounts,
    inferredCounts,
    multiTokenChunks,
    maxPromptDriftFrac: round(maxP),
    maxOutputDriftFrac: round(maxO),
    verdict,
    note: parts.join('; '),
  };
}
