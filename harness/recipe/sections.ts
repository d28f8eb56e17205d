// The recipe sections the capacity pipeline owns: how to profile prefills and how to search QPS.
// Target, workload and SLO sections come from their own modules (provision, load, metrics).
import { z } from 'zod';
import { durationS, fraction, positiveInt } from '../util/zodKit.ts';
import { TOKEN_ARRIVALS, type TokenArrivals as TokenArrivalsName } from '../metrics/request.ts';

export const profileSchema = z
  .strictObject({
    /** Prompt lengths to profile; default: powers of two from 128 up to the model's context. */
    promptLengths: z.array(positiveInt()).min(2).optional(),
    repeats: positiveInt().default(3),
    warmup: z.number().int().min(0).default(2),
    requestTimeout: durationS().default(120),
    /** The fit is refused below this R². */
    minR2: z.number().min(0).max(1).default(0.95),
    /** Repeats at one length may vary by this coefficient of variation... */
    maxRepeatCv: z.number().positive().default(0.2),
    /** ...unless their standard deviation is below this: a shared host's scheduling jitter is ~ms. */
    noiseFloor: durationS({ allowZero: true }).default(0.005),
  })
  .transform(({ requestTimeout, noiseFloor, minR2, maxRepeatCv, ...rest }) => ({
    ...rest,
    requestTimeoutS: requestTimeout,
    fitBounds: { minR2, maxRepeatCv, noiseFloorS: noiseFloor },
  }));

const qpsSchema = z
  .strictObject({
    start: z.number().positive().optional(),
    min: z.number().positive().default(0.1),
    max: z.number().positive().default(1000),
  })
  .superRefine((q, ctx) => {
    if (q.max <= q.min) {
      ctx.addIssue({ code: 'custom', path: ['max'], input: q.max, message: `must be > search.qps.min (${q.min})` });
    }
    if (q.start !== undefined && (q.start < q.min || q.start > q.max)) {
      ctx.addIssue({
        code: 'custom',
        path: ['start'],
        input: q.start,
        message: `must lie within search.qps.min..max (${q.min}..${q.max})`,
      });
    }
  })
  .transform((q) => ({ startQps: q.start ?? q.min, minQps: q.min, maxQps: q.max }));

const probeSchema = z
  .strictObject({
    /** Fewest requests a probe plans; more when minDuration at the probe's rate needs more. */
    requests: positiveInt().default(300),
    /** Shortest arrival window (default: 60 s, or duration if shorter): a short probe above capacity ends before its queue shows. */
    minDuration: durationS({ allowZero: true }).optional(),
    /** Time limit of one probe. */
    duration: durationS().default(600),
    warmup: fraction().default(0.1),
    requestTimeout: durationS().default(300),
    stallTimeout: durationS().default(60),
    concurrency: positiveInt().optional(),
    workers: positiveInt().optional(),
    /** Client timing error above which a probe is invalid; default min(2 ms, 10% of the TBT deadline). */
    clientTolerance: durationS().optional(),
    /**
     * Ask for the server's running token count on every chunk (vLLM's
     * stream_options.continuous_usage_stats, llama.cpp's timings_per_token), so chunks of several
     * tokens are counted exactly and tokens without text arrive when the engine emits them.
     * Default: on for vllm, sarathi, sim (both vLLM 0.8.5 and newest accept it) and endpoint (a
     * strict server that refuses the fields has them dropped by the dialect probe); off for
     * llamacpp, whose per-token timings are opt-in.
     */
    continuousUsage: z.boolean().optional(),
    /**
     * Which arrival of a token TTFT, TBT, fluidity and the prefill profile measure: `engine`, when
     * the engine emitted it (with or without text); `visible`, when its text reached the reader (a
     * token streamed without text, as vLLM streams half a UTF-8 character or a special token,
     * counts with the next text).
     */
    tokenArrivals: z.enum(TOKEN_ARRIVALS as [TokenArrivalsName, ...TokenArrivalsName[]], { error: `must be one of ${TOKEN_ARRIVALS.join(', ')}` }).default('engine'),
    /**
     * While a probe runs, its receiving threads run under SCHED_FIFO (Linux, where the kernel
     * allows it: root or CAP_SYS_NICE), so a woken receiver never waits behind another thread.
     */
    realtimeReceivers: z.boolean().default(true),
    /**
     * While a probe runs, one thread per receiving worker spins under SCHED_IDLE (Linux), so the
     * CPUs receivers wake on never halt: waking an idle CPU, above all a virtual one, adds to the
     * client's timing error. It takes only CPU time nothing else wants, but shows the CPUs as busy,
     * and beside a CPU engine on the same cores it lowered the capacity found. auto: only when the
     * engine's address is not this machine's.
     */
    keepCoresAwake: z.union([z.boolean(), z.literal('auto')]).default('auto'),
  })
  .superRefine((p, ctx) => {
    if (p.minDuration === undefined) return;
    const min = typeof p.minDuration === 'number' ? p.minDuration : NaN;
    const max = typeof p.duration === 'number' ? p.duration : NaN;
    if (min > max) ctx.addIssue({ code: 'custom', path: ['minDuration'], input: min, message: `must not exceed search.probe.duration (${max} s)` });
  })
  .transform(({ duration, minDuration, requestTimeout, stallTimeout, warmup, clientTolerance, ...rest }) => ({
    ...rest,
    minDurationS: minDuration ?? Math.min(60, duration),
    clientToleranceS: clientTolerance,
    durationLimitS: duration,
    requestTimeoutS: requestTimeout,
    stallTimeoutS: stallTimeout,
    /** Fraction of the planned requests excluded from evaluation at the start of each probe. */
    warmupFraction: warmup,
  }));

export const searchSchema = z
  .strictObject({
    qps: qpsSchema.prefault({}),
    tolerance: z.number().positive().max(1).default(0.025),
    maxProbes: positiveInt().default(12),
    /** Load-seconds the search may spend, its probes' durations summed (absent: only maxProbes bounds it); probes near the knee span at least a tenth of it (capacity/runPlan.ts kneeMeasureS). */
    budget: durationS().optional(),
    probe: probeSchema.prefault({}),
    earlyStop: z.boolean().default(true),
    /**
     * Bound on the warm-up of the probes after the search's first fail, which lie near the knee:
     * arrivals at the probe's rate go before its measured requests until the engine's queue is
     * stationary, or for this long at most (docs/verdicts.md). 0s: none.
     */
    kneeWarmupMax: durationS({ allowZero: true }).default(10),
  });

/** Where each probe's load is sent from (the recipe's `load` section). */
export const loadSchema = z.strictObject({
  /**
   * `agent`: fluidcap's probe runner in a container beside the engine (host network, the engine on
   * loopback), driven over the host's SSH connection, so no network or relay lies between the engine
   * and the clock; `client`: this process. Default: agent for an engine fluidcap starts in a
   * container on an inventory host (reached over SSH), or when `agents` is above 1; client for a
   * container on `local`, an engine run as a process (`target.runtime: process`), the in-process
   * simulated engine and an endpoint.
   */
  from: z.enum(['agent', 'client']).optional(),
  /** Agents sharing each probe, its arrivals dealt round-robin (when one agent's CPU is the limit). */
  agents: positiveInt().max(64, 'must be at most 64').default(1),
  /** Inventory hosts (or one group) the agents run on, round-robin; default: the engine's host. */
  hosts: z.array(z.string().min(1)).min(1).optional(),
});

export type ProfileSection = z.output<typeof profileSchema>;
export type SearchSection = z.output<typeof searchSchema>;
export type LoadSection = z.output<typeof loadSchema>;
