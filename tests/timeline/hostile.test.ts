// Hostile timelines: a line claiming a billion tokens, outputTokens that disagree with the chunks,
// terminal escape sequences, NUL bytes, a device that never ends, lines without an end. The reader
// must answer each with a problem or one clear error (never a crash), and the metrics must never
// be asked to expand more tokens than a request can have.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readTimelines, type TimelineLine } from '../../harness/timeline/reader.ts';
import { MAX_OUTPUT_TOKENS, timelineProblems } from '../../harness/timeline/validate.ts';
import { fuzzTimelines } from '../../scripts/fuzz-timelines.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-hostile-timeline-'));
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const HOSTILE_LINE =
  '{"id":"r0","scheduledS":0,"sentS":0,"promptTokens":1,"maxTokens":1,"outputTokens":1,"chunks":[[0.2,1000000000]],"status":"ok","httpStatus":200,"error":null}';
const good = (over: Record<string, unknown> = {}) => ({
  id: 'g',
  scheduledS: 1,
  sentS: 1,
  promptTokens: 10,
  maxTokens: 3,
  outputTokens: 3,
  chunks: [[1.2, 1], [1.3, 2]],
  status: 'ok',
  httpStatus: 200,
  error: null,
  ...over,
});
const readAll = async (path: string, opts?: { maxLineBytes?: number }) => {
  const out: TimelineLine[] = [];
  for await (const l of readTimelines(path, 't.jsonl', opts)) out.push(l);
  return out;
};
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;
const analyze = (args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'analyze', ...args], { cwd: dir, env: childEnv, timeout: 60_000 }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

test('a chunk claiming a billion tokens is a problem, not an allocation', () => {
  const p = timelineProblems(JSON.parse(HOSTILE_LINE));
  assert.equal(p, [`chunks[0][1] must be a token count (integer within 0..${MAX_OUTPUT_TOKENS}), got 1000000000 (number)`]);
  assert.equal(timelineProblems(good({ outputTokens: 2 ** 62, chunks: [[1.2, 1], [1.3, 1]] })), [
    `outputTokens must be an integer within 0..${MAX_OUTPUT_TOKENS}, got 4611686018427388000 (number)`,
  ]);
  const many = Array.from({ length: MAX_OUTPUT_TOKENS + 1 }, (_, i) => [1 + i * 1e-6, 0]);
  assert.equal(timelineProblems(good({ outputTokens: 0, chunks: many })), [`chunks must be at most ${MAX_OUTPUT_TOKENS} [time, tokens] pairs, got ${MAX_OUTPUT_TOKENS + 1}`]);
});

test('outputTokens must agree with the streamed chunks', () => {
  assert.equal(timelineProblems(good({ outputTokens: 7 })), ["outputTokens must be the sum of the chunks' tokens (3), got 7"]);
  assert.equal(timelineProblems(good({ outputTokens: 0 })), ["outputTokens must be the sum of the chunks' tokens (3), got 0"]);
  assert.equal(timelineProblems(good({ emitNs: ['1'] })), ['emitNs must be one entry per chunk (2), got 1 entries']);
  assert.equal(timelineProblems(good()), []);
});

test('escape sequences of a bad line never reach the terminal', async () => {
  const path = join(dir, 'esc.jsonl');
  writeFileSync(path, `{"id":"\u001b]0;owned\u0007\u009b2J\u202e\n${JSON.stringify(good({ id: '\u001b[31mred' , sentS: -1 }))}\n`);
  const lines = await readAll(path);
  assert.is(lines.length, 2);
  for (const l of lines) {
    assert.ok(l.problem, 'each line is a problem');
    assert.not.match(l.problem!, CONTROL);
  }
  assert.match(lines[0].problem!, /\\u001b\]0;owned\\u0007\\u009b2J\\u202e/);
});

test('NUL bytes and invalid UTF-8 are problems; reading goes on', async () => {
  const path = join(dir, 'binary.jsonl');
  const junk = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, 0x1b, 0x5b, 0x32, 0x4a]);
  writeFileSync(path, Buffer.concat([junk, Buffer.from('\n'), Buffer.from([0xc3, 0x28, 0x0a]), Buffer.from(`${JSON.stringify(good())}\n`)]));
  const lines = await readAll(path);
  assert.match(lines[0].problem!, /^t\.jsonl:1: binary data \(a NUL byte at column 4\), not a JSON line$/);
  assert.match(lines[1].problem!, /^t\.jsonl:2: not valid JSON/);
  assert.not.match(lines[1].problem!, CONTROL);
  assert.is(lines[2].record?.id, 'g');
});

test('a line longer than the bound is skipped with a problem; the next line is read', async () => {
  const path = join(dir, 'long.jsonl');
  writeFileSync(path, `${'x'.repeat(5000)}\n${JSON.stringify(good())}\n${'y'.repeat(3000)}`);
  const lines = await readAll(path, { maxLineBytes: 1024 });
  assert.equal(lines.map((l) => l.line), [1, 2, 3]);
  assert.is(lines[0].problem, 't.jsonl:1: line longer than 1024 bytes (binary data or not a timelines file); skipped');
  assert.is(lines[1].record?.id, 'g');
  assert.match(lines[2].problem!, /^t\.jsonl:3: line longer than 1024 bytes/);
});

test('/dev/zero is refused with one clear error', async () => {
  if (!existsSync('/dev/zero')) return console.log('SKIP /dev/zero: not on this system');
  try {
    await readAll('/dev/zero');
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).name, 'UserError');
    assert.is((err as Error).message, 't.jsonl: is not a regular file, expected a timelines.jsonl file');
  }
});

test('analyze on the hostile line: exit 2 with a clear message, no crash', async () => {
  writeFileSync(join(dir, 'hostile.jsonl'), `${HOSTILE_LINE}\n`);
  const r = await analyze(['hostile.jsonl', '--ttft-deadline', '1s']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /^fluidcap: hostile\.jsonl:1: chunks\[0\]\[1\] must be a token count/);
  assert.not.match(r.stderr, /^\s+at /m);
  const z = await analyze(['/dev/zero', '--ttft-deadline', '1s']);
  assert.is(z.code, 2, z.stderr);
  assert.match(z.stderr, /is not a regular file/);
});

test('analyze refuses durations that overflow a timer or round to nothing', async () => {
  writeFileSync(join(dir, 'ok.jsonl'), `${JSON.stringify(good())}\n`);
  for (const [flag, value] of [['--tbt-deadline', '1e309'], ['--tbt-deadline', '1e-320'], ['--ttft-deadline', '1000h']]) {
    const r = await analyze(['ok.jsonl', flag, value]);
    assert.is(r.code, 2, `${flag} ${value}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^fluidcap: ${flag} must be a duration .*got "${value}" \\(string\\)`));
    assert.not.match(r.stdout, /Infinity/);
  }
});

test('analyze quotes a bad number flag as typed, not as NaN', async () => {
  writeFileSync(join(dir, 'ok.jsonl'), `${JSON.stringify(good())}\n`);
  const r = await analyze(['ok.jsonl', '--ttft-deadline', '1s', '--percentile', 'abc']);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stderr, 'fluidcap: --percentile must be a percentile > 0 and <= 100, got "abc" (string)\n');
  const m = await analyze(['ok.jsonl', '--ttft-deadline', '1s', '--min-fluidity', '']);
  assert.is(m.code, 2, m.stderr);
  assert.match(m.stderr, /--min-fluidity must be a number within 0\.\.1, got "" \(string\)/);
  const fine = await analyze(['ok.jsonl', '--ttft-deadline', '1s', '--percentile', '90', '--min-fluidity', '0.5']);
  assert.is(fine.code, 0, fine.stderr);
  assert.match(fine.stdout, /p90/);
});

test('fuzz: mutated real timelines never crash the reader or the metrics; memory stays bounded', async () => {
  const r = await fuzzTimelines({ files: 60, seed: 7 });
  assert.equal(r.crashes, []);
  assert.ok(r.records > 0 && r.problems > 0, `both kinds of lines seen: ${r.records} records, ${r.problems} problems`);
  assert.ok(r.rssGrowthBytes <= r.rssLimitBytes, `RSS grew ${(r.rssGrowthBytes / 1e6).toFixed(1)} MB > ${(r.rssLimitBytes / 1e6).toFixed(1)} MB`);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
