// Headless Chromium for page tests: where it is, and a run of it that touches nothing but the
// file it is given (a fresh profile each time, no network, no GPU), for every page test.
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

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
