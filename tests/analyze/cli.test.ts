// `fluidcap analyze` as a user runs it: a real child process (node bin/fluidcap.js), checking
// output, exit code, and that no stack trace ("    at ...") ever reaches the user.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'results', 'examples', 'sim-quickstart');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-analyze-'));
// The child sees no colour settings: NO_COLOR next to the runner's FORCE_COLOR makes node warn on stderr.
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'fluidcap.js'), 'analyze', ...args],
      { cwd: dir, maxBuffer: 64 << 20, env: childEnv },
      (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
const noStack = (text: string) => assert.not.match(text, /^\s+at /m, `stack trace printed:\n${text}`);

const line = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'x-1',
    scheduledS: 1,
    sentS: 1.001,
    promptTokens: 100,
    maxTokens: 3,
    outputTokens: 3,
    chunks: [
      [1.25, 1],
      [1.27, 1],
      [1.29, 1],
    ],
    status: 'ok',
    httpStatus: 200,
    error: null,
    ...over,
  });

test('malformed file: one error naming file and line, exit 2, no stack', async () => {
  writeFileSync(join(dir, 'bad.jsonl'), 'this is not json\n');
  const r = await run(['bad.jsonl', '--ttft-deadline', '1s']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /^fluidcap: bad\.jsonl:1: not valid JSON/);
  assert.is(r.stderr.trim().split('\n').length, 1);
  assert.is(r.stdout, '');
  noStack(r.stderr);
});

test('missing file: one error, exit 2', async () => {
  const r = await run(['nope/timelines.jsonl', '--ttft-deadline', '1s']);
  assert.is(r.code, 2);
  assert.is(r.stderr.trim(), 'fluidcap: nope/timelines.jsonl: no such file or directory (give a run directory or a timelines.jsonl)');
  noStack(r.stderr);
});

test('empty file: one error, exit 2', async () => {
  writeFileSync(join(dir, 'empty.jsonl'), '');
  const r = await run(['empty.jsonl', '--ttft-deadline', '1s']);
  assert.is(r.code, 2);
  assert.is(r.stderr.trim(), 'fluidcap: empty.jsonl: empty file (no timeline lines)');
  noStack(r.stderr);
});

test('a line with a negative time: file, line, field and value; exit 2', async () => {
  writeFileSync(join(dir, 'neg.jsonl'), `${line({ chunks: [[1.25, 1], [1.27, 1], [1.29, 1], [-0.2, 1]] })}\n`);
  const r = await run(['neg.jsonl', '--ttft-deadline', '1s']);
  assert.is(r.code, 2);
  assert.is(r.stderr.trim(), 'fluidcap: neg.jsonl:1: chunks[3][0] must be a time >= 0, got -0.2 (number)');
  noStack(r.stderr);
});

test('some bad lines among good ones: metrics printed, bad lines on stderr, exit 2 (bad input; 1 is a bug)', async () => {
  writeFileSync(join(dir, 'mixed.jsonl'), [line({ id: 'a' }), '{"id": "trunc', line({ id: 'b', scheduledS: -3 }), line({ id: 'c' })].join('\n') + '\n');
  const r = await run(['mixed.jsonl', '--ttft-deadline', '1s', '--json']);
  assert.is(r.code, 2);
  const out = JSON.parse(r.stdout);
  assert.equal(
    out.requests.map((q: { id: string }) => q.id),
    ['a', 'c'],
  );
  assert.match(r.stderr, /mixed\.jsonl:2: not valid JSON/);
  assert.match(r.stderr, /mixed\.jsonl:3: scheduledS must be a time >= 0 \(seconds\), got -3 \(number\)/);
  assert.match(r.stderr, /2 bad lines skipped; the metrics cover the 2 valid requests/);
  noStack(r.stderr);
});

test('a lone file without a prefill fit needs --ttft-deadline, and says so', async () => {
  writeFileSync(join(dir, 'ok.jsonl'), `${line()}\n`);
  const r = await run(['ok.jsonl']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /profile\/fit\.json: not found; .*--ttft-deadline/);
  noStack(r.stderr);
});

test('bad flags are user errors naming the flag and value', async () => {
  writeFileSync(join(dir, 'ok.jsonl'), `${line()}\n`);
  const a = await run(['ok.jsonl', '--ttft-deadline', 'soon']);
  assert.is(a.code, 2);
  assert.is(a.stderr.trim(), 'fluidcap: --ttft-deadline must be a duration such as 25ms, 2s or 10m > 0, got "soon" (string)');
  const b = await run(['ok.jsonl', '--ttft-deadline', '1s', '--percentile', '120']);
  assert.is(b.stderr.trim(), 'fluidcap: --percentile must be a percentile > 0 and <= 100, got 120 (number)');
  const c = await run(['ok.jsonl', '--ttft-deadline', '1s', '--percentile-method', 'median']);
  assert.match(c.stderr, /--percentile-method must be one of nearest-rank, linear, got "median"/);
  for (const x of [a, b, c]) noStack(x.stderr);
});

test('a duration flag without its unit is refused, naming both readings', async () => {
  writeFileSync(join(dir, 'ok.jsonl'), `${line()}\n`);
  for (const [flag, value] of [['--tbt-deadline', '30'], ['--ttft-deadline', '0.5'], ['--ttft-slack', '300']]) {
    const args = flag === '--ttft-deadline' ? ['ok.jsonl', flag, value] : ['ok.jsonl', '--ttft-deadline', '1s', flag, value];
    const r = await run(args);
    assert.is(r.code, 2, `${flag} ${value}: ${r.stderr}`);
    assert.is(r.stderr.trim(), `fluidcap: ${flag} needs a unit: ${value} alone could mean ${value}ms or ${value}s (write "${value}ms" or "${value}s"), got "${value}" (string)`);
    noStack(r.stderr);
  }
  // 0 is 0 in every unit.
  assert.is((await run(['ok.jsonl', '--ttft-deadline', '1s', '--ttft-slack', '0'])).code, 0);
});

test('--json on a fixed D_p: SPEC §2 shape and hand-checkable values', async () => {
  writeFileSync(join(dir, 'ok.jsonl'), `${line()}\n`);
  const r = await run(['ok.jsonl', '--ttft-deadline', '0.5s', '--tbt-deadline', '25ms', '--json']);
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  const q = out.requests[0];
  for (const k of ['id', 'ttftS', 'tpotS', 'e2eS', 'normalizedLatencyS', 'fluidity', 'deadlinesTotal', 'deadlinesMissed']) {
    assert.ok(k in q, k);
  }
  assert.is(q.ttftS, 0.25);
  assert.ok(Math.abs(q.tpotS - 0.02) < 1e-12);
  assert.is(q.fluidity, 1);
  assert.is(q.deadlinesTotal, 3);
  assert.is(out.summary.firstTokenDeadline.source, 'fixed');
  assert.is(out.summary.probes[0].requests, 1);
  assert.match(out.summary.slo.fluidity.source, /--tbt-deadline 25ms/);
});

test('run directory: every probe, table by default, --json agrees with capacity.json verdicts', async () => {
  const run1 = join(dir, 'run');
  cpSync(EXAMPLE, run1, { recursive: true });
  const table = await run(['run']);
  assert.is(table.code, 0, table.stderr);
  assert.match(table.stdout, /300 requests in 3 probes/);
  assert.match(table.stdout, /^01-qps-2 /m);
  assert.match(table.stdout, /ttft p90 <= 2s/);
  assert.match(table.stdout, /percentiles: nearest-rank/);
  const json = await run(['run', '--json']);
  const out = JSON.parse(json.stdout);
  assert.is(out.requests.length, 300);
  const capacity = (await import(join(run1, 'capacity.json'), { with: { type: 'json' } })).default;
  assert.equal(
    out.summary.probes.map((p: { slo: { passed: boolean } }) => p.slo.passed),
    capacity.probes.map((p: { passed: boolean }) => p.passed),
  );
  // Overrides change the verdict: a 1 s TBT deadline and 50% of requests is easy.
  const easy = JSON.parse((await run(['run', '--json', '--tbt-deadline', '1s', '--percentile', '50'])).stdout);
  assert.ok(
    easy.summary.probes.filter((p: { slo: { results: { name: string; passed: boolean }[] } }) => p.slo.results[0].passed).length >=
      out.summary.probes.filter((p: { slo: { results: { name: string; passed: boolean }[] } }) => p.slo.results[0].passed).length,
  );
  // A single probe file finds its run's fit two levels up.
  const single = await run([join('run', 'probes', '01-qps-2', 'timelines.jsonl'), '--json']);
  assert.is(single.code, 0, single.stderr);
  assert.is(JSON.parse(single.stdout).summary.firstTokenDeadline.source, 'fit');
});

test('a run directory with no probes is a clear error', async () => {
  mkdirSync(join(dir, 'hollow'));
  const r = await run(['hollow']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /hollow: no probes\/\*\/timelines\.jsonl found/);
});

test('a negative duration after its option (--tbt-deadline -5ms) is a bad value of that option, not unknown flags', async () => {
  writeFileSync(join(dir, 'neg.jsonl'), `${line()}\n`);
  const r = await run(['neg.jsonl', '--tbt-deadline', '-5ms']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /--tbt-deadline must be a duration such as 25ms, 2s or 10m > 0, got "-5ms"/);
  assert.not.match(r.stderr, /Unknown arguments/);
});

test('a capacity.json whose SLO has tbtDeadlineS 0 is refused by name, exit 2, no division by zero', async () => {
  const edited = join(dir, 'zero-tbt');
  cpSync(EXAMPLE, edited, { recursive: true });
  const cap = join(edited, 'capacity.json');
  const json = JSON.parse(readFileSync(cap, 'utf8'));
  json.slo.fluidity.tbtDeadlineS = 0;
  writeFileSync(cap, JSON.stringify(json));
  const r = await run(['zero-tbt']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /zero-tbt\/capacity\.json: slo\.fluidity\.tbtDeadlineS must be seconds > 0, got 0 \(number\)/);
  noStack(r.stderr);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
