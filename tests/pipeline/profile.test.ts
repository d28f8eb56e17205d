// `fluidcap profile` on the simulated engine: the fit and its raw points are archived, no probe
// runs, and the engine is released.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, isAlive, onlyRunDir, readJson, readJsonl } from './support.ts';

const out = mkdtempSync(join(tmpdir(), 'fluidcap-profile-'));

test('profile: fit.json and prefill.jsonl written, no probes, engine gone, --json prints the fit', async () => {
  const r = await fluidcap(['profile', FAST_RECIPE, '--out', out, '--json'], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  const printed = JSON.parse(r.stdout) as { a: number; b: number; c: number; r2: number; n: number };
  const runDir = onlyRunDir(out);
  const fit = readJson<typeof printed>(join(runDir, 'profile', 'fit.json'));
  assert.equal(printed, fit);
  for (const k of ['a', 'b', 'c'] as const) assert.ok(fit[k] >= 0, `${k} = ${fit[k]}`);
  assert.ok(fit.b > 0 || fit.c > 0, 'prefill time grows with the prompt');
  const points = readJsonl(join(runDir, 'profile', 'prefill.jsonl'));
  const measured = points.filter((p) => p.warmup === false);
  assert.is(measured.length, fit.n);
  assert.ok(measured.every((p) => p.status === 'ok' && typeof p.prefillS === 'number' && (p.prefillS as number) > 0));
  assert.not.ok(existsSync(join(runDir, 'probes')), 'no load probe ran');
  assert.not.ok(existsSync(join(runDir, 'capacity.json')));
  const manifest = readJson<{ status: string; host: { pid: number } }>(join(runDir, 'manifest.json'));
  assert.is(manifest.status, 'completed');
  assert.not.ok(isAlive(manifest.host.pid), `the simulated engine (pid ${manifest.host.pid}) outlived the profile`);
});

test.after(() => rmSync(out, { recursive: true, force: true }));
test.run();
