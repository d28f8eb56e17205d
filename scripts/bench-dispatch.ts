// tsx scripts/bench-dispatch.ts — where the client's dispatch lag comes from. The simulated engine
// runs in its own process with the quickstart setup (Llama-3-8B, H100, vLLM scheduler, real time);
// runProbe sends the quickstart workload (Poisson) at each rate with 0 (main thread), 1 and 2
// receiving workers, and this prints the dispatch-lag distribution, receive−emit, the workers' and
// the main thread's event-loop delay, and the 1-minute load average next to each row.
// Options: --qps 4,16,32,64 --workers 0,1,2 --duration 12 --max-requests 400.
import { startLocalSim, type LocalEngine } from '../harness/provision/localProcess.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { planProbe } from '../harness/load/plan.ts';
import { runProbe } from '../harness/load/runProbe.ts';
import { workloadSchema } from '../harness/load/workloadSpec.ts';
import { percentiles } from '../harness/metrics/percentile.ts';

const { values } = parseArgs({
  options: {
    qps: { type: 'string', default: '4,16,32,64' },
    workers: { type: 'string', default: '0,1,2' },
    duration: { type: 'string', default: '12' },
    'max-requests': { type: 'string', default: '400' },
    seed: { type: 'string', default: '7' },
  },
});

/** Starts the quickstart's simulated engine in its own process. */
// The engine in its own process, as `fluidcap run` starts it (logs to a temp file).
function startSim(): Promise<LocalEngine> {
  return startLocalSim(['--port', '0', '--model', 'llama-3-8b', '--gpu', 'h100-sxm-80gb', '--scheduler', 'vllm',
      '--max-num-seqs', '128', '--max-model-len', '4096', '--time-scale', '1', '--log-stats-interval', '0'], { logPath: join(tmpdir(), `fluidcap-bench-sim-${process.pid}.log`) });
}

const ms = (s: number | null | undefined) => (s === null || s === undefined ? '   n/a' : (s * 1000).toFixed(2).padStart(6));
const workload = workloadSchema.parse({
  api: 'completions',
  lengths: { prompt: { dist: 'uniform', min: 256, max: 1024 }, output: { dist: 'uniform', min: 32, max: 96 } },
  arrivals: { process: 'poisson' },
  seed: Number(values.seed),
});
const sim = await startSim();
console.log(`quickstart sim (own process) at ${sim.baseUrl}; Poisson, ${values.duration} s per row`);
console.log('  qps workers  reqs  lag p50   p90   p99   max (ms)  recv−emit p50  p99 (ms)  worker-eld p99  main-eld p99  cpu-wait/wake  tokens/s  load1');
try {
  for (const rateQps of values.qps.split(',').map(Number)) {
    for (const workers of values.workers.split(',').map(Number)) {
      const plan = planProbe({ workload, rateQps, durationS: Number(values.duration), requests: Number(values['max-requests']), maxContextTokens: 4096 });
      const dir = mkdtempSync(join(tmpdir(), 'fluidcap-dispatch-'));
      const mainEld = monitorEventLoopDelay({ resolution: 1 });
      try {
        mainEld.enable();
        const r = await runProbe(plan, { outDir: dir, baseUrl: sim.baseUrl, model: 'llama-3-8b', workers, metricsUrl: false, requestTimeoutS: 120, stallTimeoutS: 30 });
        mainEld.disable();
        const lags: number[] = [];
        let tokens = 0;
        let first = Infinity;
        let last = 0;
        for (const line of readFileSync(r.timelinesFile, 'utf8').trim().split('\n')) {
          const rec = JSON.parse(line) as { scheduledS: number; sentS: number; chunks: [number, number][] };
          lags.push(rec.sentS - rec.scheduledS);
          for (const [t, k] of rec.chunks) {
            tokens += k;
            first = Math.min(first, t);
            last = Math.max(last, t);
          }
        }
        const p = percentiles(lags, [50, 90, 99, 100]);
        const rme = r.clientHealth.recvMinusEmit;
        console.log(
          `${String(rateQps).padStart(5)} ${String(workers).padStart(7)} ${String(plan.requests.length).padStart(5)}  ${ms(p[50])} ${ms(p[90])} ${ms(p[99])} ${ms(p[100])}      ${ms(rme?.p50S)} ${ms(rme?.p99S)}          ${workers > 0 ? ms(r.clientHealth.eventLoopDelayP99S) : '   (main)'}        ${ms(mainEld.percentile(99) / 1e9)}         ${ms(r.clientHealth.cpuWait?.waitPerWakeS)}  ${String(Math.round(tokens / (last - first))).padStart(8)}  ${loadavg()[0].toFixed(2)}`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
} finally {
  await sim.stop();
}
