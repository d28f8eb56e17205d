// scripts/nightly.mjs for real: one night of the fast recipe against the simulated engine, judged
// by `fluidcap compare` against an empty index (a new configuration). What the job prints is what
// a CI log shows a person: each run's capacity with its interval, then each configuration's
// capacity and interval as the gate judged it, and the verdict counts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, ROOT, childEnv } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-nightly-'));

function nightly(config: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'zx', 'build', 'cli.js'), join(ROOT, 'scripts', 'nightly.mjs'), '--config', config], { cwd: work, env: childEnv() });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

test('a night prints the capacity and interval it found, per run and per configuration, and exits 0 for a new configuration', async () => {
  const config = join(work, 'nightly.yaml');
  writeFileSync(config, `results: results\nrecipes: [${JSON.stringify(FAST_RECIPE)}]\nconfirm: false\n`);
  const r = await nightly(config);
  const out = r.stdout + r.stderr;
  assert.is(r.code, 0, out.slice(-3000));
  // The run's own headline, quoted with the recipe's name.
  // ("capacity 41.3 QPS, 95% interval 35.2–41.7, …"; a short test probe may leave it "open both ways")
  const headline = out.split('\n').find((l) => l.includes('fast.yaml: capacity'));
  assert.ok(headline, `no run headline in the night's output:\n${out.slice(-3000)}`);
  assert.match(headline!, /fast\.yaml: capacity .*QPS, 95% interval (open both ways|(open|[\d.]+)–(open|[\d.]+))/, headline);
  // The gate's view of the configuration: its estimate and the range it judges by (the interval,
  // else the decided or the search bracket when the interval is open), then its verdict.
  assert.match(r.stdout, /^capacity [\d.]+ QPS, (95% interval|decided bracket|search bracket) [\d.]+–([\d.]+|∞)( after \d+ confirming probe\(s\))?: \S+ \(/m, r.stdout);
  assert.match(r.stdout, /^new\s+\S/m);
  assert.match(r.stdout, /0 regression, 0 refused, 0 undecided, 0 pass, 1 new/);
  assert.ok(existsSync(join(work, 'results', 'gate', 'gate.xml')), 'no JUnit file');
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
