import { configOf, plan, runPlanned } from './proofSupport.ts';
const [file, qpsText, seedsText] = process.argv.slice(2);
const c = await configOf(file);
const qps = Number(qpsText);
const ts = [0.5, 1, 1.5, 2, 3, 4, 6, 8, 10, 15, 20, 30, 45, 60];
const sums = ts.map(() => 0);
const seeds = Number(seedsText ?? 20);
for (let s = 0; s < seeds; s++) {
  const planned = plan(c, qps, Math.ceil(qps * 60), 5000 + s, 1e9);
  const { records } = runPlanned(c, planned);
  const ends = records.map((r) => r.chunks[r.chunks.length - 1][0]).sort((a, b) => a - b);
  ts.forEach((t, i) => { sums[i] += planned.filter((p) => p.scheduledS <= t).length - ends.filter((e) => e <= t).length; });
}
console.log(`${file} ${qps} QPS, mean backlog over ${seeds} seeds: ` + ts.map((t, i) => `${t}s:${(sums[i] / seeds).toFixed(1)}`).join(' '));
