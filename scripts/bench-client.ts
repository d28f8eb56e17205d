// npm run bench:client — how much timing error the client itself adds. The simulated engine runs
// in its own process; for 100/500/1000/2000 concurrent streams, with 1 receiving worker and with N,
// prints receive−emit p50/p99/max (from the engine's fluidcap_emit_ns), dispatch lag p99,
// event-loop delay p99, tokens/s, how long the receiving threads waited for a CPU per wake-up, and
// the 1-minute load average at the end of each row (a shared machine's load is part of the result).
// Options: --streams 100,500 --workers 1,2 --output 200 --time-scale 1 --model tiny; --url URL
// measures an engine that is already up (one that stamps fluidcap_emit_ns, e.g. `fluidcap sim
// serve` pinned to its own core, as ../shared/bench/README.md runs the yardsticks) instead of
// starting one; --json prints one JSON object per row (streams, workers, tokensPerS,
// recvMinusEmitMs p50/p99/max, dispatchLagP99Ms, verdict, and where the CPU went: the receiving
// threads' run and runnable-wait time and CPU per chunk, the main thread's and the whole process's
// CPU, GC pauses). --sched-trace (Linux, root: the kernel's tracefs) records which threads held
// each CPU during every burst of chunks in the row's tail and prints how much of that time was the
// receiving threads, the client's other threads, the engine (the one it started, or
// --engine-pid), other processes, or idle CPUs (chunks stamped but not yet sent); with one
// receiving worker it also splits the p99-and-above chunks' waits by what the receiving thread was
// doing (running, woken but waiting for a CPU and who held it, asleep, blocked in a system call);
// schedTrace.ts says how, and --trace-dir DIR keeps the raw trace and chunk times.
// Receivers run under SCHED_FIFO where the kernel allows it, and SCHED_IDLE spinners keep their
// CPUs from idling (threadPriority.ts, keepAwake.ts): the bench measures the client on cores of its
// own, so it spins even for an engine on this machine, where `fluidcap run` spins only for a remote
// one (pin the engine elsewhere, as ../shared/bench/README.md does). --normal-priority and
// --let-cores-idle turn each off, to see what it is worth. Keep runs short on a shared machine.
import { startLocalSim, type LocalEngine } from '../harness/provision/localProcess.ts';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { planProbe } from '../harness/load/plan.ts';
import { runProbe } from '../harness/load/runProbe.ts';
import { workloadSchema } from '../harness/load/workloadSpec.ts';
import { readThreadCpu, threadCpuSince } from '../harness/load/threadCpu.ts';
import { attributeTail, busiestThreads, parseSavedTgids, parseSchedSwitch, receiverStates, tailWaits, type TailAttribution, type TailWaits, type ThreadRole } from '../harness/load/schedTrace.ts';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '100,500,1000,2000' },
    workers: { type: 'string', default: `1,${Math.max(2, availableParallelism())}` },
    output: { type: 'string', default: '200' },
    prompt: { type: 'string', default: '64' },
    'time-scale': { type: 'string', default: '1' },
    model: { type: 'string', default: 'tiny' },
    'ramp-s': { type: 'string', default: '0.5' },
    url: { type: 'string' },
    json: { type: 'boolean', default: false },
    // > 0 lowers the engine's priority below the client's: shows how much of the error is the two
    // sharing this machine's cores (with a GPU engine on its own host, they do not).
    'sim-nice': { type: 'string', default: '0' },
    'sched-trace': { type: 'boolean', default: false },
    'engine-pid': { type: 'string' },
    'trace-dir': { type: 'string' },
    // Receivers run under SCHED_FIFO where allowed, and SCHED_IDLE spinners keep their CPUs from
    // idling; each can be turned off.
    'normal-priority': { type: 'boolean', default: false },
    'let-cores-idle': { type: 'boolean', default: false },
  },
});
const streamCounts = values.streams.split(',').map(Number);
const workerCounts = values.workers.split(',').map(Number);
const outputTokens = Number(values.output);

/** Starts `fluidcap sim serve` in its own process and resolves with its URL. */
// The engine in its own process, as `fluidcap run` starts it (logs to a temp file).
function startSim(maxSeqs: number): Promise<LocalEngine> {
  return startLocalSim(['--port', '0', '--model', values.model, '--time-scale', values['time-scale'],
      '--max-num-seqs', String(maxSeqs), '--max-num-batched-tokens', String(Math.max(8192, maxSeqs * Number(values.prompt))), '--log-stats-interval', '0'], { logPath: join(tmpdir(), `fluidcap-bench-sim-${process.pid}.log`) });
}

const ms = (s: number | null | undefined) => (s === null || s === undefined ? '   n/a' : (s * 1000).toFixed(2).padStart(6));
const toMs = (s: number | null | undefined) => (s === null || s === undefined ? null : Math.round(s * 1e6) / 1e3);
const maxStreams = Math.max(...streamCounts);
const sim = values.url ? null : await startSim(maxStreams);
const baseUrl = values.url ?? sim!.baseUrl;
if (sim && Number(values['sim-nice']) !== 0) setPriority(sim.pid, Number(values['sim-nice']));
const TRACEFS = '/sys/kernel/tracing';
if (values['sched-trace'] && !existsSync(join(TRACEFS, 'trace'))) {
  console.error(`--sched-trace: no tracefs at ${TRACEFS} (as root: mount -t tracefs nodev ${TRACEFS})`);
  process.exit(2);
}
const tracefs = (file: string, value: string) => writeFileSync(join(TRACEFS, file), value);
/** Starts recording sched_switch on every CPU, on the monotonic clock, with each thread's process. */
function startSchedTrace(): void {
  tracefs('tracing_on', '0');
  tracefs('trace_clock', 'mono');
  tracefs('buffer_size_kb', '32768');
  tracefs('options/record-tgid', '1');
  tracefs('events/sched/sched_switch/enable', '1');
  tracefs('events/sched/sched_wakeup/enable', '1');
  tracefs('trace', '');
  tracefs('tracing_on', '1');
}
function stopSchedTrace(): { trace: string; tgids: Map<number, number> } {
  tracefs('tracing_on', '0');
  const trace = readFileSync(join(TRACEFS, 'trace'), 'utf8');
  const tgids = parseSavedTgids(readFileSync(join(TRACEFS, 'saved_tgids'), 'utf8'));
  tracefs('events/sched/sched_switch/enable', '0');
  tracefs('events/sched/sched_wakeup/enable', '0');
  tracefs('trace', '');
  return { trace, tgids };
}
const enginePid = values['engine-pid'] ? Number(values['engine-pid']) : (sim?.pid ?? null);
const say = (line: string) => {
  // With --json, stdout carries only the rows; the rest goes to stderr.
  if (values.json) console.error(line);
  else console.log(line);
};
say(sim ? `simulated engine (own process) at ${baseUrl}, model ${values.model}, time scale ${values['time-scale']}; ${outputTokens} output tokens per stream; ${availableParallelism()} cores; engine niceness ${values['sim-nice']}` : `engine already up at ${baseUrl}, model ${values.model}; ${outputTokens} output tokens per stream; ${availableParallelism()} cores`);
say(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
say('streams workers   tokens/s  recv−emit p50    p99    max (ms)  dispatch-lag p99  loop-delay p99  cpu-wait/wake  ok/total  verdict  load1');
try {
  for (const streams of streamCounts) {
    for (const workers of workerCounts) {
      const workload = workloadSchema.parse({ lengths: { prompt: Number(values.prompt), output: outputTokens }, arrivals: { process: 'constant' }, seed: streams });
      // All streams start within the ramp, so they are all in flight together for most of the run.
      const plan = planProbe({ workload, rateQps: streams / Number(values['ramp-s']), requests: streams, maxContextTokens: 1 << 20 });
      const dir = mkdtempSync(join(tmpdir(), 'fluidcap-bench-'));
      try {
        const mainCpuBefore = readThreadCpu();
        const processCpuBefore = process.cpuUsage();
        if (values['sched-trace']) startSchedTrace();
        const r = await runProbe(plan, { outDir: dir, baseUrl, model: values.model, workers, metricsUrl: false, requestTimeoutS: 600, stallTimeoutS: 60, keepCoresAwake: !values['let-cores-idle'], realtimeReceivers: !values['normal-priority'] });
        const sched = values['sched-trace'] ? stopSchedTrace() : null;
        const mainCpu = threadCpuSince(mainCpuBefore, readThreadCpu());
        const processCpu = process.cpuUsage(processCpuBefore);
        let tokens = 0;
        let first = Infinity;
        let last = 0;
        // Each chunk's receive time (s after the probe start) and its engine emit stamp (absolute ns).
        const recvS: number[] = [];
        const emitAbsNs: number[] = [];
        for (const line of readFileSync(r.timelinesFile, 'utf8').trim().split('\n')) {
          const rec = JSON.parse(line) as { chunks: [number, number][]; emitNs?: string[] };
          rec.chunks.forEach(([t, k], i) => {
            tokens += k;
            first = Math.min(first, t);
            last = Math.max(last, t);
            if (rec.emitNs) {
              recvS.push(t);
              emitAbsNs.push(Number(rec.emitNs[i]));
            }
          });
        }
        const tailInRampShare = rampShareOfTail(recvS, emitAbsNs, Number(values['ramp-s']));
        const tail = sched ? tailOf(sched, recvS, emitAbsNs, workers) : null;
        const h = r.clientHealth;
        const rme = h.recvMinusEmit;
        const tokensPerS = Math.round(tokens / (last - first));
        if (values.json) {
          console.log(JSON.stringify({
            streams, workers, outputTokens, tokensPerS,
            recvMinusEmitMs: rme ? { p50: toMs(rme.p50S), p99: toMs(rme.p99S), max: toMs(rme.maxS), samples: rme.samples } : null,
            dispatchLagP99Ms: toMs(h.dispatchLagP99S), eventLoopDelayP99Ms: toMs(h.eventLoopDelayP99S), cpuWaitPerWakeMs: toMs(h.cpuWait?.waitPerWakeS),
            // CPU the receiving threads ran, per received chunk: the per-read cost of the receive path.
            tailInRampShare,
            receiveThreadRunMs: toMs(h.cpuWait?.runS), receiveThreadRunnableWaitMs: toMs(h.cpuWait?.runnableWaitS),
            // The main thread decodes and writes each finished request: on one core it competes with the receiver.
            mainThreadRunMs: mainCpu ? toMs(mainCpu.runNs / 1e9) : null,
            // Every thread of the client process (receivers, decoder, main, V8's helpers), user + system.
            processCpuMs: Math.round((processCpu.user + processCpu.system) / 1e3),
            receiveCpuUsPerChunk: h.cpuWait && rme ? Math.round((h.cpuWait.runS / rme.samples) * 1e7) / 10 : null,
            coresKeptAwake: h.coresKeptAwake ?? 0,
            realtimeReceivers: h.realtimeReceivers ?? 0,
            gc: h.gc ? { pauses: h.gc.pauses, totalMs: toMs(h.gc.totalS), maxMs: toMs(h.gc.maxS), tailInGcShare: h.gc.tailInGcShare } : null,
            ok: r.byStatus.ok, planned: r.planned, verdict: h.verdict, load1: Math.round(loadavg()[0] * 100) / 100,
            ...(tail ? { tail: tailJson(tail.bursts), tailWaits: tail.waits } : {}),
          }));
          continue;
        }
        if (tail) console.log(tailLine(tail.bursts));
        if (tail?.waits) console.log(waitsLine(tail.waits));
        console.log(
          `${String(streams).padStart(7)} ${String(workers).padStart(7)} ${tokensPerS.toString().padStart(10)}  ${ms(rme?.p50S)}  ${ms(rme?.p99S)} ${ms(rme?.maxS)}        ${ms(h.dispatchLagP99S)}          ${ms(h.eventLoopDelayP99S)}         ${ms(h.cpuWait?.waitPerWakeS)}  ${`${r.byStatus.ok}/${r.planned}`.padStart(9)}  ${h.verdict.padEnd(7)}  ${loadavg()[0].toFixed(2)}`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
} finally {
  await sim?.stop();
}

/**
 * The share of receive − emit samples at or above their p99 that were received during the ramp
 * (while requests are still being prepared and connections opened). The probe's start on the
 * engine clock is not in the timelines: receive − emit >= 0 bounds it, so the tightest bound
 * (the fastest chunk) stands in for it, off by that chunk's few hundred µs at most.
 */
function rampShareOfTail(recvS: number[], emitAbsNs: number[], rampS: number): number | null {
  if (recvS.length === 0) return null;
  const startNs = probeStartNs(recvS, emitAbsNs);
  const rme = recvS.map((t, i) => startNs + t * 1e9 - emitAbsNs[i]);
  const p99 = [...rme].sort((a, b) => a - b)[Math.floor(0.99 * (rme.length - 1))];
  let tail = 0;
  let inRamp = 0;
  for (let i = 0; i < rme.length; i++) {
    if (rme[i] < p99) continue;
    tail++;
    if (recvS[i] <= rampS) inRamp++;
  }
  return Math.round((inRamp / tail) * 1000) / 1000;
}

/** The probe's start on the monotonic clock, ns: the fastest chunk bounds it (receive − emit >= 0). */
function probeStartNs(recvS: number[], emitAbsNs: number[]): number {
  let startNs = -Infinity;
  for (let i = 0; i < recvS.length; i++) startNs = Math.max(startNs, emitAbsNs[i] - recvS[i] * 1e9);
  return startNs;
}

/** Attributes the row's tail bursts (median receive − emit above max(2 × p50, p99)) to threads. */
function tailOf(sched: { trace: string; tgids: Map<number, number> }, recvS: number[], emitAbsNs: number[], receivers: number): { bursts: TailAttribution; waits: TailWaits | null } | null {
  if (recvS.length === 0) return null;
  const startNs = probeStartNs(recvS, emitAbsNs);
  const recvAbsS = recvS.map((t) => (startNs + t * 1e9) / 1e9);
  const emitS = emitAbsNs.map((e) => e / 1e9);
  const rme = recvAbsS.map((t, i) => t - emitS[i]).sort((a, b) => a - b);
  const thresholdS = Math.max(2 * rme[Math.floor(rme.length / 2)], rme[Math.floor(0.99 * (rme.length - 1))]);
  const intervals = parseSchedSwitch(sched.trace);
  if (values['trace-dir']) {
    // The raw material, for questions the summary does not answer.
    writeFileSync(join(values['trace-dir'], `trace-${recvS.length}.txt`), sched.trace);
    writeFileSync(join(values['trace-dir'], `chunks-${recvS.length}.json`), JSON.stringify({ recvS: recvAbsS, emitS, clientPid: process.pid, enginePid }));
  }
  const tgidOf = (tid: number) => sched.tgids.get(tid);
  const receiving = busiestThreads(intervals, tgidOf, process.pid, Math.max(1, receivers), Math.min(...recvAbsS), Math.max(...recvAbsS));
  const receivingSet = new Set(receiving);
  const roleOf = (tid: number): ThreadRole => (receivingSet.has(tid) ? 'receiver' : tgidOf(tid) === process.pid ? 'client' : enginePid !== null && tgidOf(tid) === enginePid ? 'engine' : 'other');
  return {
    bursts: attributeTail({ intervals, recvS: recvAbsS, emitS, thresholdS, minChunks: 2, roleOf }),
    // Which chunk a receiver handled is not recorded, so the per-chunk split needs a single one.
    waits: receivers === 1 && receiving.length === 1 ? tailWaits({ states: receiverStates(sched.trace, receiving[0]), intervals, recvS: recvAbsS, emitS, quantile: 0.99, roleOf }) : null,
  };
}

function pct(share: number): number {
  return Math.round(share * 100);
}
function waitsLine(w: TailWaits): string {
  const held = Object.entries(w.runnableHeldBy).filter(([, v]) => v >= 0.005).map(([k, v]) => `${k === 'idle' ? 'CPU idle' : k} ${pct(v)}%`).join(', ');
  return `        tail waits (${w.chunks} chunks at p99 or above): receiver running ${pct(w.byState.running)}%, woken and waiting for a CPU ${pct(w.byState.runnable)}% (${held}), asleep ${pct(w.byState.sleeping)}%, blocked in the kernel ${pct(w.byState.blocked)}%`;
}

function ms1(s: number): number {
  return Math.round(s * 1e4) / 10;
}
function tailJson(t: TailAttribution) {
  const worst = t.bursts.reduce<TailAttribution['bursts'][number] | null>((w, b) => (w === null || b.medianRecvMinusEmitS > w.medianRecvMinusEmitS ? b : w), null);
  return {
    thresholdMs: ms1(t.thresholdS),
    bursts: t.bursts.length,
    ms: Object.fromEntries(Object.entries(t.total).map(([k, v]) => [k, ms1(v)])),
    othersMs: Object.fromEntries(Object.entries(t.others).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, v]) => [k, ms1(v)])),
    // The client's own threads other than the receivers; the main thread is this process's id.
    clientThreadsMs: Object.fromEntries(Object.entries(t.clientThreads).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, v]) => [Number(k) === process.pid ? 'main' : `thread ${k}`, ms1(v)])),
    worst: worst
      ? { chunks: worst.chunks, medianMs: ms1(worst.medianRecvMinusEmitS), ms: Object.fromEntries(Object.entries(worst.byRole).map(([k, v]) => [k, ms1(v)])), othersMs: Object.fromEntries(Object.entries(worst.others).map(([k, v]) => [k, ms1(v)])) }
      : null,
  };
}
function tailLine(t: TailAttribution): string {
  const j = tailJson(t);
  const others = Object.entries(j.othersMs).map(([k, v]) => `${k} ${v}`).join(', ');
  const client = Object.entries(j.clientThreadsMs).map(([k, v]) => `${k} ${v}`).join(', ');
  const w = j.worst ? `; the worst (${j.worst.chunks} chunks, median ${j.worst.medianMs} ms): ${Object.entries(j.worst.ms).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(', ')}` : '';
  return `        tail: ${j.bursts} bursts above ${j.thresholdMs} ms; CPU time during them (ms): receiving threads ${j.ms.receiver}, client's other threads ${j.ms.client}${client ? ` (${client})` : ''}, engine ${j.ms.engine}, other processes ${j.ms.other}${others ? ` (${others})` : ''}, idle ${j.ms.idle}${w}`;
}
