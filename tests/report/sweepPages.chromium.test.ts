// The sweep's report.html and the twin sweep's report.html in a real browser (headless Chromium,
// Debian's `chromium`), at 1400 and at 800 px wide: every chart draws its data marks inside
// itself, the page links each run's own report (relative, inside the sweep directory, the file
// there), nothing is wider than the window (the page, each table and each chart), and nothing
// is fetched or logged. Screenshots go to .tmp/artifacts/ (sweep-1400.png, sweep-800.png,
// twin-sweep-1400.png, twin-sweep-800.png) for a person to look at. The sweep's runs are synthetic
// run directories behind the real sweep executor; the twin sweep is real (virtual time, seconds).
// Skips (with a line saying so) when chromium is not installed, unless FLUIDCAP_E2E=require.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkInChromium, findChromium, runChromium } from './chromiumSupport.ts';
import { smallTwinSweep, syntheticSweep } from '../sweep/pageFixtures.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, '.tmp', 'artifacts');
const WIDTHS = [1400, 800] as const;


// The chart marks are what report/charts/ draws: points (each labelled "<series>: x, y"), line
// marks, and interval bars (rule marks of the range layer), inside the chart's <svg data-chart>.
const CHECK = `<script>
addEventListener('load', () => setTimeout(() => {
  const inside = (b, c) => b.left >= c.left - 1 && b.top >= c.top - 1 && b.right <= c.right + 1 && b.bottom <= c.bottom + 1;
  const figures = [...document.querySelectorAll('svg[data-chart]')].map((svg) => {
    const box = svg.getBoundingClientRect();
    const count = (sel) => [...svg.querySelectorAll(sel)];
    const points = count('[aria-roledescription="point"]');
    const lines = count('[aria-roledescription="line mark"]');
    const ranges = count('.range_marks [aria-roledescription="rule mark"]');
    const outside = [...points, ...lines, ...ranges].filter((m) => { const b = m.getBoundingClientRect(); return (b.width > 0 || b.height > 0) && !inside(b, box); }).length;
    const series = new Set(points.map((p) => (p.getAttribute('aria-label') || '').split(': ')[0]));
    return { title: svg.getAttribute('aria-label'), points: points.length, lines: lines.length, ranges: ranges.length, marks: points.length + lines.length + ranges.length, pointSeries: series.size, outside, right: box.right };
  });
  const tables = [...document.querySelectorAll('table')].map((t) => ({
    head: t.querySelector('th') ? t.querySelector('th').textContent : '',
    right: t.getBoundingClientRect().right,
    scrolls: t.parentElement.scrollWidth > t.parentElement.clientWidth + 1,
  }));
  const pre = document.createElement('pre');
  pre.id = 'fluidcap-check';
  pre.textContent = JSON.stringify({
    figures,
    tables,
    links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    heightPx: document.documentElement.scrollHeight,
    problems: window.__problems,
    resources: performance.getEntriesByType('resource').map((e) => e.name),
  });
  document.body.append(pre);
}, 200));
</script>`;

interface Check {
  figures: { title: string; points: number; lines: number; ranges: number; marks: number; pointSeries: number; outside: number; right: number }[];
  tables: { head: string; right: number; scrolls: boolean }[];
  links: string[];
  scrollWidth: number;
  innerWidth: number;
  heightPx: number;
  problems: string[];
  resources: string[];
}


/** Loads an instrumented copy of `page` (beside it, so its relative links resolve the same) at `width` px. */
async function checkPage(bin: string, page: string, width: number): Promise<Check> {
  return (await checkInChromium<Check>(bin, readFileSync(page, 'utf8'), join(dirname(page), `.checked-${width}.html`), width, CHECK)).check;
}

function assertFits(c: Check, what: string): void {
  assert.is(c.innerWidth, c.innerWidth > 1000 ? 1400 : 800, `${what}: window width`);
  assert.ok(c.scrollWidth <= c.innerWidth, `${what}: the page is ${c.scrollWidth} px wide in a ${c.innerWidth} px window`);
  for (const t of c.tables) {
    assert.not.ok(t.scrolls, `${what}: the table headed "${t.head}" hides columns behind a horizontal scroll`);
    assert.ok(t.right <= c.innerWidth, `${what}: the table headed "${t.head}" ends at ${t.right} px`);
  }
  for (const f of c.figures) {
    assert.ok(f.marks > 0, `${what}: ${f.title} has no data marks`);
    assert.is(f.outside, 0, `${what}: ${f.title}: ${f.outside} marks drawn outside the chart`);
    assert.ok(f.right <= c.innerWidth, `${what}: ${f.title} ends at ${f.right} px`);
  }
  assert.equal(c.problems, [], `${what}: the page logged problems`);
  assert.equal(c.resources, [], `${what}: the page fetched something`);
}

async function screenshot(bin: string, page: string, name: string, width: number, heightPx: number): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const png = join(ARTIFACTS, name);
  rmSync(png, { force: true });
  const height = Math.min(16_000, Math.max(900, heightPx));
  await runChromium(bin, [`--window-size=${width},${height}`, `--screenshot=${png}`, pathToFileURL(page).href]);
  assert.equal([...readFileSync(png).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'not a PNG');
  assert.ok(statSync(png).size > 20_000, `${name}: the screenshot is nearly empty`);
  console.log(`screenshot: ${png} (${width} × ${height} px)`);
  return png;
}

const bin = findChromium();
if (!bin) {
  if (process.env.FLUIDCAP_E2E === 'require') {
    test('chromium is installed (FLUIDCAP_E2E=require)', () => assert.unreachable('no chromium on PATH: apt-get install -y chromium (scripts/ci/setup-e2e.sh does)'));
  } else {
    console.log('SKIP report/sweepPages.chromium: no chromium on PATH (apt-get install -y chromium; set FLUIDCAP_E2E=require to fail instead)');
  }
} else {
  test('the sweep page: capacity charts, a link to each run report inside the sweep, nothing wider than 1400 or 800 px', async () => {
    const sweep = await syntheticSweep();
    const page = join(sweep.sweepDir, 'report.html');
    for (const width of WIDTHS) {
      const c = await checkPage(bin, page, width);
      assertFits(c, `sweep page at ${width} px`);
      assert.equal(c.figures.map((f) => f.title), ['Capacity of each configuration', 'Capacity by maxNumSeqs', 'Capacity under each SLO definition']);
      // One line per scheduler, a dot for each of its configurations with a capacity (c01–c04).
      assert.equal([c.figures[1].lines, c.figures[1].points, c.figures[1].pointSeries], [2, 4, 2]);
      // Four capacity dots (c01–c04; the invalid c06 has none, c05 failed), each with its interval bar (c04's open above).
      const cap = c.figures[0];
      assert.equal([cap.points, cap.ranges], [4, 4]);
      // One link per completed run with a report, then report.csv; each relative, inside the sweep, and there.
      const runLinks = c.links.filter((l) => l.endsWith('/report.html'));
      assert.is(runLinks.length, 5, c.links.join(' '));
      for (const href of c.links) {
        assert.not.match(href, /^(\/|[a-z]+:)/i, `${href} is not relative`);
        const target = resolve(sweep.sweepDir, decodeURIComponent(href));
        assert.ok(target.startsWith(sweep.sweepDir + sep), `${href} leaves the sweep directory`);
        assert.ok(existsSync(target) && lstatSync(target).isFile(), `${href} names no file`);
      }
      await screenshot(bin, page, `sweep-${width}.png`, width, c.heightPx);
    }
    rmSync(sweep.root, { recursive: true, force: true });
  });

  test('the twin sweep page: ranking charts, grouped identical configurations, links to its files, nothing wider than 1400 or 800 px', async () => {
    const twin = await smallTwinSweep(2);
    const page = join(twin.dir, 'report.html');
    const html = readFileSync(page, 'utf8');
    assert.match(html, /Every number here came from fluidcap/);
    for (const width of WIDTHS) {
      const c = await checkPage(bin, page, width);
      assertFits(c, `twin sweep page at ${width} px`);
      assert.equal(c.figures.map((f) => f.title), ['QPS per $/hour of each configuration, by rank', 'Capacity against the hourly price']);
      const ranked = twin.rows.filter((r) => r.rank !== null).length;
      for (const f of c.figures) assert.is(f.points, ranked, `${f.title}: one mark per ranked configuration`);
      for (const href of c.links) assert.ok(existsSync(join(twin.dir, decodeURIComponent(href))), href);
      assert.ok(c.links.includes('top-2.yaml') && c.links.includes('twin-ranking.csv'), c.links.join(' '));
      await screenshot(bin, page, `twin-sweep-${width}.png`, width, c.heightPx);
    }
    rmSync(twin.root, { recursive: true, force: true });
  });
}
test.run();
