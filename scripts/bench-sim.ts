// Iteration timing accuracy of the simulated engine (npm run bench:sim [-- --duration 600]):
// runs `fluidcap sim serve --trace-iterations` out of process, keeps N streams open against it,
// then prints iteration start deviation from the modelled schedule (p50/p99/max), drift over the
// run, the spread of writes within one iteration, and client receive-minus-emit. Figures only.
import { spawn } from 'node:child_process';
import { request, Agent } from 'node:http';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, loadavg, cpus, setPriority } from 'node:os';
import { join } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';

const args = yargs(hideBin(process.argv))
  .option('duration', { type: 'number', default: 60, describe: 'seconds of load' })
  .option('streams', { type: 'number', default: 200, describe: 'concurrent streams' })
  .option('model', { type: 'string', default: 'llama-3-8b' })
  .option('gpu', { type: 'string', default: 'h100-sxm-80gb' })
  .option('scheduler', { type: 'string', default: 'vllm' })
  .option('time-scale', { type: 'number', default: 1 })
  .option('max-tokens', { type: 'number', default: 1500 })
  .option('client-nice', { type: 'number', default: 10, describe: 'niceness of this (client) process once the server runs, so the load generator does not steal the engine CPU it measures' })
  .option('server-nice', { type: 'number', default: 0, describe: 'niceness for the server process (negative needs root): shows how much of the error is CPU contention on a shared machine' })
  .option('warmup', { type: 'number', default: 2, describe: 'seconds after all streams are decoding that steady-state figures skip (JIT, connection ramp)' })
  .option('keep-trace', { type: 'string', describe: 'copy the server iteration trace (JSON lines) here' })
  .strict()
  .parseSync();

const dir = mkdtempSync(join(tmpdir(), 'bench-sim-'));
const traceFile = join(dir, 'iterations.jsonl');

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const fmt = (v: number) => v.toFixed(3);

async function main() {
  const server = spawn(
    process.execPath,
    ['bin/fluidcap.js', 'sim', 'serve', '--port', '0', '--model', args.model, '--gpu', args.gpu, '--scheduler', args.scheduler,
      '--time-scale', String(args['time-scale']), '--trace-iterations', traceFile, '--log-stats-interval', '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (b) => {
      out += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  const { hostname, port } = new URL(url);
  setPriority(process.pid, args['client-nice']);
  if (args['server-nice'] !== 0) setPriority(server.pid!, args['server-nice']);
  const agent = new Agent({ keepAlive: true, maxSockets: args.streams + 10 });
  const recvMinusEmitUs: number[] = [];
  let chunks = 0;
  let finished = 0;
  let stopping = false;
  const open = new Set<ReturnType<typeof request>>();
  let salt = 0;

  const startStream = () => {
    if (stopping) return;
    const body = JSON.stringify({
      model: args.model,
      prompt: Array.from({ length: 100 }, (_, i) => `s${salt}w${i}`).join(' '),
      // Staggered lengths (½× to 1½× --max-tokens) so streams do not all end in one iteration and idle the engine.
      max_tokens: Math.round(args['max-tokens'] * (0.5 + ((salt * 7919) % 1000) / 1000)),
      ignore_eos: true,
      stream: true,
    });
    salt++;
    const req = request({ host: hostname, port, method: 'POST', path: '/v1/completions', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const recvNs = process.hrtime.bigint();
        buf += text;
        let idx: number;
        while ((idx = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const m = /"fluidcap_emit_ns":"(\d+)"/.exec(event);
          if (m) {
            chunks++;
            if (chunks % 10 === 0) recvMinusEmitUs.push(Number(recvNs - BigInt(m[1])) / 1e3);
          }
        }
      });
      res.on('end', () => {
        open.delete(req);
        finished++;
        startStream();
      });
    });
    req.on('error', () => open.delete(req));
    open.add(req);
    req.end(body);
  };

  const t0 = performance.now();
  for (let i = 0; i < args.streams; i++) startStream();
  console.log(`bench-sim: ${args.streams} streams, ${args.duration} s, ${args.model} on ${args.gpu}, scheduler ${args.scheduler}, time scale ${args['time-scale']}`);
  await new Promise((r) => setTimeout(r, args.duration * 1000));
  stopping = true;
  const elapsedS = (performance.now() - t0) / 1000;
  for (const req of open) req.destroy();
  agent.destroy();
  server.kill('SIGTERM');
  await new Promise((r) => server.on('close', r));

  const traces = readFileSync(traceFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, string | number | null>);
  if (args['keep-trace']) copyFileSync(traceFile, args['keep-trace']);
  rmSync(dir, { recursive: true, force: true });
  const startNs = BigInt(traces[0].plannedStartNs as string);
  const rows = traces.map((t) => ({
    atS: Number(BigInt(t.plannedStartNs as string) - startNs) / 1e9,
    devMs: Number(BigInt(t.actualStartNs as string) - BigInt(t.plannedStartNs as string)) / 1e6,
    endDevMs: t.actualEndNs === null ? NaN : Number(BigInt(t.actualEndNs as string) - BigInt(t.plannedStartNs as string) - BigInt(t.durationNs as string)) / 1e6,
    spreadMs: t.firstWriteNs === null || t.lastWriteNs === null ? NaN : Number(BigInt(t.lastWriteNs as string) - BigInt(t.firstWriteNs as string)) / 1e6,
    decodes: t.decodes as number,
    durationMs: Number(BigInt(t.durationNs as string)) / 1e6,
  }));
  // Steady state: iterations once all streams are open (the ramp of arrivals is excluded).
  const firstBusy = rows.findIndex((r) => r.decodes >= args.streams * 0.75);
  const steadyFromS = (firstBusy >= 0 ? rows[firstBusy].atS : 0) + args.warmup;
  const steady = rows.filter((r) => r.atS >= steadyFromS);
  const sorted = (xs: number[]) => xs.filter(Number.isFinite).sort((a, b) => a - b);
  const devAll = sorted(rows.map((r) => r.devMs));
  const dev = sorted(steady.map((r) => r.devMs));
  const spread = sorted(steady.filter((r) => r.decodes >= args.streams * 0.75).map((r) => r.spreadMs));
  const n = steady.length;
  const tenth = Math.max(1, Math.floor(n / 10));
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const firstMean = mean(steady.slice(0, tenth).map((r) => r.devMs));
  const lastMean = mean(steady.slice(n - tenth).map((r) => r.devMs));
  // Least-squares slope of deviation against time: drift in ms per minute.
  const xs = steady.map((r) => r.atS);
  const ys = steady.map((r) => r.devMs);
  const mx = mean(xs);
  const my = mean(ys);
  const slope = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  // Continuity of the schedule: each planned start must equal the previous planned start + its duration,
  // except when the engine re-anchors (it went idle, or fell > 1 s behind).
  let chained = 0;
  let reanchors = 0;
  for (let i = 1; i < traces.length; i++) {
    const expected = BigInt(traces[i - 1].plannedStartNs as string) + BigInt(traces[i - 1].durationNs as string);
    if (BigInt(traces[i].plannedStartNs as string) === expected) chained++;
    else reanchors++;
  }
  const rme = sorted(recvMinusEmitUs);
  const within = (limitMs: number) => ((dev.filter((d) => d <= limitMs).length / dev.length) * 100).toFixed(2);

  console.log(`iterations: ${rows.length} over ${elapsedS.toFixed(1)} s (mean modelled ${fmt(mean(rows.map((r) => r.durationMs)))} ms); steady state (all streams decoding + ${args.warmup} s warm-up) from ${steadyFromS.toFixed(2)} s: ${n}`);
  console.log(`iteration start deviation from schedule, steady state (ms): p50 ${fmt(pct(dev, 50))}  p99 ${fmt(pct(dev, 99))}  max ${fmt(pct(dev, 100))}  (${within(0.5)}% within 0.5 ms)`);
  console.log(`iteration start deviation from schedule, whole run incl. ramp (ms): p50 ${fmt(pct(devAll, 50))}  p99 ${fmt(pct(devAll, 99))}  max ${fmt(pct(devAll, 100))}`);
  console.log(`drift: mean deviation first 10% ${fmt(firstMean)} ms, last 10% ${fmt(lastMean)} ms; slope ${(slope * 60).toFixed(4)} ms/min; ${chained} iterations planned exactly at the previous planned end, ${reanchors} re-anchored (idle or > 1 s behind)`);
  // Per-minute medians: robust to bursts of CPU contention, so a real drift would show as a trend here.
  const perMinute: string[] = [];
  for (let m = 0; m * 60 < (steady[steady.length - 1]?.atS ?? 0); m++) {
    const inMinute = sorted(steady.filter((r) => r.atS >= m * 60 && r.atS < (m + 1) * 60).map((r) => r.devMs));
    if (inMinute.length) perMinute.push(`${m}:${fmt(pct(inMinute, 50))}/${fmt(pct(inMinute, 90))}`);
  }
  console.log(`deviation per minute, p50/p90 (ms): ${perMinute.join('  ')}`);
  console.log(`write spread within an iteration, first to last stream (ms, iterations with >= ${Math.ceil(args.streams * 0.75)} streams): p50 ${fmt(pct(spread, 50))}  p99 ${fmt(pct(spread, 99))}  max ${fmt(pct(spread, 100))}`);
  console.log(`client receive minus engine emit (ms, 1 in 10 chunks, this process): p50 ${fmt(pct(rme, 50) / 1000)}  p99 ${fmt(pct(rme, 99) / 1000)}  max ${fmt(pct(rme, 100) / 1000)}`);
  console.log(`niceness: server ${args['server-nice']}, client ${args['client-nice']}`);
  console.log(`load average during the run: ${loadavg().map((l) => l.toFixed(2)).join(' ')} on ${cpus().length} cores (a shared machine inflates every figure)`);
  console.log(`chunks received ${chunks} (${(chunks / elapsedS).toFixed(0)}/s), requests finished ${finished}`);
}

await main();
