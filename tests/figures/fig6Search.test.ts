// metron-fig6 from measured capacities: the drawing on hand-made per-SLO results (a search that
// ended without a pass draws no mark and says why), which figure directories the search mode owns,
// then the figure end to end on the simulated engine with a tiny search (2 probes per run, 12
// requests): every capacity in capacity-by-slo.csv is the run's own capacity.json perSlo in the
// paper's time. About 1–2 minutes on this machine (four capacity runs).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metronFig6Measured, type Fig6MeasuredCapacity } from '../../harness/figures/metronFig6.ts';
import { fig6SearchOwns, runFig6Search } from '../../harness/figures/metronFig6Search.ts';
import { drawFigure } from '../../harness/figures/output.ts';
import { readJsonFile } from '../../harness/runDir/jsonFiles.ts';
import type { CapacityJson } from '../../harness/runDir/schema.ts';
import { svgPoints } from '../support/svgMarks.ts';

const csvRows = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => [...l.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => (m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])));

const cap = (passQps: number | null, failQps: number | null, outcome: string): Fig6MeasuredCapacity => ({ capacityQps: passQps ?? 0, passQps, failQps, outcome, reason: `why ${outcome}`, probesUsed: 3, run: 'runs/x' });

test('metronFig6Measured: a mark per measured capacity; a search without a pass draws none and says why', async () => {
  const a = metronFig6Measured({
    systems: [
      { key: 'vllm', label: 'vLLM', capacities: { tbtP99: cap(2, 2.5, 'converged'), tpotP50: cap(8, null, 'at-least-max'), tpotP99: cap(null, 0.5, 'below-min'), fluidity: cap(null, null, 'invalid-probes') }, atFluidityCapacity: [], verdicts: [] },
      { key: 'sarathi', label: 'Sarathi-Serve', capacities: { tbtP99: cap(4, 4.5, 'converged') }, atFluidityCapacity: [], verdicts: [] },
    ],
    timeScale: 0.5,
    tbtDeadlineS: 0.025,
    ttftSlackS: 0.3,
    paper: { claims: [], papers: {}, context: { trace: 'arxiv-4k', onHosts: false }, facts: {} },
    setup: [],
  });
  const drawn = await drawFigure(a);
  const file = (f: string) => drawn.files.find((x) => x.file === f)!.text;
  const rows = csvRows(file('capacity-by-slo.csv'));
  const vllm = Object.fromEntries(rows.filter((r) => r[0] === 'vllm').map((r) => [r[1], r]));
  assert.equal([vllm.tbtP99[3], vllm.tbtP99[4], vllm.tbtP99[5]], ['2', '2.5', 'converged']);
  assert.equal([vllm.tpotP99[3], vllm.tpotP99[5]], ['', 'below-min']);
  assert.equal([vllm.fluidity[3], vllm.fluidity[5], vllm.fluidity[9]], ['', 'invalid-probes', 'why invalid-probes']);
  assert.is(rows.find((r) => r[0] === 'sarathi' && r[1] === 'fluidity')![5], 'not-measured');
  const svg = file('capacity.svg');
  assert.is(svgPoints(svg, 'vLLM').length, 2, 'vLLM: tbtP99 and tpotP50');
  assert.is(svgPoints(svg, 'Sarathi-Serve').length, 1);
  assert.match(a.summary[0], /fluidity P99 → none \(invalid-probes\)/);
  assert.match(a.summary[0], /TPOT P99 → below 0\.5/);
  assert.match(a.summary[0], /TPOT P50 → ≥ 8/);
  assert.match(file('README.md'), /no capacity measured \(invalid-probes: why invalid-probes \[the run's words: its rates are the engine's, × 0\.5 for the paper's\]\)/);
});

test('the search mode draws metron-fig6 unless --grid is given, and resumes only its own directories', () => {
  assert.ok(fig6SearchOwns({ name: 'metron-fig6' }));
  assert.not.ok(fig6SearchOwns({ name: 'metron-fig6', grid: [2, 4] }));
  assert.not.ok(fig6SearchOwns({ name: 'metron-fig5d' }));
  assert.not.ok(fig6SearchOwns({ name: '', resumeDir: mkdtempSync(join(tmpdir(), 'fluidcap-not-a-figure-')) }));
});

test('end to end with a tiny search: the figure reports each run\u2019s perSlo in the paper\u2019s time', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-fig6-search-'));
  try {
    const scale = 0.5;
    const o = await runFig6Search({ name: 'metron-fig6', outDir: tmp, timeScale: scale, rateQps: 4, requests: 12, search: { maxProbes: 2, tolerance: 0.5 }, log: () => {} });
    assert.is(o.status, 'completed');
    assert.ok(fig6SearchOwns({ name: '', resumeDir: o.dir }));
    const state = readJsonFile(join(o.dir, 'figure.json')) as { runs: Record<string, string> };
    const rows = csvRows(readFileSync(join(o.dir, 'capacity-by-slo.csv'), 'utf8'));
    assert.is(rows.length, 8);
    const keys: Record<string, Record<string, string>> = { 'tbt-tpot99-fluidity': { tbt: 'tbtP99', tpot: 'tpotP99', fluidity: 'fluidity' }, tpot50: { tpot: 'tpotP50' } };
    for (const [job, rel] of Object.entries(state.runs)) {
      const [system, ...rest] = job.split('-');
      const part = rest.join('-');
      const capacity = readJsonFile(join(o.dir, rel, 'capacity.json')) as CapacityJson;
      assert.ok(capacity.probes.length <= 2, `${job}: ${capacity.probes.length} probes`);
      for (const p of capacity.perSlo!) {
        const row = rows.find((r) => r[0] === system && r[1] === keys[part][p.name])!;
        const paper = (q: number | null) => (q === null ? '' : String(+(q * scale).toPrecision(6)));
        assert.equal([row[3], row[4], row[5], row[8]], [p.bracket.passQps === null ? '' : paper(p.capacityQps), paper(p.bracket.failQps), p.outcome, rel], `${job} ${p.name}`);
      }
    }
    const verdicts = csvRows(readFileSync(join(o.dir, 'verdicts.csv'), 'utf8'));
    assert.ok(verdicts.length > 0 && verdicts.every((v) => ['pass', 'fail', 'no evidence'].includes(v[3])));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test.run();
