// `fluidcap figure` end to end on the simulated engine at a tiny size (a dozen requests per
// system, time scale 0.5): both runs happen for real, the SVGs draw a mark per CSV point for each
// system, the miss rates agree with the metrics module's own per-request deadline counts, Fig. 3
// shows one real request's timeline in both systems, --resume reuses finished runs, and a bad name exits 2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runFigure, type FigureOutcome } from '../../harness/figures/runFigure.ts';
import { findProbeDir, readFit } from '../../harness/runDir/read.ts';
import { readJsonFile, readJsonLines } from '../../harness/runDir/jsonFiles.ts';
import { runPaths } from '../../harness/runDir/layout.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { predictPrefillS } from '../../harness/metrics/prefill.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { svgLines, svgPoints } from '../support/svgMarks.ts';

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
let fig5d: FigureOutcome;

test('metron-fig5d: a mark per CSV point for each system, and the miss rates the metrics module counts', async () => {
  fig5d = await tiny('metron-fig5d');
  assert.is(fig5d.status, 'completed');
  const svg = read(fig5d, 'miss-rate.svg');
  const csv = csvRows(read(fig5d, 'miss-rate.csv'));
  const series = [...new Set(csv.map((r) => r[0]))];
  assert.equal(series.map((s) => s.replace(/ @.*/, '')), ['vLLM', 'Sarathi-Serve']);
  series.forEach((name) => {
    const marks = svgPoints(svg, name);
    const points = csv.filter((r) => r[0] === name).length;
    // 14 target deadlines; how many of the smallest fall below the client's error depends on the
    // machine's load, but the largest (4 × the SLO's) never does.
    assert.ok(points >= 2, `${name}: ${points} points`);
    assert.is(marks.length, points, `${name}: marks in the SVG`);
  });
  assert.ok(svgLines(svg) >= 2, 'a line per system');
  // The miss rate is drawn on a log axis, so a rate of 0.1% stands apart from 0 (drawn on the floor).
  assert.match(svg, /aria-label="Y-axis titled '[^']*' for a log scale/);
  // The CSV's points are the by-deadline table's rows above the client's error.
  const table = csvRows(read(fig5d, 'by-deadline.csv'));
  const trusted = table.filter((r) => r[6] === 'true');
  assert.is(trusted.length, csv.length);
  for (const r of csv) assert.ok(trusted.some((t) => Number(t[2]) === Number(r[1]) && Number(t[4]) === Number(r[2])), `point ${r.join(',')} not in by-deadline.csv`);

  // Recount the 25 ms (paper time) miss rate of each run from its timelines, request by request.
  const state = readJsonFile(join(fig5d.dir, 'figure.json')) as { runs: Record<string, string> };
  for (const key of ['vllm', 'sarathi']) {
    const runDir = join(fig5d.dir, state.runs[key]);
    const cap = readJsonFile(runPaths(runDir).capacity) as { probes: { index: number; qps: number }[]; slo: { fluidity: { ttftSlackS: number } } };
    const fit = readFit(runPaths(runDir).fit)!;
    const probe = findProbeDir(runDir, cap.probes[0])!;
    const records = readJsonLines(probe.timelines) as unknown as TimelineRecord[];
    let missed = 0;
    let total = 0;
    for (const r of records.filter((x) => x.warmup !== true)) {
      const m = computeRequestMetrics(r, { dpS: predictPrefillS(fit, r.promptTokens) + cap.slo.fluidity.ttftSlackS, tbtDeadlineS: 0.025 * SCALE });
      if (!m.succeeded) continue;
      missed += m.deadlinesMissed;
      total += m.deadlinesTotal;
    }
    assert.is(cap.slo.fluidity.ttftSlackS, 0.3 * SCALE);
    const row = table.find((t) => t[0] === key && Number(t[2]) === 0.025)!;
    assert.ok(Math.abs(Number(row[4]) - missed / total) < 1e-12, `${key}: figure ${row[4]} vs recount ${missed / total}`);
  }
  const md = read(fig5d, 'README.md');
  assert.match(md, /time scale 0\.5/);
  // The paper's Fig. 5(d) compares public endpoints: its ordering is listed, not comparable here, with the reason.
  const claims = csvRows(read(fig5d, 'claims.csv'));
  const endpoints = claims.find((r) => r[0] === 'M-23' && r[1] === 'ordering')!;
  assert.is(endpoints[8], 'not comparable here');
  assert.match(endpoints[9], /^public endpoint: /);
  assert.match(md, /\| M-23 \| ordering \| .* \| \*\*not comparable here\*\* \| public endpoint: /);
  assert.ok(claims.some((r) => r[0] === 'M-22' && r[8] === 'setup' && r[6] === '0.1'), 'read at a 10% miss rate, as the paper');
});

test('--resume reuses both finished runs and redraws the same figure', async () => {
  logs.length = 0;
  const again = await tiny('ignored', fig5d.dir);
  assert.is(again.dir, fig5d.dir);
  assert.is(logs.filter((l) => /: reusing /.test(l)).length, 2, logs.join('\n'));
  assert.is(read(again, 'by-deadline.csv'), read(fig5d, 'by-deadline.csv'));
});

test('metron-fig3: the decode vLLM stalls most, in both systems, and the three token rates per system', async () => {
  const o = await tiny('metron-fig3');
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

test('--check runs every figure: with a figure name it exits 2 saying so, before anything runs', async () => {
  const r = await cli('metron-fig3', '--check');
  assert.is(r.code, 2);
  assert.match(r.stderr, /--check runs every figure: give it no figure name and no --resume/);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
