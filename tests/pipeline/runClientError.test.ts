// A whole `fluidcap run` on the simulated engine with a 1 µs client tolerance, so every probe's
// measured client error exceeds it: a probe far below the knee passes with every deadline tightened
// by that error, so it stays valid, the console's probe line says why, and summary.json records it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, onlyRunDir, readJson } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-clienterr-'));

test('a pass that holds against the client error is kept, and the probe line says why', async () => {
  const recipe = join(work, 'r.yaml');
  writeFileSync(
    recipe,
    readFileSync(FAST_RECIPE, 'utf8')
      .replace('name: fast', 'name: fast-clienterr')
      .replace('qps: { start: 12, min: 1, max: 128 }', 'qps: { start: 8, min: 1, max: 128 }')
      .replace('maxProbes: 8', 'maxProbes: 1')
      .replace('clientTolerance: 250ms', 'clientTolerance: 1us'),
  );
  const out = join(work, 'results');
  const r = await fluidcap(['run', recipe, '--out', out], { timeoutMs: 240_000 });
  assert.is(r.code, 0, r.stderr);
  const line = (r.stdout + r.stderr).split('\n').find((l) => l.startsWith('probe 1:'));
  assert.ok(line, r.stderr);
  assert.match(line!, /^probe 1: 8 QPS PASS .* — kept although the client error exceeds the 0\.001 ms tolerance: client error [\d.]+ ms: the pass holds with every deadline [\d.]+ ms tighter/);
  const runDir = onlyRunDir(out);
  const probeDir = readdirSync(join(runDir, 'probes')).sort()[0];
  const s = readJson<{ valid: boolean; passed: boolean; validity: string; client: { verdict: string; clientErrorS: number }; clientErrorEffect: { holds: boolean; moved: string; errorS: number }; clientTrustedPasses: string[] }>(join(runDir, 'probes', probeDir, 'summary.json'));
  assert.is(s.client.verdict, 'invalid');
  assert.ok(s.valid && s.passed);
  assert.ok(s.clientErrorEffect.holds);
  assert.is(s.clientErrorEffect.moved, 'tightened');
  assert.is(s.clientErrorEffect.errorS, s.client.clientErrorS);
  assert.equal(s.clientTrustedPasses, ['fluidity']);
  assert.match(s.validity, /the pass holds with every deadline [\d.]+ ms tighter, so it stands$/);
  assert.match(readFileSync(join(runDir, 'report.md'), 'utf8'), /its client error exceeded the tolerance, and its verdict stands: client error [\d.]+ ms: the pass holds/);
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
