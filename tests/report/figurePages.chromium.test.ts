// Every figure's page (index.html) in a real browser at a wide (1400 px) and a narrow (800 px)
// window, built from literal inputs (no engine runs): metron-fig3 from hand-made timelines,
// metron-fig5d from two endpoints' requests, metron-fig6 from a grid of probes and from measured
// per-SLO capacities, deepspeed-throughput from measured batches, vidur-fig6 from ranked twin rows
// (vidur-fig5's page is chromium.test.ts's). Each page carries the real paperNumbers.json claims
// table. A check script in a copy of each page reports each chart's marks and whether they lie
// inside it, its log axes, whether anything is wider than the window and whether a claim id is
// broken over lines; errors, console output and fetches are collected from the first line of the
// page on. The unmodified pages are screenshotted to .tmp/artifacts/figure-<name>-<width>.png for
// a person to look at. Skips (with a line saying so) when chromium is not installed, unless
// FLUIDCAP_E2E=require.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkInChromium, findChromium, runChromium } from './chromiumSupport.ts';
import { drawFigure, FIGURE_PAGE, type FigureArtifacts } from '../../harness/figures/output.ts';
import { figurePaper, parsePaperNumbers, type ClaimContext, type OurValues } from '../../harness/figures/paperNumbers.ts';
import { metronFacts, PAPER_TBT_DEADLINE_S } from '../../harness/figures/metronFacts.ts';
import { metronFig3 } from '../../harness/figures/metronFig3.ts';
import { TARGET_TBT_GRID_S, metronFig5d, type EndpointProbe } from '../../harness/figures/metronFig5d.ts';
import { metronFig6, metronFig6Measured, type Fig6MeasuredCapacity } from '../../harness/figures/metronFig6.ts';
import { batchRow, deepspeedThroughput, type BatchRequest } from '../../harness/figures/deepspeedThroughput.ts';
import { vidurFig6 } from '../../harness/figures/vidurFigs.ts';
import { DEADLINE_GRID_FACTORS, atDeadline } from '../../harness/report/probeDetail.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import type { RankedRow } from '../../harness/twin/twinSweepRank.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, '.tmp', 'artifacts');
const PAPER_NUMBERS = join(ROOT, 'harness', 'figures', 'paperNumbers.json');
const WIDTHS = [1400, 800] as const;


// Runs once the page has loaded; sizes are the drawn ones. A mark is inside its chart when its box lies within the chart's box.
const CHECK = `<script>
addEventListener('load', () => setTimeout(() => {
  const W = innerWidth;
  const inside = (b, c) => b.left >= c.left - 1 && b.top >= c.top - 1 && b.right <= c.right + 1 && b.bottom <= c.bottom + 1;
  const figures = [...document.querySelectorAll('svg[data-chart]')].map((svg) => {
    const box = svg.getBoundingClientRect();
    const count = (sel) => [...svg.querySelectorAll(sel)];
    const points = count('[aria-roledescription="point"]');
    const lines = count('[aria-roledescription="line mark"]');
    const outside = [...points, ...lines].filter((m) => { const b = m.getBoundingClientRect(); return (b.width > 0 || b.height > 0) && !inside(b, box); }).length;
    return {
      chart: svg.getAttribute('data-chart'),
      points: points.length,
      lines: lines.length,
      logAxes: count('[aria-roledescription="axis"]').filter((a) => / for a log scale/.test(a.getAttribute('aria-label'))).map((a) => a.getAttribute('aria-label').slice(0, 1)),
      outside,
      widthPx: box.width,
      rightPx: box.right,
    };
  });
  const tables = [...document.querySelectorAll('table')].map((t) => ({
    head: t.querySelector('th') ? t.querySelector('th').textContent : '',
    right: t.getBoundingClientRect().right,
    scrolls: t.parentElement.scrollWidth > t.parentElement.clientWidth + 1,
    // First-column cells laid out on more than one line (a range's client rects are one per line).
    wrappedFirst: [...t.querySelectorAll('tbody tr > td:first-child')].filter((td) => { const r = document.createRange(); r.selectNodeContents(td); return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size > 1; }).map((td) => td.textContent),
  }));
  const pre = document.createElement('pre');
  pre.id = 'fluidcap-check';
  pre.textContent = JSON.stringify({
    figures,
    tables,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: W,
    problems: window.__problems,
    resources: performance.getEntriesByType('resource').map((e) => e.name),
    heightPx: document.documentElement.scrollHeight,
  });
  document.body.append(pre);
}, 200));
</script>`;

interface Figure {
  chart: string;
  points: number;
  lines: number;
  logAxes: string[];
  outside: number;
  widthPx: number;
  rightPx: number;
}
interface Check {
  figures: Figure[];
  tables: { head: string; right: number; scrolls: boolean; wrappedFirst: string[] }[];
  scrollWidth: number;
  innerWidth: number;
  problems: string[];
  resources: string[];
  heightPx: number;
}

const paperData = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);
const paper = (figure: string, context: ClaimContext, facts: OurValues = {}) => figurePaper(paperData, figure, context, facts);
const metronPaper = (figure: string) => paper(figure, { trace: 'arxiv-4k', onHosts: false }, { ...metronFacts('arxiv-4k'), requests: 8 });
const SETUP = ['Engine: fluidcap\u2019s simulated engine (a local process) from recipes/papers/metron-vllm-sim.yaml: Llama-3-8B on one H100.'];

// A request streaming one token every `gapS`, with a `stallS` pause after its `stallAt`-th token.
function record(id: string, startS: number, tokens: number, gapS: number, stallAt = -1, stallS = 0): TimelineRecord {
  const chunks: [number, number][] = [];
  let t = startS + 0.05;
  for (let i = 0; i < tokens; i++) {
    chunks.push([+t.toFixed(6), 1]);
    t += gapS + (i === stallAt ? stallS : 0);
  }
  return { id, scheduledS: startS, sentS: startS, promptTokens: 500 + 10 * tokens, maxTokens: tokens, outputTokens: tokens, chunks, status: 'ok', httpStatus: 200, error: null };
}
const records = (gapS: number, stallS: number) => Array.from({ length: 8 }, (_, i) => record(`r${i}`, i * 0.5, 30, gapS, i % 3 === 0 ? 10 : -1, stallS));

const metrics = (gapS: number, stallS = 0) => records(gapS, stallS).map((r) => computeRequestMetrics(r, { dpS: 0.3, tbtDeadlineS: PAPER_TBT_DEADLINE_S }));

// Ranked twin configurations: two GPU types × two tensor parallelisms × two batch sizes, capacity scaled per trace.
function rankedRows(scale: number): RankedRow[] {
  const rows: RankedRow[] = [];
  for (const [gpuProfile, price] of [['h100-sxm-80gb', 6.16], ['a100-sxm-80gb', 3.2]] as const) {
    for (const tp of [2, 4]) {
      for (const batch of [64, 128]) {
        const capacityQps = scale * ((tp === 2 ? 3 : 5) * (gpuProfile.startsWith('h100') ? 2 : 1) + batch / 128);
        rows.push({
          id: `${gpuProfile}-tp${tp}-bs${batch}`, values: { tensorParallel: tp, maxNumSeqs: batch }, status: 'ranked', reason: '', model: 'llama-2-70b', gpuProfile, scheduler: 'sarathi',
          tensorParallel: tp, gpuCount: tp, usdPerGpuHour: price, capacityQps, bracket: null, outcome: 'converged', probes: 6, meanPromptTokens: 1000, meanOutputTokens: 200,
          ttftP90S: 0.5, tbtP99S: 0.1, virtualS: 600, wallS: 2, rank: 0, label: `${gpuProfile.slice(0, 4)} TP${tp} seqs${batch}`, identicalTo: null, usdPerHour: price * tp, qpsPerUsdPerHour: capacityQps / (price * tp), usdPerMillionTokens: 1,
        });
      }
    }
  }
  rows.sort((a, b) => b.qpsPerUsdPerHour! - a.qpsPerUsdPerHour!).forEach((r, i) => (r.rank = i + 1));
  return rows;
}

const cap = (passQps: number | null, failQps: number | null, outcome: string): Fig6MeasuredCapacity => ({ capacityQps: passQps ?? 0, passQps, failQps, outcome, reason: `the search ended ${outcome} after its probes at 1, 2 and 4 QPS`, probesUsed: 3, run: 'runs/vllm-tbt-tpot99-fluidity' });

// Two endpoints: one stalls a third of its requests 400 ms, one streams steadily every 30 ms.
const endpoint = (key: string, label: string, m: EndpointProbe['metrics']): EndpointProbe => ({ key, label, model: 'llama-3-8b', url: 'http://127.0.0.1:8000', rateQps: 4, metrics: m, clientErrorS: null });
const ENDPOINTS = [endpoint('stalls', 'Stalls', metrics(0.02, 0.4)), endpoint('steady', 'Steady', metrics(0.03))];
// How many of the deadlines (as judged) have a miss rate above 0, so a mark on a log axis.
const missedDeadlines = (m: EndpointProbe['metrics'], grid: readonly number[]) => grid.filter((dd) => atDeadline(m, dd, 99).missRate > 0).length;
const PAPER_GRID = DEADLINE_GRID_FACTORS.map((k) => +(k * PAPER_TBT_DEADLINE_S).toPrecision(6));

const MODEL = { name: 'llama-3-8b', weightBytes: 16e9, kvBytesPerToken: 131072, hiddenSize: 4096 };
const batch = (b: number): BatchRequest[] => Array.from({ length: b }, (_, i) => ({ sentOffsetS: i * 0.001, ttftS: 0.05 * b, e2eS: 0.05 * b + 31 * 0.02 * (1 + b / 16), ok: true, outputTokens: 32 }));
const BATCH_SIZES = [1, 2, 4, 8, 16];

/** Each figure and the marks its charts must show, by chart (data-chart slug). */
const FIGURES: { name: string; build: () => FigureArtifacts; marks: Record<string, { points?: number; lines?: number; logY?: boolean }> }[] = [
  {
    name: 'metron-fig3',
    build: () =>
      metronFig3({
        systems: [
          { key: 'vllm', label: 'vLLM', rateQps: 2, records: records(0.02, 0.4), fit: null, ttftSlackS: 0.3, clientErrorS: 0.002 },
          { key: 'sarathi', label: 'Sarathi-Serve', rateQps: 2, records: records(0.025, 0.05), fit: null, ttftSlackS: 0.3, clientErrorS: null },
        ],
        timeScale: 0.5,
        paper: metronPaper('metron-fig3'),
        setup: SETUP,
      }),
    // The stalled request in both systems: a line each; three rates per system.
    marks: { timeline: { lines: 2 }, 'token-rates': { points: 6 } },
  },
  {
    name: 'metron-fig5d',
    build: () => metronFig5d({ endpoints: ENDPOINTS, percentile: 99, minFluidity: 0.9, paper: paper('metron-fig5d', { trace: 'endpoints', onHosts: true }, { readAtMissRate: 0.1 }), setup: SETUP }),
    // A dot per target deadline per endpoint on each chart (the miss rate on a log y axis, where a rate of 0 has no mark).
    marks: { 'miss-rate': { points: ENDPOINTS.reduce((n, e) => n + missedDeadlines(e.metrics, TARGET_TBT_GRID_S), 0), lines: 2, logY: true }, fluidity: { points: 2 * TARGET_TBT_GRID_S.length, lines: 2 } },
  },
  {
    name: 'metron-fig6',
    // vLLM: smooth at 1 QPS; at 2 QPS three of eight decodes stall 400 ms (the median TPOT still
    // passes, the tails do not); 60 ms gaps at 4 QPS. Sarathi-Serve: smooth at every rate.
    build: () =>
      metronFig6({
        systems: [
          { key: 'vllm', label: 'vLLM', probes: [{ rateQps: 1, metrics: metrics(0.02) }, { rateQps: 2, metrics: metrics(0.02, 0.4) }, { rateQps: 4, metrics: metrics(0.06) }] },
          { key: 'sarathi', label: 'Sarathi-Serve', probes: [1, 2, 4].map((rateQps) => ({ rateQps, metrics: metrics(0.01 + 0.001 * rateQps) })) },
        ],
        timeScale: 1,
        tbtDeadlineS: PAPER_TBT_DEADLINE_S,
        ttftSlackS: 0.3,
        paper: metronPaper('metron-fig6'),
        setup: SETUP,
      }),
    // A capacity for every SLO definition of both systems (vLLM 1, 2, 1, 1 QPS; Sarathi-Serve at least 4); a CDF line per system;
    // Fig. 6(b)'s miss rate by target TBT at fluidity capacity, a dot per deadline with a miss.
    marks: { capacity: { points: 8 }, 'miss-rate-cdf': { lines: 2 }, 'miss-rate-by-tbt': { points: missedDeadlines(metrics(0.02), PAPER_GRID) + missedDeadlines(metrics(0.01 + 0.001 * 4), PAPER_GRID), logY: true } },
  },
  {
    name: 'metron-fig6-measured',
    build: () =>
      metronFig6Measured({
        systems: [
          { key: 'vllm', label: 'vLLM', capacities: { tbtP99: cap(2, 2.5, 'converged'), tpotP50: cap(8, null, 'at-least-max'), tpotP99: cap(null, 0.5, 'below-min'), fluidity: cap(1.5, 2, 'converged') }, atFluidityCapacity: metrics(0.02), verdicts: [] },
          { key: 'sarathi', label: 'Sarathi-Serve', capacities: { tbtP99: cap(4, 4.5, 'converged'), tpotP50: cap(8, null, 'at-least-max'), tpotP99: cap(6, 6.5, 'converged'), fluidity: cap(3, 3.5, 'converged') }, atFluidityCapacity: metrics(0.01), verdicts: [] },
        ],
        timeScale: 0.5,
        tbtDeadlineS: PAPER_TBT_DEADLINE_S,
        ttftSlackS: 0.3,
        paper: metronPaper('metron-fig6'),
        setup: SETUP,
      }),
    // Seven measured capacities (vLLM's TPOT P99 search found none); a CDF line per system; the miss rate by target TBT of each.
    marks: { capacity: { points: 7 }, 'miss-rate-cdf': { lines: 2 }, 'miss-rate-by-tbt': { points: missedDeadlines(metrics(0.02), PAPER_GRID.map((d) => d * 0.5)) + missedDeadlines(metrics(0.01), PAPER_GRID.map((d) => d * 0.5)), logY: true } },
  },
  {
    name: 'deepspeed-throughput',
    build: () =>
      deepspeedThroughput({
        model: MODEL,
        rows: BATCH_SIZES.map((b) => batchRow(batch(b), MODEL, 512, 32, 0.5)),
        timeScale: 0.5,
        paper: paper('deepspeed-throughput', { trace: 'fixed 512/32', onHosts: false }, { formulas: 'prefill B·P ÷ prefill latency; decode B·(G − 1) ÷ decode latency; total B·G ÷ (prefill + decode)', promptTokens: 512, genTokens: 32, warmupLoops: 2 }),
        setup: SETUP,
      }),
    // Three dotted lines per chart, a dot per batch size (the model-weights line has none).
    marks: { latency: { points: 3 * BATCH_SIZES.length, lines: 3 }, throughput: { points: 3 * BATCH_SIZES.length, lines: 3 }, memory: { points: 2 * BATCH_SIZES.length, lines: 3 } },
  },
  {
    name: 'vidur-fig6',
    build: () => {
      const traces = [['chat-1m', 1], ['arxiv-4k', 0.6], ['bwb-4k', 0.3]] as const;
      return vidurFig6({ traces: traces.map(([trace, s]) => ({ trace, rows: rankedRows(s), twinWallS: 12 })), paper: paper('vidur-fig6', { trace: traces.map(([t]) => t).join(', '), onHosts: false }, { traces: traces.map(([t]) => t).join(', ') }), setup: [] });
    },
    // Best, best on A100, best on H100 for each of the three traces.
    marks: { 'best-by-trace': { points: 9 } },
  },
];

async function checkPage(bin: string, page: string, width: number): Promise<Check> {
  const { check, stderr } = await checkInChromium<Check>(bin, readFileSync(page, 'utf8'), page.replace(/\.html$/, `.checked-${width}.html`), width, CHECK);
  // Chromium's own console log (CSP violations and the like) says nothing about the page either.
  assert.equal(stderr.split('\n').filter((l) => /CONSOLE/.test(l) && l.includes('.checked-')), [], `${page} @ ${width}: chromium logged`);
  return check;
}

const bin = findChromium();
if (!bin) {
  if (process.env.FLUIDCAP_E2E === 'require') {
    test('chromium is installed (FLUIDCAP_E2E=require)', () => assert.unreachable('no chromium on PATH: apt-get install -y chromium (scripts/ci/setup-e2e.sh does)'));
  } else {
    console.log('SKIP report/figurePages.chromium: no chromium on PATH (apt-get install -y chromium; set FLUIDCAP_E2E=require to fail instead)');
  }
} else {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-figure-pages-'));
  for (const f of FIGURES) {
    test(`${f.name}'s ${FIGURE_PAGE} at ${WIDTHS.join(' and ')} px: the marks fed in, inside their charts; nothing wider than the window; nothing logged or fetched`, async () => {
      const drawn = await drawFigure(f.build());
      const dir = join(tmp, f.name);
      mkdirSync(dir, { recursive: true });
      for (const file of drawn.files) writeFileSync(join(dir, file.file), file.text);
      const page = join(dir, FIGURE_PAGE);
      const want = f.marks;
      assert.ok(drawn.claims.length > 0, `${f.name}: the page has no claims table to lay out`);
      for (const width of WIDTHS) {
        const c = await checkPage(bin, page, width);
        const at = `${f.name} @ ${width}`;
        assert.is(c.innerWidth, width, `${at}: window width`);
        assert.equal(c.figures.map((x) => x.chart).sort(), Object.keys(want).sort(), `${at}: charts`);
        for (const g of c.figures) {
          const w = want[g.chart];
          if (w.points !== undefined) assert.is(g.points, w.points, `${at}: ${g.chart} points`);
          if (w.lines !== undefined) assert.is(g.lines, w.lines, `${at}: ${g.chart} lines`);
          assert.ok(g.points + g.lines > 0, `${at}: ${g.chart} has no data marks`);
          assert.equal(g.logAxes.includes('Y'), w.logY === true, `${at}: ${g.chart} y axis log: ${g.logAxes.join(',')}`);
          assert.is(g.outside, 0, `${at}: ${g.chart} drew ${g.outside} marks outside its chart`);
          assert.ok(g.rightPx <= width + 1, `${at}: ${g.chart} reaches ${g.rightPx} px`);
          assert.ok(g.widthPx > 300, `${at}: ${g.chart} laid out ${g.widthPx} px wide`);
        }
        for (const t of c.tables) {
          assert.not.ok(t.scrolls, `${at}: the table headed "${t.head}" hides columns behind a horizontal scroll`);
          assert.ok(t.right <= width + 1, `${at}: the table headed "${t.head}" ends at ${t.right} px`);
        }
        // The claims table's ids (M-11a) each on one line, not broken at the hyphen.
        const claimsTable = c.tables.find((t) => t.head === 'id');
        assert.ok(claimsTable, `${at}: no claims table`);
        assert.equal(claimsTable!.wrappedFirst, [], `${at}: claim ids broken over lines`);
        assert.ok(c.scrollWidth <= c.innerWidth, `${at}: the page scrolls sideways (${c.scrollWidth} > ${c.innerWidth} px)`);
        assert.equal(c.problems, [], `${at}: the page logged problems`);
        assert.equal(c.resources, [], `${at}: the page fetched something`);
        await screenshot(bin, page, `figure-${f.name}-${width}.png`, width, c.heightPx);
      }
    });
  }
  test.after(() => rmSync(tmp, { recursive: true, force: true }));
}

async function screenshot(bin: string, page: string, name: string, width: number, heightPx: number): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const png = join(ARTIFACTS, name);
  rmSync(png, { force: true });
  const height = Math.min(16_000, Math.max(900, heightPx + 40));
  await runChromium(bin, [`--window-size=${width},${height}`, `--screenshot=${png}`, pathToFileURL(page).href]);
  assert.equal([...readFileSync(png).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${name}: not a PNG`);
  // A blank or black page compresses to a few kilobytes.
  assert.ok(statSync(png).size > 20_000, `${name}: the screenshot is nearly empty`);
  console.log(`screenshot: ${png} (${width} × ${height} px)`);
}
test.run();
