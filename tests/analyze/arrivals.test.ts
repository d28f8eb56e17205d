// `fluidcap analyze` measures token arrivals as the run did (its manifest's
// search.probe.tokenArrivals, else engine) unless --arrivals says otherwise, and says which.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { analyzeTarget } from '../../harness/analyze/analyzeRun.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-analyze-arrivals-'));
// One request: its first token and the third came without text.
const record = {
  id: 'a-1', scheduledS: 1, sentS: 1, promptTokens: 10, maxTokens: 4, outputTokens: 4,
  chunks: [[1.2, 1], [1.22, 1], [1.24, 1], [1.26, 1]], textlessChunks: [0, 2], status: 'ok', httpStatus: 200, error: null,
};

async function analyze(target: string, arrivals?: 'engine' | 'visible') {
  let out = '';
  await analyzeTarget({ target, json: true, method: 'nearest-rank', overrides: { ttftDeadlineS: 1 }, arrivals }, { write: async (t) => void (out += t), warn: () => {} });
  return JSON.parse(out) as { requests: { ttftS: number; tbtMaxS: number }[]; summary: { tokenArrivals: string } };
}

test('engine arrivals by default, visible on request; a run that measured visible text is read so', async () => {
  const probeDir = join(dir, 'run', 'probes', '00-qps-1');
  mkdirSync(probeDir, { recursive: true });
  writeFileSync(join(probeDir, 'timelines.jsonl'), JSON.stringify(record) + '\n');
  const file = join(probeDir, 'timelines.jsonl');
  const engine = await analyze(file);
  assert.is(engine.summary.tokenArrivals, 'engine');
  assert.ok(Math.abs(engine.requests[0].ttftS - 0.2) < 1e-9);
  assert.ok(Math.abs(engine.requests[0].tbtMaxS - 0.02) < 1e-9);
  const visible = await analyze(file, 'visible');
  assert.is(visible.summary.tokenArrivals, 'visible');
  assert.ok(Math.abs(visible.requests[0].ttftS - 0.22) < 1e-9);
  assert.ok(Math.abs(visible.requests[0].tbtMaxS - 0.04) < 1e-9);
  writeFileSync(join(dir, 'run', 'manifest.json'), JSON.stringify({ plan: { probe: { tokenArrivals: 'visible' } } }));
  assert.is((await analyze(join(dir, 'run'))).summary.tokenArrivals, 'visible');
  assert.is((await analyze(join(dir, 'run'), 'engine')).summary.tokenArrivals, 'engine');
});

test('a bad --arrivals is refused with exit 2, naming the flag and value', async () => {
  const r = await new Promise<{ code: number; stderr: string }>((done) =>
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'analyze', join(dir, 'run'), '--arrivals', 'text'], (err, _out, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    ),
  );
  assert.is(r.code, 2);
  assert.match(r.stderr, /--arrivals must be one of engine, visible, got "text"/);
  rmSync(dir, { recursive: true });
});

test.run();
