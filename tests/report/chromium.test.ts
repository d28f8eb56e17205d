// The pages a user opens, in a real browser at a wide (1400 px) and a narrow (800 px) window:
// headless Chromium (Debian's `chromium`) loads report.html of a synthetic run with real timelines,
// a figure's index.html (vidur-fig5 from literal ranked rows) and history.svg opened alone. A check
// script placed in a copy of each page reports, for every chart, its data marks (points, lines,
// binned cells, ranges, bands) and whether each was laid out inside its chart, the log axes, and
// whether anything is wider than the window (the page, a table, a chart); errors, console errors,
// blocked or attempted fetches are collected from the first line of the page on. The DOM is read back
// with --dump-dom. The unmodified pages are then screenshotted to .tmp/artifacts/ for a person to look
// at. Skips (with a line saying so) when chromium is not installed, unless FLUIDCAP_E2E=require.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeSyntheticRun } from './syntheticRun.ts';
import { checkInChromium, findChromium, PAGE_CSP, runChromium as chromium } from './chromiumSupport.ts';
import { writeReports } from '../../harness/report/write.ts';
import { historySvg } from '../../harness/gate/history.ts';
import type { IndexEntry } from '../../harness/runDir/resultsIndex.ts';
import { vidurFig5 } from '../../harness/figures/vidurFigs.ts';
import { figurePaper, parsePaperNumbers } from '../../harness/figures/paperNumbers.ts';

const PAPER_NUMBERS = join(import.meta.dirname, '..', '..', 'harness', 'figures', 'paperNumbers.json');
import { drawFigure, FIGURE_PAGE } from '../../harness/figures/output.ts';
import type { RankedRow } from '../../harness/twin/twinSweepRank.ts';
import { shown } from '../support/hooks.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, '.tmp', 'artifacts');
const WIDTHS = [1400, 800] as const;


// Runs once the page has loaded and the events queued by loading (CSP reports) were delivered;
// sizes are the drawn ones. A mark is inside its chart when its box lies within the chart's box.
const CHECK = `<script>
addEventListener('load', () => setTimeout(() => {
  const W = innerWidth;
  const inside = (b, c) => b.left >= c.left - 1 && b.top >= c.top - 1 && b.right <= c.right + 1 && b.bottom <= c.bottom + 1;
  const figures = [...document.querySelectorAll('svg[data-chart]')].map((svg) => {
    const box = svg.getBoundingClientRect();
    const count = (sel) => [...svg.querySelectorAll(sel)];
    const marks = [...count('[aria-roledescription="point"]'), ...count('[aria-roledescription="line mark"]'), ...count('.role-mark [aria-roledescription="rect mark"]'), ...count('.role-mark [aria-roledescription="rule mark"]')];
    const outside = marks.filter((m) => { const b = m.getBoundingClientRect(); return (b.width > 0 || b.height > 0) && !inside(b, box); }).length;
    return {
      chart: svg.getAttribute('data-chart'),
      points: count('[aria-roledescription="point"]').length,
      hollow: count('.points_hollow_marks [aria-roledescription="point"]').length,
      lines: count('[aria-roledescription="line mark"]').length,
      cells: count('.density_marks [aria-roledescription="rect mark"]').length,
      ranges: count('.range_marks [aria-roledescription="rule mark"]').length,
      bands: count('[class*="band_"] [aria-roledescription="rect mark"]').length,
      logAxes: count('[aria-roledescription="axis"]').filter((a) => / for a log scale/.test(a.getAttribute('aria-label'))).map((a) => a.getAttribute('aria-label').slice(0, 1)),
      outside,
      widthPx: box.width,
      rightPx: box.right,
    };
  });
  const wideTables = [...document.querySelectorAll('table')].filter((t) => t.getBoundingClientRect().right > W + 1).map((t) => t.querySelector('th')?.textContent);
  const pre = document.createElement('pre');
  pre.id = 'fluidcap-check';
  pre.textContent = JSON.stringify({
    figures,
    wideTables,
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
  hollow: number;
  lines: number;
  cells: number;
  ranges: number;
  bands: number;
  logAxes: string[];
  outside: number;
  widthPx: number;
  rightPx: number;
}
interface Check {
  figures: Figure[];
  wideTables: string[];
  scrollWidth: number;
  innerWidth: number;
  problems: string[];
  resources: string[];
  heightPx: number;
}

// Ranked configurations of a small twin sweep: two GPU types × two tensor parallelisms.
function rankedRows(): RankedRow[] {
  const rows: RankedRow[] = [];
  let rank = 1;
  for (const [gpuProfile, price] of [['h100-sxm-80gb', 6.16], ['a100-sxm-80gb', 3.2]] as const) {
    for (const tp of [2, 4]) {
      for (const batch of [64, 128]) {
        const capacityQps = (tp === 2 ? 3 : 5) * (gpuProfile.startsWith('h100') ? 2 : 1) + batch / 128;
        rows.push({
          id: `${gpuProfile}-tp${tp}-bs${batch}`, values: { tensorParallel: tp, maxNumSeqs: batch }, status: 'ranked', reason: '', model: 'llama-2-70b', gpuProfile, scheduler: 'sarathi',
          tensorParallel: tp, gpuCount: tp, usdPerGpuHour: price, capacityQps, bracket: null, outcome: 'converged', probes: 6, meanPromptTokens: 1000, meanOutputTokens: 200,
          ttftP90S: 0.5, tbtP99S: 0.1, virtualS: 600, wallS: 2, rank: 0, label: `${gpuProfile.slice(0, 4)} TP${tp} seqs${batch}`, identicalTo: null, usdPerHour: price * tp, qpsPerUsdPerHour: capacityQps / (price * tp), usdPerMillionTokens: 1,
        });
      }
    }
  }
  rows.sort((a, b) => b.qpsPerUsdPerHour! - a.qpsPerUsdPerHour!).forEach((r) => (r.rank = rank++));
  return rows;
}

const entry = (config: string, day: number, capacityQps: number): IndexEntry =>
  ({ v: 1, config, runId: `${config}-${day}`, runDir: `r${day}`, recipeName: 'quickstart', recipeSha256: null, engine: 'sim', model: 'llama-3-8b', image: null, imageDigest: null, gpuProfile: 'h100-sxm-80gb', gpuCount: 1, status: 'completed', outcome: 'converged', capacityQps, bracket: { passQps: capacityQps, failQps: capacityQps * 1.05 }, tolerance: 0.05, startedAt: `2026-01-0${day}T02:00:00.000Z` }) as unknown as IndexEntry;

const bin = findChromium();
if (!bin) {
  if (process.env.FLUIDCAP_E2E === 'require') {
    test('chromium is installed (FLUIDCAP_E2E=require)', () => assert.unreachable('no chromium on PATH: apt-get install -y chromium (scripts/ci/setup-e2e.sh does)'));
  } else {
    console.log('SKIP report/chromium: no chromium on PATH (apt-get install -y chromium; set FLUIDCAP_E2E=require to fail instead)');
  }
} else {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-report-browser-'));
  const dir = writeSyntheticRun(join(tmp, 'run'), { interval: true });
  const figDir = join(tmp, 'vidur-fig5');
  const historyFile = join(tmp, 'history.svg');
  const checks = new Map<string, Check>();

  async function checkInBrowser(page: string, where: string, name: string, width: number): Promise<{ check: Check; stderr: string }> {
    return checkInChromium<Check>(bin!, page, join(where, name), width, CHECK);
  }

  // What every page must satisfy at every width: marks inside their charts, nothing wider than the window, no error, nothing fetched.
  function assertLaidOut(c: Check, page: string, width: number) {
    for (const f of c.figures) {
      assert.is(f.outside, 0, `${page} @ ${width}: ${f.chart} drew ${f.outside} marks outside its chart`);
      assert.ok(f.rightPx <= width + 1, `${page} @ ${width}: ${f.chart} reaches ${f.rightPx} px`);
      assert.ok(f.widthPx > 300, `${page} @ ${width}: ${f.chart} laid out ${f.widthPx} px wide`);
    }
    assert.equal(c.wideTables, [], `${page} @ ${width}: tables wider than the window`);
    assert.ok(c.scrollWidth <= c.innerWidth, `${page} @ ${width}: the page scrolls sideways (${c.scrollWidth} > ${c.innerWidth} px)`);
    assert.equal(c.problems, [], `${page} @ ${width}`);
    assert.equal(c.resources, [], `${page} @ ${width}: the page fetched something`);
  }
  const fig = (c: Check, chart: string) => {
    const f = c.figures.find((x) => x.chart === chart);
    assert.ok(f, `no chart ${chart}: ${c.figures.map((x) => x.chart).join(', ')}`);
    return f!;
  };

  test.before(shown(async () => {
    await writeReports(dir);
    const drawn = await drawFigure(vidurFig5({ rows: rankedRows(), ttftP90MaxS: 2, tbtP99MaxS: 0.2, twinWallS: 12, paper: figurePaper(parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS), 'vidur-fig5', { trace: 'chat-1m', onHosts: false }), setup: [] }));
    mkdirSync(figDir, { recursive: true });
    for (const f of drawn.files) writeFileSync(join(figDir, f.file), f.text);
    writeFileSync(historyFile, await historySvg([entry('quickstart | sim', 1, 40), entry('quickstart | sim', 2, 41), entry('quickstart | sim', 3, 30), entry('sarathi | sim', 1, 52), entry('sarathi | sim', 3, 50)]));
  }));

  for (const width of WIDTHS) {
    test(`report.html at ${width} px: every chart's marks inside it, the interval band, early-stopped marks, log axes and binned cells; nothing wider than the window`, async () => {
      const html = readFileSync(join(dir, 'report.html'), 'utf8');
      assert.ok(html.includes(PAGE_CSP), 'report.html carries no Content-Security-Policy');
      const r = await checkInBrowser(html, dir, `report.checked-${width}.html`, width);
      const c = r.check;
      checks.set(`report-${width}`, c);
      assert.is(c.figures.length, html.match(/<svg /g)?.length ?? 0, 'the browser found a different number of charts');
      assert.ok(c.figures.length >= 12, `only ${c.figures.length} charts`);
      assertLaidOut(c, 'report', width);
      // The SLO chart: the interval band, and the early-stopped probe hollow (not a filled measurement).
      const slo = fig(c, 'fluidity-p99-by-request-rate');
      assert.is(slo.bands, 1, 'no interval band');
      assert.is(slo.points, 3);
      assert.ok(slo.hollow >= 1, 'the early-stopped probe is not marked');
      // The capacity interval drawn: the interval, the decided bracket and the bracket as ranges.
      assert.ok(fig(c, 'capacity-interval').ranges >= 3, 'the interval and brackets are not drawn');
      assert.is(fig(c, 'search-path').bands, 1);
      // The TBT tail on log–log axes; TTFT by prompt length as binned cells in three panels, not dots.
      assert.equal(fig(c, 'tbt-tail').logAxes.sort(), ['X', 'Y']);
      const ttft = fig(c, 'ttft-by-prompt');
      assert.ok(ttft.cells > 10 && ttft.points === 0, `TTFT: ${ttft.cells} cells, ${ttft.points} dots`);
      // The TBT chart marks its early-stopped probe.
      assert.ok(fig(c, 'tbt-by-request-rate').hollow >= 1, 'the early-stopped probe of the TBT chart is not marked');
      assert.ok(fig(c, 'capacity-by-slo').ranges >= 2);
      // Chromium's own console log (CSP violations and the like) says nothing about the page either.
      assert.equal(r.stderr.split('\n').filter((l) => /CONSOLE/.test(l) && l.includes('report.checked')), []);
    });

    test(`${FIGURE_PAGE} of vidur-fig5 at ${width} px: a mark per configuration, tensor parallelism as shape, nothing wider than the window`, async () => {
      const html = readFileSync(join(figDir, FIGURE_PAGE), 'utf8');
      const { check: c } = await checkInBrowser(html, figDir, `index.checked-${width}.html`, width);
      checks.set(`figure-${width}`, c);
      assertLaidOut(c, 'vidur-fig5', width);
      assert.is(fig(c, 'qps-per-dollar-vs-ttft').points, 8);
      assert.is(fig(c, 'qps-per-dollar-vs-tbt').points, 8);
      assert.match(html, /Symbol legend titled 'tensor parallelism'/);
    });
  }

  test('history.svg opened alone carries its own background, fonts and colours (no stylesheet)', () => {
    const svg = readFileSync(historyFile, 'utf8');
    assert.match(svg, /^<\?xml/);
    assert.match(svg, /<svg [^>]*width="\d+" height="\d+"/);
    assert.match(svg, /<rect width="\d+" height="\d+" fill="#ffffff"\/>/);
    assert.not.match(svg, /class="(grid|frame|tick|axis|series)"/);
    assert.ok((svg.match(/aria-roledescription="line mark"/g) ?? []).length >= 2, 'one line per configuration');
  });

  test('the check can fail: a mark drawn outside its chart, a table wider than the window, a console error and a fetch are caught', async () => {
    const html = readFileSync(join(dir, 'report.html'), 'utf8');
    const at = html.indexOf('data-chart="tbt-tail"');
    assert.ok(at > 0);
    const broken = (html.slice(0, at) + html.slice(at).replace('aria-roledescription="line mark"', 'aria-roledescription="line mark" transform="translate(-5000,-5000)"'))
      .replace('</body>', `<table><tr><th style="min-width:3000px">wide</th></tr></table>\n<img src="https://example.invalid/x.png" alt="">\n<script>console.error('boom')</script>\n</body>`);
    const { check: bad } = await checkInBrowser(broken, dir, 'report.broken.html', 800);
    assert.ok(bad.figures.some((f) => f.chart === 'tbt-tail' && f.outside > 0), 'the misplaced line was counted as inside');
    assert.equal(bad.wideTables, ['wide']);
    assert.ok(bad.scrollWidth > bad.innerWidth);
    assert.ok(bad.problems.includes('error: boom'), bad.problems.join('; '));
    assert.ok(bad.problems.some((p) => p.startsWith('blocked: ') && p.includes('example.invalid')), bad.problems.join('; '));
  });

  test('screenshots of each page at both widths go to .tmp/artifacts/', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const shots: [string, string, number][] = [];
    for (const width of WIDTHS) {
      shots.push([`report-${width}.png`, join(dir, 'report.html'), checks.get(`report-${width}`)?.heightPx ?? 8000]);
      shots.push([`figure-vidur-fig5-${width}.png`, join(figDir, FIGURE_PAGE), checks.get(`figure-${width}`)?.heightPx ?? 3000]);
      shots.push([`history-${width}.png`, historyFile, 700]);
    }
    for (const [name, file, heightPx] of shots) {
      const width = Number(/-(\d+)\.png$/.exec(name)![1]);
      const png = join(ARTIFACTS, name);
      rmSync(png, { force: true });
      const height = Math.min(16_000, Math.max(600, heightPx + 40));
      await chromium(bin, [`--window-size=${width},${height}`, `--screenshot=${png}`, pathToFileURL(file).href]);
      const head = readFileSync(png).subarray(0, 8);
      assert.equal([...head], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${name}: not a PNG`);
      // A blank or black page compresses to a few kilobytes.
      assert.ok(statSync(png).size > 20_000, `${name}: the screenshot is nearly empty`);
      console.log(`screenshot: ${png} (${width} × ${height} px)`);
    }
  });

  test.after(() => rmSync(tmp, { recursive: true, force: true }));
}
test.run();
