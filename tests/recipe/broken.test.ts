// Broken recipes fail before anything is launched: `node bin/fluidcap.js run <file>` as a user runs
// it (a real child process), exit 2, one message naming the file, the field path and the value, no
// stack trace, and no results directory created.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pLimit from 'p-limit';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BROKEN = join(ROOT, 'tests', 'fixtures', 'recipes', 'broken');
const work = mkdtempSync(join(tmpdir(), 'fluidcap-broken-'));
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  outDir: string;
}

function runRecipe(file: string, outDir: string): Promise<Outcome> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'fluidcap.js'), 'run', file, '--out', outDir],
      { cwd: ROOT, env: childEnv, timeout: 120_000 },
      (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr, outDir }),
    );
  });
}

/** Each broken recipe: the field path and the value (as printed) its message must name. */
const CASES: { file: string; why: string; path: string; value: string }[] = [
  { file: 'missing-engine.yaml', why: 'missing field', path: 'target.engine', value: 'is required' },
  { file: 'missing-slo.yaml', why: 'missing section', path: 'slo', value: 'is required' },
  { file: 'wrong-type-requests.yaml', why: 'wrong type (text for a number)', path: 'search.probe.requests', value: '"many" (string)' },
  { file: 'wrong-type-seed.yaml', why: 'wrong type (list for a number)', path: 'workload.seed', value: '[1,2] (array)' },
  { file: 'qps-min-above-max.yaml', why: 'min > max', path: 'search.qps.max', value: '0.5 (number)' },
  { file: 'unknown-engine.yaml', why: 'unknown engine', path: 'target.engine', value: '"tgi" (string)' },
  { file: 'unknown-gpu-profile.yaml', why: 'unknown GPU profile', path: 'target.gpuProfile', value: '"h800-pcie" (string)' },
  { file: 'negative-duration.yaml', why: 'negative probe duration', path: 'search.probe.duration', value: '"-5s" (string)' },
  { file: 'negative-tbt-deadline.yaml', why: 'negative TBT deadline', path: 'slo.fluidity.tbtDeadline', value: '"-25ms" (string)' },
  { file: 'missing-trace.yaml', why: 'trace file that does not exist', path: 'workload.lengths.trace', value: '"no-such-trace.csv" (string)' },
  { file: 'bad-trace-columns.yaml', why: 'trace file without the Vidur columns', path: 'workload.lengths.trace', value: '"bad-columns.csv" (string)' },
  { file: 'unknown-field.yaml', why: 'unknown field', path: 'search.qpsMax', value: '32 (number)' },
  { file: 'bad-duration-text.yaml', why: 'bad duration text', path: 'slo.fluidity.tbtDeadline', value: '"25 millis" (string)' },
  { file: 'sarathi-batched-tokens.yaml', why: 'sarathi with maxNumBatchedTokens', path: 'target.engineArgs.maxNumBatchedTokens', value: '8192 (number)' },
  { file: 'unknown-sim-model.yaml', why: 'model missing from the simulated engine\'s catalog', path: 'target.model', value: '"gpt-5" (string)' },
  { file: 'process-relative-command.yaml', why: 'runtime process with a relative program path', path: 'target.process.command[0]', value: '"bin/fluidcap.js" (string)' },
  { file: 'prompt-beyond-context.yaml', why: 'profiled prompt beyond the model context', path: 'profile.promptLengths[1]', value: '65536' },
];

// Children start together, three at a time (the machine is shared): each test awaits its own.
const limit = pLimit(3);
const outcomes = new Map<string, Promise<Outcome>>();
for (const c of [...CASES.map((x) => x.file), 'yaml-syntax.yaml', 'many-problems.yaml', 'every-kind.yaml']) {
  const file = join(BROKEN, c);
  outcomes.set(c, limit(() => runRecipe(file, join(work, c.replace('.yaml', ''), 'results'))));
}

function checkRefused(r: Outcome, file: string): void {
  assert.is(r.code, 2, `exit code ${r.code}, stderr:\n${r.stderr}`);
  assert.ok(r.stderr.startsWith(`fluidcap: ${file}`), `message must start with the file name:\n${r.stderr}`);
  assert.not.match(r.stderr, /\n\s+at /, `stack trace printed:\n${r.stderr}`);
  assert.not.match(r.stderr, /internal error/);
  assert.is(r.stdout, '');
  assert.not.ok(existsSync(r.outDir), `results directory ${r.outDir} was created for a refused recipe`);
}

for (const c of CASES) {
  test(`${c.file} (${c.why}): refused before launch, names ${c.path} and ${c.value}`, async () => {
    const file = join(BROKEN, c.file);
    const r = await outcomes.get(c.file)!;
    checkRefused(r, file);
    // The field and its value on one line, after the file name.
    const line = r.stderr.split('\n').find((l) => l.includes(`: ${c.path} `));
    assert.ok(line, `no line names ${c.path}:\n${r.stderr}`);
    assert.ok(line!.includes(c.value), `the line naming ${c.path} does not show ${c.value}:\n${line}`);
    assert.ok(line!.includes(c.file), `the line naming ${c.path} does not name the file:\n${line}`);
  });
}

test('yaml-syntax.yaml (YAML syntax error): refused before launch, names the line and column', async () => {
  const r = await outcomes.get('yaml-syntax.yaml')!;
  checkRefused(r, join(BROKEN, 'yaml-syntax.yaml'));
  assert.match(r.stderr, /yaml-syntax\.yaml:\d+:\d+ YAML /);
});

test('a recipe with five problems reports all five at once, each with path and value', async () => {
  const file = join(BROKEN, 'many-problems.yaml');
  const r = await outcomes.get('many-problems.yaml')!;
  checkRefused(r, file);
  assert.match(r.stderr, /has 5 problems:/);
  const expected = [
    ['target.port', '99999 (number)'],
    ['workload.seed', '-3 (number)'],
    ['search.qps.max', '1 (number)'],
    ['search.tolerance', '5 (number)'],
    ['slo.fluidity.tbtDeadline', '"soon" (string)'],
  ];
  const lines = r.stderr.trim().split('\n').slice(1);
  assert.is(lines.length, expected.length, r.stderr);
  for (const [path, value] of expected) {
    const line = lines.find((l) => l.includes(`: ${path} `));
    assert.ok(line, `no problem for ${path}:\n${r.stderr}`);
    assert.ok(line!.includes(`got ${value}`), line);
  }
});

test('a recipe with a problem of every kind reports schema, catalog, GPU profile, trace file and units in one pass', async () => {
  const file = join(BROKEN, 'every-kind.yaml');
  const r = await outcomes.get('every-kind.yaml')!;
  checkRefused(r, file);
  const expected = [
    ['target.port', 'got 99999 (number)'],
    ['workload.seed', 'got -3 (number)'],
    ['search.probe.duration', 'needs a unit: 600 alone could mean 600ms or 600s (write "600ms" or "600s"), got 600 (number)'],
    ['slo.fluidity.tbtDeadline', 'needs a unit: 50 alone could mean 50ms or 50s (write "50ms" or "50s"), got 50 (number)'],
    ['target.gpuProfile', 'must name a profile in gpu-profiles/'],
    ['target.model', 'must name a model of the simulated engine\'s catalog ('],
    ['workload.lengths.trace', 'must be an existing CSV file (relative to the recipe), got "no-such-trace.csv" (string)'],
  ];
  assert.match(r.stderr, new RegExp(`every-kind\\.yaml has ${expected.length} problems:`));
  const lines = r.stderr.trim().split('\n').slice(1);
  assert.is(lines.length, expected.length, r.stderr);
  for (const [path, text] of expected) {
    const line = lines.find((l) => l.includes(`every-kind.yaml: ${path} `));
    assert.ok(line, `no problem for ${path}:\n${r.stderr}`);
    assert.ok(line!.includes(text), `${line}\nmust include: ${text}`);
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
