// What the twin sweep shows a person: configurations the twin cannot tell apart are grouped and
// kept out of the top-N file (which says so), the top-N file says what a real sweep of it measures
// (the base recipe's engine), the console sums up the infeasible configurations in one line,
// names configurations by short labels, and the sweep writes report.html with its charts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { keysTheTwinCannotSee, rankTwinRows, topSweepText, type TwinConfigRow } from '../../harness/twin/twinSweepRank.ts';
import { TWIN_SWEEP_FILES } from '../../harness/twin/twinSweep.ts';
import { prepareSweep } from '../../harness/sweep/runSweep.ts';
import { smallTwinSweep } from './pageFixtures.ts';
import { fluidcap } from '../pipeline/support.ts';

const row = (id: string, values: Record<string, unknown>, o: Partial<TwinConfigRow> = {}): TwinConfigRow => ({
  id, values, status: 'ranked', reason: '', model: 'llama-2-70b', gpuProfile: 'h100-sxm-80gb', scheduler: 'sarathi', tensorParallel: 4, gpuCount: 4, usdPerGpuHour: 6.16,
  capacityQps: 4.938, bracket: { passQps: 4.938, failQps: 5.1 }, outcome: 'converged', probes: 9, meanPromptTokens: 2700, meanOutputTokens: 180, ttftP90S: 1.5, tbtP99S: 0.15,
  virtualS: 1655.97, wallS: 0.5, ...o,
});

const ROWS = [
  row('c01-maxNumSeqs128-chunkSize2048', { maxNumSeqs: 128, chunkSize: 2048 }),
  // Same capacity, other latencies: the twin tells it apart.
  row('c02-maxNumSeqs128-chunkSize1024', { maxNumSeqs: 128, chunkSize: 1024 }, { tbtP99S: 0.16 }),
  // Identical to c01 but for the virtual time its profile took (a batch limit changes that, not a verdict).
  row('c03-maxNumSeqs256-chunkSize2048', { maxNumSeqs: 256, chunkSize: 2048 }, { virtualS: 1658.9 }),
  row('c04-maxNumSeqs128-chunkSize512', { maxNumSeqs: 128, chunkSize: 512 }, { capacityQps: 4, bracket: { passQps: 4, failQps: 4.2 } }),
];

test('configurations with identical twin results are grouped under the better-ranked one, on consecutive ranks; the differing keys are named', () => {
  const ranked = rankTwinRows(ROWS);
  assert.equal(ranked.map((r) => [r.id.slice(0, 3), r.rank, r.identicalTo?.slice(0, 3) ?? null]), [['c01', 1, null], ['c03', 2, 'c01'], ['c02', 3, null], ['c04', 4, null]]);
  assert.equal(keysTheTwinCannotSee(ranked), ['maxNumSeqs']);
  assert.equal(ranked.map((r) => r.label), ['c01 seqs128 chunk2048', 'c03 seqs256 chunk2048', 'c02 seqs128 chunk1024', 'c04 seqs128 chunk512']);
});

test('top-N runs the N best configurations the twin can tell apart and names the identical ones; its header says what it measures', async () => {
  const ranked = rankTwinRows(ROWS);
  const base = { sweepName: 'v', recipe: 'base.yaml', host: null, createdAt: 'now' };
  const sim = topSweepText({ ...base, engine: 'sim' }, ranked, 2);
  const entries = (parse(sim) as { include: Record<string, unknown>[] }).include;
  assert.equal(entries, [ROWS[0].values, ROWS[1].values]);
  assert.match(sim, /identical on the twin, not run: c03 \(maxNumSeqs=256\)/);
  // The base recipe runs the simulated engine: the file does not promise a real engine.
  assert.not.match(sim, /for real/);
  assert.match(sim, /runs the simulated engine\n# \(engine: sim\) on this machine, so this file measures these configurations on the simulated engine\n# in real time, not on GPUs/);
  const vllm = topSweepText({ ...base, engine: 'vllm', host: 'gpu-box' }, ranked, 2);
  assert.match(vllm, /runs the same configurations for real on\n# vllm, as the base recipe base\.yaml sets it up/);
});

test('a twin sweep: one console line for all infeasible configurations, short labels, report.html with its charts, a top-N of distinct configurations', async () => {
  const lines: string[] = [];
  const t = await smallTwinSweep(2, (l) => lines.push(l));
  const infeasible = t.rows.filter((r) => r.status === 'infeasible');
  assert.is(infeasible.length, 8);
  const about = lines.filter((l) => /infeasible|does not fit/.test(l));
  assert.equal(about.length, 1, about.join('\n'));
  assert.match(about[0], /^8 of 16 configurations infeasible, all with model=llama-2-70b: llama-2-70b does not fit \(e\.g\. 128\.5 GiB/);
  // No line carries a full configuration id; every configuration that was evaluated has one line, by label.
  for (const r of t.rows) assert.not.ok(lines.some((l) => l.includes(r.id)), `${r.id} printed in full`);
  assert.is(lines.filter((l) => /^\[\d+\/16\] c\d\d /.test(l)).length, 8);
  assert.ok(t.rows.every((r) => r.label.length <= 40), t.rows.map((r) => r.label).join(', '));
  assert.ok(lines.some((l) => /identical on the twin to a better-ranked one \(they differ only in maxNumSeqs\)/.test(l)), lines.join('\n'));

  const page = join(t.dir, TWIN_SWEEP_FILES.page);
  assert.ok(existsSync(page));
  const html = readFileSync(page, 'utf8');
  assert.is(html.match(/<svg /g)?.length, 2);
  assert.match(html, /identical on the twin: c\d\d \(maxNumSeqs=128\)/);
  assert.match(html, /<strong>8 infeasible<\/strong> \(all with model=llama-2-70b\): llama-2-70b does not fit: 128\.5 GiB [^;]* a100-sxm-80gb [^;]* \(c05, c06, c07, c08\); 128\.5 GiB [^;]* h100-sxm-80gb [^;]* \(c13, c14, c15, c16\)\./);

  // The top-2 file: two configurations, neither identical on the twin to a better one, and the real sweep expands it.
  assert.equal(t.top, { file: 'top-2.yaml', n: 2, runs: 2 });
  const { plan } = await prepareSweep(join(t.dir, 'top-2.yaml'), undefined);
  const distinct = t.rows.filter((r) => r.rank !== null && r.identicalTo === null).slice(0, 2);
  assert.equal(plan.runs.map((r) => r.config.values), distinct.map((r) => r.values));
  rmSync(t.root, { recursive: true, force: true });
});

test('the CLI: ranked configurations by label with their identical ones folded in, one infeasible line, and what the top-N sweep measures', async () => {
  const t = await smallTwinSweep(1);
  const r = await fluidcap(['sweep', '--twin', t.sweepFile, '--top', '2', '--out', join(t.dir, '..')], { timeoutMs: 120_000 });
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stderr.split('\n').filter((l) => /infeasible/.test(l)).length, 1, r.stderr);
  assert.match(r.stdout, /^ +1\. c\d\d \S+ llama-3-8b \S+ seqs\d+: [\d.]+ QPS, [\d.]+ QPS per \$\/h, \$[\d.]+ per 1M tokens/m);
  assert.match(r.stdout, /\(identical: c\d\d\)/);
  assert.match(r.stdout, /8 ranked \(5 the twin can tell apart\)/);
  assert.match(r.stdout, /\nresults: \S+\/report\.html \(and /);
  assert.match(r.stdout, /\nmeasure the top 2 with the simulated engine in real time on this machine \(the base recipe's engine: sim\), not GPUs: fluidcap sweep \S+\/top-2\.yaml\n/);
  assert.not.match(r.stdout, /for real/);
  rmSync(t.root, { recursive: true, force: true });
});

test.run();
