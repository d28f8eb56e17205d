// The tolerant streaming reader: valid lines become records, each bad line one problem naming
// file, line, field and value, and reading goes on past it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTimelines, type TimelineLine } from '../../harness/timeline/reader.ts';
import { TimelineWriter } from '../../harness/timeline/writer.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { timelineProblems } from '../../harness/timeline/validate.ts';

const dir = mkdtempSync(join(tmpdir(), 'fluidcap-reader-'));
const rec = (id: string, over: Partial<TimelineRecord> = {}): TimelineRecord => ({
  id,
  scheduledS: 12.345,
  sentS: 12.3452,
  promptTokens: 2730,
  maxTokens: 167,
  outputTokens: 3,
  chunks: [
    [12.8123, 1],
    [12.8391, 1],
    [12.865, 1],
  ],
  status: 'ok',
  httpStatus: 200,
  error: null,
  ...over,
});
const readAll = async (path: string, display?: string) => {
  const out: TimelineLine[] = [];
  for await (const l of readTimelines(path, display)) out.push(l);
  return out;
};

test('round trip through TimelineWriter; µs rounding; extras kept', async () => {
  const path = join(dir, 'rt', 'timelines.jsonl');
  const w = new TimelineWriter(path);
  w.append(rec('a', { scheduledS: 1.0000004, emitNs: ['1', '2', '3'], usageOutputTokens: 3 }));
  w.append(rec('b', { status: 'timeout', chunks: [], outputTokens: 0, httpStatus: null, error: 'timed out after 30s' }));
  w.close();
  const lines = await readAll(path);
  assert.equal(lines.map((l) => l.line), [1, 2]);
  assert.is(lines[0].record!.scheduledS, 1);
  assert.equal(lines[0].record!.emitNs, ['1', '2', '3']);
  assert.is(lines[1].record!.status, 'timeout');
  assert.ok(lines.every((l) => l.problem === undefined));
});

test('a corrupt line is reported with its number and reading continues', async () => {
  const path = join(dir, 'corrupt.jsonl');
  const good = JSON.stringify(rec('ok1'));
  const negative = JSON.stringify(rec('neg', { chunks: [[13, 1], [13.5, 1], [14, 1], [-0.2, 1]] }));
  writeFileSync(path, [good, '{"id": "x", "scheduledS": 1', '', negative, good, '{"id":"tail","sched'].join('\n'));
  const lines = await readAll(path, 'timelines.jsonl');
  assert.equal(
    lines.map((l) => [l.line, l.record ? 'record' : 'problem']),
    [
      [1, 'record'],
      [2, 'problem'],
      [4, 'problem'],
      [5, 'record'],
      [6, 'problem'],
    ],
  );
  assert.match(lines[1].problem!, /^timelines\.jsonl:2: not valid JSON \(/);
  assert.is(lines[2].problem, 'timelines.jsonl:4: chunks[3][0] must be a time >= 0, got -0.2 (number)');
  assert.match(lines[4].problem!, /^timelines\.jsonl:6: not valid JSON/);
});

test('every SPEC §4 field is checked, several problems on one line are all named', () => {
  const p = timelineProblems({
    id: '',
    scheduledS: -1,
    sentS: '3',
    promptTokens: 1.5,
    maxTokens: null,
    outputTokens: -2,
    chunks: [[1, 1], [0.5, 1]],
    status: 'fine',
    httpStatus: 42,
    error: 5,
  });
  assert.equal(p, [
    'id must be a non-empty string of at most 256 characters, got "" (string)',
    'scheduledS must be a time >= 0 (seconds), got -1 (number)',
    'sentS must be a time >= 0 (seconds), got "3" (string)',
    'promptTokens must be an integer within 0..2147483647, got 1.5 (number)',
    'maxTokens must be an integer within 0..2147483647, got null',
  ]);
  const q = timelineProblems({ ...rec('q'), chunks: [[12.9, 1], [12.8, 1], [13, 'two'], [14]], status: 'fine' });
  assert.equal(q, [
    'status must be one of ok, error, timeout, cancelled, got "fine" (string)',
    "chunks[1][0] must be a time >= the previous chunk's 12.9, got 12.8 (number)",
    'chunks[2][1] must be a token count (integer within 0..1048576), got "two" (string)',
    'chunks[3] must be a [time, tokens] pair, got [14] (array)',
  ]);
  assert.equal(timelineProblems({ ...rec('s'), chunks: [[12.0, 1]] }), ['chunks[0][0] must be a time >= sentS 12.3452, got 12 (number)']);
  assert.equal(timelineProblems({ ...rec('h'), httpStatus: 700, error: 3 }), [
    'httpStatus must be an HTTP status 100..599 or null, got 700 (number)',
    'error must be text or null, got 3 (number)',
  ]);
  assert.equal(timelineProblems([1, 2]), ['the line must be a JSON object (one timeline record), got [1,2] (array)']);
  assert.equal(timelineProblems({ ...rec('e'), emitNs: ['12', 'x', '13'] }), ['emitNs[1] must be a decimal string of nanoseconds, got "x" (string)']);
  assert.equal(timelineProblems(rec('fine')), []);
});

test('CRLF line endings and blank lines are fine; an empty file yields nothing', async () => {
  const path = join(dir, 'crlf.jsonl');
  writeFileSync(path, `${JSON.stringify(rec('a'))}\r\n\r\n${JSON.stringify(rec('b'))}\r\n`);
  const lines = await readAll(path);
  assert.equal(lines.map((l) => [l.line, l.record?.id]), [
    [1, 'a'],
    [3, 'b'],
  ]);
  const empty = join(dir, 'empty.jsonl');
  writeFileSync(empty, '');
  assert.equal(await readAll(empty), []);
});

test('a missing file or a directory is one clear UserError', async () => {
  try {
    await readAll(join(dir, 'nope.jsonl'), 'runs/nope.jsonl');
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).name, 'UserError');
    assert.is((err as Error).message, 'runs/nope.jsonl: no such file');
  }
  mkdirSync(join(dir, 'adir'));
  try {
    await readAll(join(dir, 'adir'), 'adir');
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /^adir: is a directory/);
  }
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
