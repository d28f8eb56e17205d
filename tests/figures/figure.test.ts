// `fluidcap figure` end to end on the simulated engine at a tiny size (a dozen requests per
// system, time scale 0.5): both runs happen for real, Fig. 3 shows one real request's timeline in
// both systems, --resume reuses finished runs, a bad name exits 2, and metron-fig5d (which
// measures endpoints: tests/pipeline/fig5dEndpoints.test.ts) without its endpoints file exits 2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runFigure, type FigureOutcome } from '../../harness/figures/runFigure.ts';
import { svgPoints } from '../support/svgMarks.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-figure-'));
const SCALE = 0.5;
const logs: string[] = [];
const tiny = (name: string, resumeDir?: string) =>
  runFigure({ name, outDir: tmp, resumeDir, timeScale: SCALE, rateQps: 6, requests: 12, log: (l) => logs.push(l) });

// RFC 4180 fields: series names hold commas and come quoted.
const csvRows = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => [...l.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => (m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])));
const read = (o: FigureOutcome, f: string) => readFileSync(join(o.dir, f), 'utf8');
let fig3: FigureOutcome;

test('metron-fig3: the decode vLLM stalls most, in both systems, and the three token rates per system', async () => {
  const o = (fig3 = await tiny('metron-fig3'));
  const timeline = csvRows(read(o, 'timeline.csv'));
  const names = [...new Set(timeline.map((r) => r[0]))];
  assert.is(names.length, 2);
  // The same planned request in both systems: the one vLLM stalls most.
  const ids = names.map((n) => /\((\d\d-\d{4}),/.exec(n)![1]);
  assert.is(ids[0], ids[1], names.join(' | '));
  // Tokens received never fall, and the largest step in time is the stall the legend names.
  for (const name of names) {
    const pts = timeline.filter((r) => r[0] === name).map((r) => [Number(r[1]), Number(r[2])]);
    for (let i = 1; i < pts.length; i++) assert.ok(pts[i][1] > pts[i - 1][1] && pts[i][0] >= pts[i - 1][0]);
    const stallMs = Math.max(...pts.slice(1).map((p, i) => p[0] - pts[i][0])) * 1000;
    const named = Number(/stall ([\d.]+) ms/.exec(name)![1]);
    assert.ok(Math.abs(named - stallMs) / stallMs < 0.01, `${name}: ${stallMs} ms`);
  }
  const svg = read(o, 'token-rates.svg');
  const rates = csvRows(read(o, 'rates.csv'));
  assert.equal(rates.map((r) => r[0]), ['vllm', 'sarathi']);
  for (const r of rates) {
    const [byTpot, byTbt, fluid] = [Number(r[8]), Number(r[9]), Number(r[10])];
    assert.ok(byTpot > 0 && byTbt > 0 && fluid > 0, r.join(','));
    // The TPOT rate is 1 ÷ the mean TPOT, as the paper defines it.
    assert.ok(Math.abs(byTpot * Number(r[2]) - 1) < 1e-9, r.join(','));
    // TBT percentiles rise with the percentile.
    const [p50, p85, p90, p99] = [3, 4, 5, 6].map((i) => Number(r[i]));
    assert.ok(p50 <= p85 && p85 <= p90 && p90 <= p99, r.join(','));
  }
  // claims.csv: the paper's ratios computed from rates.csv's own numbers, and a verdict for each.
  const claims = csvRows(read(o, 'claims.csv'));
  const [vllm, sarathi] = rates;
  const m07 = claims.find((r) => r[0] === 'M-07')!;
  assert.ok(Math.abs(Number(m07[6]) - Number(vllm[8]) / Number(sarathi[8])) < 1e-9, m07.join(','));
  const m08 = claims.find((r) => r[0] === 'M-08')!;
  assert.ok(Math.abs(Number(m08[6]) - Number(sarathi[9]) / Number(vllm[9])) < 1e-9, m08.join(','));
  for (const r of [m07, m08]) assert.ok(['holds', 'does not hold'].includes(r[8]), r.join(','));
  const m11 = claims.find((r) => r[0] === 'M-11')!;
  assert.is(m11[8], Number(sarathi[4]) > Number(vllm[4]) ? 'holds' : 'does not hold', 'P85 TBT ordering from rates.csv');
  assert.is(claims.find((r) => r[0] === 'M-09')![8], 'not comparable here');
  for (const name of ['1 / mean TPOT', '1 / TBT p99', 'fluid token rate (P99 ≥ 0.9)']) assert.is(svgPoints(svg, name).length, 2, name);
});

test('--resume reuses both finished runs and redraws the same figure', async () => {
  logs.length = 0;
  const again = await tiny('ignored', fig3.dir);
  assert.is(again.dir, fig3.dir);
  assert.is(logs.filter((l) => /: reusing /.test(l)).length, 2, logs.join('\n'));
  assert.is(read(again, 'rates.csv'), read(fig3, 'rates.csv'));
});

const cli = (...args: string[]) =>
  new Promise<{ code: number; stderr: string }>((done) =>
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'figure', ...args], { cwd: tmp }, (err, _o, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    ),
  );

test('a figure that does not exist exits 2 naming the choices', async () => {
  const r = await cli('metron-fig9');
  assert.is(r.code, 2);
  assert.match(r.stderr, /figure name must be one of metron-fig5d, metron-fig3, metron-fig6, vidur-fig5, vidur-fig6, deepspeed-throughput, got "metron-fig9"/);
  assert.not.match(r.stderr, /^\s+at /m);
});

test('metron-fig5d without --endpoints exits 2 saying what it measures; --endpoints on another figure exits 2', async () => {
  const r = await cli('metron-fig5d');
  assert.is(r.code, 2);
  assert.match(r.stderr, /metron-fig5d measures OpenAI-compatible endpoints, as the paper measured Groq, Fireworks and Anyscale: give --endpoints <file\.yaml>/);
  const other = await cli('metron-fig3', '--endpoints', 'e.yaml');
  assert.is(other.code, 2);
  assert.match(other.stderr, /--endpoints is for metron-fig5d, got figure "metron-fig3"/);
});

test('--check runs every figure: with a figure name it exits 2 saying so, before anything runs', async () => {
  const r = await cli('metron-fig3', '--check');
  assert.is(r.code, 2);
  assert.match(r.stderr, /--check runs every figure: give it no figure name and no --resume/);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
