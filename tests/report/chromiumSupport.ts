// Headless Chromium for page tests: where it is, and a run of it that touches nothing but the
// file it is given (a fresh profile each time, no network, no GPU), for every page test.
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The Chromium binary ($FLUIDCAP_CHROMIUM, else chromium / chromium-browser / google-chrome on PATH), or null. */
export function findChromium(): string | null {
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

/** Runs Chromium with `args` after the flags above; its stdout and stderr. */
export function runChromium(bin: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const profile = mkdtempSync(join(tmpdir(), 'fluidcap-chromium-'));
  return new Promise((res, rej) => {
    execFile(bin, [...FLAGS, `--user-data-dir=${profile}`, ...args], { timeout: 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      rmSync(profile, { recursive: true, force: true });
      if (err) rej(new Error(`${bin} failed: ${err.message}\n${stderr.slice(-2000)}`));
      else res({ stdout, stderr });
    });
  });
}

/** What every page fluidcap writes carries: no scripts, no fetches. */
export const PAGE_CSP = `content="default-src 'none'; style-src 'unsafe-inline'"`;

// Installed first in <head> of the checked copy, so nothing the page does later escapes it.
const WATCH = `<script>
window.__problems = [];
addEventListener('error', (e) => __problems.push('error: ' + (e.message || (e.target && (e.target.src || e.target.href)) || e.type)), true);
addEventListener('unhandledrejection', (e) => __problems.push('unhandled rejection: ' + e.reason));
addEventListener('securitypolicyviolation', (e) => __problems.push('blocked: ' + e.violatedDirective + ' ' + e.blockedURI));
for (const k of ['error', 'warn', 'log', 'info']) { const orig = console[k]; console[k] = (...a) => { __problems.push(k + ': ' + a.join(' ')); orig.apply(console, a); }; }
</script>`;

/**
 * Loads a copy of the page `html` at `copyFile` (beside the page, so its relative links resolve the
 * same) in a `width`-px window, with the problem watcher first in <head> and `checkScript` last in
 * <body>; the copy may run its own inline scripts and nothing else. Resolves to the JSON the check
 * script wrote into <pre id="fluidcap-check"> (window.__problems holds what the page logged), and
 * Chromium's stderr. The copy is removed afterwards.
 */
export async function checkInChromium<T>(bin: string, html: string, copyFile: string, width: number, checkScript: string): Promise<{ check: T; stderr: string }> {
  if (!html.includes(PAGE_CSP)) throw new Error(`${copyFile}: the page carries no Content-Security-Policy`);
  writeFileSync(
    copyFile,
    html
      .replace(PAGE_CSP, `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"`)
      .replace('<head>', `<head>\n${WATCH}`)
      .replace('</body>', `${checkScript}\n</body>`),
  );
  try {
    const { stdout, stderr } = await runChromium(bin, [`--window-size=${width},900`, '--virtual-time-budget=10000', '--dump-dom', pathToFileURL(copyFile).href]);
    const m = /<pre id="fluidcap-check">([^<]*)<\/pre>/.exec(stdout);
    if (!m) throw new Error(`${copyFile}: the check script wrote no result; chromium said:\n${stderr.slice(-2000)}`);
    return { check: JSON.parse(m[1].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')) as T, stderr };
  } finally {
    rmSync(copyFile, { force: true });
  }
}
