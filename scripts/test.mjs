#!/usr/bin/env node
// Runs every uvu test file (TypeScript through tsx's ESM loader) and ends with the plain line
// "N passed, N failed, N skipped", so CI can count tests.
// Arguments narrow the run: `npm test -- sim` runs the files whose path matches "sim".
//
// Each file runs in its own uvu process, FLUIDCAP_TEST_JOBS at a time (default: two, or one per
// core if fewer), in three kinds:
// - the end-to-end files (tests/e2e/, and any whose first lines say "// Runs with the end-to-end
//   tests:") share one sshd, Docker engine and Slurm, and some restart them: one at a time, always
//   first to a free slot, because together they take longer than the rest;
// - every other file times only a virtual clock or judges behaviour: it takes any free slot;
// - a file whose first lines say "// Runs alone:" judges real time (an engine's speed, a client's
//   dispatch lag) that a neighbour would slow: these run last, one after another, with nothing beside them.
// Within each kind the longest files of the last run here go first (.tmp/test-times.json).
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative, sep } from 'node:path';

const TESTS = 'tests';
// Durations of the last run here, so the next one starts its longest files first.
const TIMES_FILE = join('.tmp', 'test-times.json');

// A file's path inside tests/ is matched, as uvu matches its pattern; only *.test.ts files are test files.
const wanted = (process.argv[2] ?? '').replace(/^\^?tests\//, (m) => (m.startsWith('^') ? '^' : ''));
const pattern = new RegExp(wanted === '' ? '\\.test\\.ts$' : `^(?=${wanted.startsWith('^') ? wanted.slice(1) : `.*(?:${wanted})`}).*\\.test\\.ts$`);
const limitS = Number(process.env.FLUIDCAP_TEST_TIMEOUT_S ?? 3000);
const fileLimitS = Number(process.env.FLUIDCAP_TEST_FILE_TIMEOUT_S ?? 1200);
const jobs = Math.max(1, Number(process.env.FLUIDCAP_TEST_JOBS ?? Math.min(2, availableParallelism())));

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFiles(path);
    return e.isFile() ? [relative(TESTS, path).split(sep).join('/')] : [];
  });
}

/** 'alone', 'e2e' or 'any', from the file's place and its opening comment (see the top of this file). */
function kindOf(file) {
  const head = readFileSync(join(TESTS, file), 'utf8').slice(0, 4000);
  if (/^\/\/ Runs alone:/m.test(head)) return 'alone';
  return file.startsWith('e2e/') || /^\/\/ Runs with the end-to-end tests:/m.test(head) ? 'e2e' : 'any';
}

function lastTimes() {
  try {
    return JSON.parse(readFileSync(TIMES_FILE, 'utf8'));
  } catch {
    return {};
  }
}

// Both NO_COLOR and FORCE_COLOR set makes every node child warn on stderr; keep only NO_COLOR.
function withoutColorForcing(env) {
  const { FORCE_COLOR, ...rest } = env;
  return rest;
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const children = new Set();
const counts = { total: 0, passed: 0, skipped: 0 };
const failedFiles = [];
const durations = {};

/** One file in its own uvu process; its output is printed whole when it ends, so parallel files do not interleave. */
function runFile(file) {
  return new Promise((resolve) => {
    const started = performance.now();
    // `node --import tsx` rather than `uvu -r tsx`: with -r, uvu loads test files through require(),
    // which turns our ESM sources into CommonJS (ESM-only packages such as execa then fail to load).
    // --no-color: uvu otherwise sets FORCE_COLOR, which makes every node child warn next to NO_COLOR.
    const child = spawn(process.execPath, ['--import', 'tsx', 'node_modules/uvu/bin.js', TESTS, `^${escape(file)}$`, '--no-color'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...withoutColorForcing(process.env), NO_COLOR: '1' },
    });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b.toString()));
    child.stderr.on('data', (b) => (err += b.toString()));
    const timer = setTimeout(() => {
      err += `\ntest runner: ${file} still running after ${fileLimitS} s; killed (a test left a handle open or hung)\n`;
      child.kill('SIGKILL');
    }, fileLimitS * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      const s = (performance.now() - started) / 1000;
      durations[file] = s;
      const num = (label) => Number((out.match(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'm')) ?? [])[1] ?? NaN);
      const total = num('Total');
      const passed = num('Passed');
      const skipped = num('Skipped') || 0;
      const summarised = Number.isFinite(total) && Number.isFinite(passed);
      // uvu's Total counts the tests that ran; test.skip() ones are only in Skipped. A file that
      // printed no summary, or whose process failed after its tests passed, counts one failure.
      const ranFailed = summarised ? total - passed : 0;
      const failed = summarised && code === 0 ? ranFailed : Math.max(1, ranFailed);
      counts.passed += summarised ? passed : 0;
      counts.total += (summarised ? passed : 0) + failed;
      counts.skipped += skipped;
      if (failed > 0) failedFiles.push(file);
      const body = out.replace(/^\s*(Total|Passed|Skipped|Duration):.*\n?/gm, '').trimEnd();
      process.stdout.write(`${file} (${s.toFixed(1)} s)\n${body.replace(/^\S+\.test\.ts\n/, '')}\n`);
      if (!summarised) process.stdout.write(`  uvu printed no summary for ${file} (exit ${code}, signal ${signal})\n`);
      if (err.trim() !== '') process.stderr.write(`${file} stderr:\n${err}`);
      resolve();
    });
  });
}

const all = testFiles(TESTS).filter((f) => pattern.test(f)).sort();
if (all.length === 0) {
  console.log(`no test file matches ${pattern}\n\n0 passed, 1 failed, 0 skipped`);
  process.exit(1);
}
const before = lastTimes();
const longestFirst = (a, b) => (before[b] ?? 0) - (before[a] ?? 0);
const kinds = new Map(all.map((f) => [f, kindOf(f)]));
const ofKind = (k) => all.filter((f) => kinds.get(f) === k).sort(longestFirst);
const e2eQueue = ofKind('e2e');
const anyQueue = ofKind('any');
const alone = ofKind('alone');
const shared = e2eQueue.length + anyQueue.length;

const timer = setTimeout(() => {
  console.error(`\ntest runner: no result after ${limitS} s; killing the test processes`);
  for (const c of children) c.kill('SIGKILL');
  console.log(`\n${counts.passed} passed, ${counts.total - counts.passed + 1} failed, ${counts.skipped} skipped`);
  process.exit(1);
}, limitS * 1000);

const started = performance.now();
console.log(`${e2eQueue.length} end-to-end files one at a time beside ${anyQueue.length} others (${jobs} slots), then ${alone.length} alone\n`);
let e2eRunning = false;
function take() {
  if (!e2eRunning && e2eQueue.length > 0) {
    e2eRunning = true;
    return { file: e2eQueue.shift(), e2e: true };
  }
  return anyQueue.length > 0 ? { file: anyQueue.shift(), e2e: false } : null;
}
// A slot with nothing it may take ends; the slot running the end-to-end files takes the rest of
// them (and any other file left) one after another.
async function slot() {
  for (let next = take(); next !== null; next = take()) {
    await runFile(next.file);
    if (next.e2e) e2eRunning = false;
  }
}
await Promise.all(Array.from({ length: jobs }, slot));
const sharedS = (performance.now() - started) / 1000;
for (const f of alone) await runFile(f);
clearTimeout(timer);
const wallS = (performance.now() - started) / 1000;

mkdirSync('.tmp', { recursive: true });
writeFileSync(TIMES_FILE, JSON.stringify({ ...before, ...durations }, null, 1));
const slowest = Object.entries(durations).sort((x, y) => y[1] - x[1]).slice(0, 12);
const sum = Object.values(durations).reduce((a, b) => a + b, 0);
console.log(`\nslowest test files (${all.length} files, ${sum.toFixed(0)} s of file time; ${wallS.toFixed(0)} s of wall: ${sharedS.toFixed(0)} s for ${shared} files in ${jobs} slots, ${(wallS - sharedS).toFixed(0)} s for ${alone.length} alone):\n${slowest.map(([f, s]) => `  ${s.toFixed(1).padStart(7)} s  ${f}`).join('\n')}`);
if (failedFiles.length > 0) console.log(`\nfiles with failures: ${failedFiles.join(', ')}`);
const failed = counts.total - counts.passed;
console.log(`\n${counts.passed} passed, ${failed} failed, ${counts.skipped} skipped`);
process.exit(failed === 0 && counts.total > 0 ? 0 : 1);
