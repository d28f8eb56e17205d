// report.html in a real browser: headless Chromium (Debian's `chromium`) loads the report of a
// synthetic run with real timelines, and a check script placed in a copy of the page reports, for
// every chart, how many of its data marks were laid out with a size inside the chart; errors,
// console errors, blocked or attempted fetches are collected from the first line of the page on.
// The DOM is read back with --dump-dom. The unmodified page is then screenshotted to
// .tmp/artifacts/report.png for a person to look at. Skips (with a line saying so) when chromium
// is not installed, unless FLUIDCAP_E2E=require.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeSyntheticRun } from './syntheticRun.ts';
import { writeReports } from '../../harness/report/write.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, '.tmp', 'artifacts');

function findChromium(): string | null {
  const names = process.env.FLUIDCAP_CHROMIUM ? [process.env.FLUIDCAP_CHROMIUM] : ['chromium', 'chromium-browser', 'google-chrome'];
  for (const name of names) {
    const candidates = name.includes('/') ? [name] : (process.env.PATH ?? '').split(delimiter).map((d) => join(d, name));
    for (const c of candidates) {
      try {
        accessSync(c, constants.X_OK);
        return c;
      } catch {
        // not here
      }
    }
  }
  return null;
}

// Flags of a browser that touches nothing but the file it is given.
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--hide-scrollbars',
  '--enable-logging=stderr',
  '--log-level=0',
];

function chromium(bin: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const profile = mkdtempSync(join(tmpdir(), 'fluidcap-chromium-'));
  return new Promise((res, rej) => {
    execFile(bin, [...FLAGS, `--user-data-dir=${profile}`, ...args], { timeout: 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      rmSync(profile, { recursive: true, force: true });
      if (err) rej(new Error(`${bin} failed: ${err.message}\n${stderr.slice(-2000)}`));
      else res({ stdout, stderr });
    });
  });
}

// Installed first in <head>, so nothing the page does later escapes it.
const WATCH = `<script>
window.__problems = [];
addEventListener('error', (e) => __problems.push('error: ' + (e.message || (e.target && (e.target.src || e.target.href)) || e.type)), true);
addEventListener('unhandledrejection', (e) => __problems.push('unhandled rejection: ' + e.reason));
addEventListener('securitypolicyviolation', (e) => __problems.push('blocked: ' + e.violatedDirective + ' ' + e.blockedURI));
for (const k of ['error', 'warn']) { const orig = console[k]; console[k] = (...a) => { __problems.push(k + ': ' + a.join(' ')); orig.apply(console, a); }; }
</script>`;

// Runs once the page has loaded and the events queued by loading (CSP reports) were delivered;
// getBBox forces layout, so sizes are the drawn ones.
const CHECK = `<script>
addEventListener('load', () => setTimeout(() => {
  const figures = [...document.querySelectorAll('figure svg')].map((svg) => {
    const vb = svg.viewBox.baseVal;
    const drawn = new Set();
    let marks = 0;
    for (const m of svg.querySelectorAll('.series')) {
      marks++;
      const b = m.getBBox();
      const inside = b.x >= -1 && b.y >= -1 && b.x + b.width <= vb.width + 1 && b.y + b.height <= vb.height + 1;
      if ((b.width > 0 || b.height > 0) && inside && m.getBoundingClientRect().width > 0) drawn.add(m.getAttribute('data-s'));
    }
    return { title: svg.getAttribute('aria-label'), series: Number(svg.getAttribute('data-series')), marks, seriesDrawn: drawn.size, widthPx: svg.getBoundingClientRect().width };
  });
  const pre = document.createElement('pre');
  pre.id = 'fluidcap-check';
  pre.textContent = JSON.stringify({
    figures,
    problems: window.__problems,
    resources: performance.getEntriesByType('resource').map((e) => e.name),
    heightPx: document.documentElement.scrollHeight,
  });
  document.body.append(pre);
}, 200));
</script>`;

interface Check {
  figures: { title: string; series: number; marks: number; seriesDrawn: number; widthPx: number }[];
  problems: string[];
  resources: string[];
  heightPx: number;
}

const bin = findChromium();
if (!bin) {
  if (process.env.FLUIDCAP_E2E === 'require') {
    test('chromium is installed (FLUIDCAP_E2E=require)', () => assert.unreachable('no chromium on PATH: apt-get install -y chromium (scripts/ci/setup-e2e.sh does)'));
  } else {
    console.log('SKIP report/chromium: no chromium on PATH (apt-get install -y chromium; set FLUIDCAP_E2E=require to fail instead)');
  }
} else {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-report-browser-'));
  const dir = writeSyntheticRun(join(tmp, 'run'));
  writeReports(dir);
  const html = readFileSync(join(dir, 'report.html'), 'utf8');
  let check: Check;

  // The report forbids scripts and fetches; the copy allows its own inline scripts and nothing else.
  const csp = `content="default-src 'none'; style-src 'unsafe-inline'"`;
  async function checkInBrowser(page: string, name: string): Promise<{ check: Check; stderr: string }> {
    const instrumented = page
      .replace(csp, `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"`)
      .replace('<head>', `<head>\n${WATCH}`)
      .replace('</body>', `${CHECK}\n</body>`);
    const file = join(dir, name);
    writeFileSync(file, instrumented);
    const { stdout, stderr } = await chromium(bin!, ['--window-size=1300,900', '--virtual-time-budget=10000', '--dump-dom', pathToFileURL(file).href]);
    const m = /<pre id="fluidcap-check">([^<]*)<\/pre>/.exec(stdout);
    assert.ok(m, `the check script wrote no result; chromium said:\n${stderr.slice(-2000)}`);
    const json = m![1].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    return { check: JSON.parse(json) as Check, stderr };
  }

  test('every chart of report.html draws its marks in Chromium, and the page logs no error', async () => {
    assert.ok(html.includes(csp), 'report.html carries no Content-Security-Policy');
    const r = await checkInBrowser(html, 'report.checked.html');
    check = r.check;
    const svgs = html.match(/<svg /g)?.length ?? 0;
    assert.ok(svgs >= 10, `only ${svgs} charts in the report`);
    assert.is(check.figures.length, svgs, 'the browser found a different number of charts');
    for (const f of check.figures) {
      assert.ok(f.marks > 0, `${f.title}: no data marks`);
      assert.is(f.seriesDrawn, f.series, `${f.title}: ${f.seriesDrawn} of ${f.series} series drew a mark of non-zero size inside the chart`);
      assert.ok(f.widthPx > 300, `${f.title}: laid out ${f.widthPx} px wide`);
    }
    assert.equal(check.problems, []);
    assert.equal(check.resources, [], 'the page fetched something');
    // Chromium's own console log (CSP violations and the like) says nothing about the page either.
    assert.equal(r.stderr.split('\n').filter((l) => /CONSOLE/.test(l) && l.includes('report.checked.html')), []);
  });

  test('the check can fail: a series drawn outside its chart, a console error and a fetch are caught', async () => {
    // The CDF's first line (a line without dots) moved out of the chart.
    const at = html.indexOf('aria-label="TBT distribution (CDF)"');
    assert.ok(at > 0);
    const broken = (html.slice(0, at) + html.slice(at).replace(/(<path d=")[^"]*(" fill="none" stroke="[^"]*" stroke-width="2" class="series" data-s="0")/, '$1M-900 -900 L-800 -800$2'))
      .replace('</body>', `<img src="https://example.invalid/x.png" alt="">\n<script>console.error('boom')</script>\n</body>`);
    const { check: bad } = await checkInBrowser(broken, 'report.broken.html');
    assert.ok(bad.figures.some((f) => f.seriesDrawn < f.series), 'the misplaced series was counted as drawn');
    assert.ok(bad.problems.includes('error: boom'), bad.problems.join('; '));
    assert.ok(bad.problems.some((p) => p.startsWith('blocked: ') && p.includes('example.invalid')), bad.problems.join('; '));
  });

  test('a screenshot of the whole page goes to .tmp/artifacts/report.png', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const png = join(ARTIFACTS, 'report.png');
    rmSync(png, { force: true });
    const height = Math.min(16_000, Math.max(900, check?.heightPx ?? 6000));
    await chromium(bin, [`--window-size=1300,${height}`, `--screenshot=${png}`, pathToFileURL(join(dir, 'report.html')).href]);
    const head = readFileSync(png).subarray(0, 8);
    assert.equal([...head], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'not a PNG');
    assert.ok(statSync(png).size > 50_000, 'the screenshot is nearly empty');
    console.log(`report screenshot: ${png} (1300 × ${height} px)`);
  });

  test.after(() => rmSync(tmp, { recursive: true, force: true }));
}
test.run();
