// Keeps the CPUs that receiving threads wake on from going idle while a probe runs. An idle CPU
// halts; waking it for a chunk costs an interrupt, and in a virtual machine an exit to the host,
// which must then schedule the virtual CPU again. Traced on this kind of VM at 500 streams, half of
// the worst 1% of chunks' waits was a woken receiver waiting for an idle CPU to come back. So
// each receiver gets one thread that spins, but only under SCHED_IDLE: the kernel preempts it the
// moment anything else, a receiver or an engine sharing the machine, wants the CPU, and counts
// the CPU as idle when it places a waking thread. A spinner that could not be put under
// SCHED_IDLE never spins (it would take a share of the CPU from real work); it just exits.
// By default ('auto') they run only when the engine is on another machine: beside a CPU engine on
// the same two cores (llama.cpp's server) they cut the capacity found from 64 to 56 QPS, though
// they run only in idle time.
import { networkInterfaces } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SCHED_IDLE, schedulingPolicy } from './threadPriority.ts';

const WAIT = 0;
const SPIN = 1;
const EXIT = 2;

// Plain CommonJS so it needs no compiling: say which thread it is, wait to be told, then spin or exit.
const SPINNER = `
const { workerData: flag, parentPort } = require('node:worker_threads');
let tid = null;
try { tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()); } catch {}
parentPort.postMessage(tid);
Atomics.wait(flag, 0, ${WAIT});
while (Atomics.load(flag, 0) === ${SPIN}) {}
`;

/** Spinner threads, booted and waiting; lower them (prioritiseReceivers) before start(). */
export interface Spinners {
  /** The spinners' Linux thread ids (empty off Linux). */
  readonly threadIds: readonly number[];
  /** Lets the spinners that run under SCHED_IDLE spin and the others exit; returns how many spin. */
  start(): number;
  /** Ends every spinner. */
  stop(): Promise<void>;
}

/** Whether a base URL's host is this machine: loopback, `localhost`, or one of its own addresses. */
export function engineIsLocal(baseUrl: string, ownAddresses: readonly string[] = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address))): boolean {
  const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\./.test(host) || host === '0.0.0.0' || host === '::') return true;
  return ownAddresses.some((a) => a.toLowerCase() === host);
}

/**
 * 'auto' spins when the engine is elsewhere; true or false as said. Through the SSH tunnel the
 * engine's URL is loopback, yet the engine is on another host.
 */
export function shouldKeepCoresAwake(setting: boolean | 'auto', baseUrl: string, opts: { throughTunnel?: boolean } = {}): boolean {
  return setting === 'auto' ? opts.throughTunnel === true || !engineIsLocal(baseUrl) : setting;
}

/** Boots `count` spinner threads that wait for start(). */
export async function bootSpinners(count: number): Promise<Spinners> {
  const booted = await Promise.all(
    Array.from({ length: count }, async () => {
      const flag = new Int32Array(new SharedArrayBuffer(4));
      const worker = new Worker(SPINNER, { eval: true, workerData: flag });
      worker.unref();
      const tid = await new Promise<number | null>((resolve, reject) => {
        worker.once('message', (m: number | null) => resolve(m));
        worker.once('error', reject);
      });
      return { worker, flag, tid };
    }),
  );
  const tell = (s: (typeof booted)[number], state: number) => {
    Atomics.store(s.flag, 0, state);
    Atomics.notify(s.flag, 0);
  };
  return {
    threadIds: booted.flatMap((s) => (s.tid === null ? [] : [s.tid])),
    start() {
      let spinning = 0;
      for (const s of booted) {
        const idle = s.tid !== null && schedulingPolicy(s.tid) === SCHED_IDLE;
        tell(s, idle ? SPIN : EXIT);
        if (idle) spinning++;
      }
      return spinning;
    },
    async stop() {
      for (const s of booted) tell(s, EXIT);
      await Promise.all(booted.map((s) => s.worker.terminate()));
    },
  };
}
