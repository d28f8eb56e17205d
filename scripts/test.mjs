#!/usr/bin/env node
// Runs every uvu test file (TypeScript through tsx's ESM loader) and ends with the plain line
// "N passed, N failed, N skipped" taken from uvu's own summary, so CI can count tests.
// Arguments narrow the run: `npm test -- sim` runs the files whose path matches "sim".
import { spawn } from 'node:child_process';

// uvu matches its pattern against paths inside tests/; only *.test.ts files are test files.
const wanted = (process.argv[2] ?? '').replace(/^\^?tests\//, (m) => (m.startsWith('^') ? '^' : ''));
const pattern = wanted === '' ? '\\.test\\.ts$' : `^(?=${wanted.startsWith('^') ? wanted.slice(1) : `.*(?:${wanted})`}).*\\.test\\.ts$`;
const limitS = Number(process.env.FLUIDCAP_TEST_TIMEOUT_S ?? 3000);
// `node --import tsx` rather than `uvu -r tsx`: with -r, uvu loads test files through require(),
// which turns our ESM sources into CommonJS (ESM-only packages such as execa then fail to load).
// --no-color: uvu otherwise sets FORCE_COLOR, which makes every node child warn next to NO_COLOR.
const child = spawn(process.execPath, ['--import', 'tsx', 'node_modules/uvu/bin.js', 'tests', pattern, '--no-color'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...withoutColorForcing(process.env), NO_COLOR: '1' },
});
let out = '';
// When each file's name was printed: the time to the next name is that file's, so the slowest
// files can be listed (what a new end-to-end test adds to CI's time is read there).
const fileStarts = [];
let partial = '';
// Both NO_COLOR and FORCE_COLOR set makes every node child warn on stderr; keep only NO_COLOR.
function withoutColorForcing(env) {
  const { FORCE_COLOR, ...rest } = env;
  return rest;
}
child.stdout.on('data', (b) => {
  process.stdout.write(b);
  out += b.toString();
  const lines = (partial + b.toString()).split('\n');
  partial = lines.pop();
  for (const line of lines) if (/^\S+\.test\.ts$/.test(line.trim())) fileStarts.push({ file: line.trim(), at: performance.now() });
  if (out.length > 1_000_000) out = out.slice(-100_000);
});
const timer = setTimeout(() => {
  console.error(`\ntest runner: no result after ${limitS} s; killing uvu (a test left a handle open or hung)`);
  child.kill('SIGKILL');
}, limitS * 1000);
child.on('close', (code, signal) => {
  clearTimeout(timer);
  const num = (label) => Number((out.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? NaN);
  const total = num('Total');
  const passed = num('Passed');
  const skipped = num('Skipped') || 0;
  if (!Number.isFinite(total) || !Number.isFinite(passed)) {
    console.log(`\n0 passed, 1 failed`);
    console.error(`test runner: uvu printed no summary (exit ${code}, signal ${signal})`);
    process.exit(1);
  }
  // uvu's Total counts the tests that ran; test.skip() ones are only in Skipped.
  const failed = total - passed;
  const end = performance.now();
  const slowest = fileStarts.map((f, i) => ({ file: f.file, s: ((fileStarts[i + 1]?.at ?? end) - f.at) / 1000 })).sort((x, y) => y.s - x.s).slice(0, 12);
  if (fileStarts.length > 1) console.log(`\nslowest test files (${fileStarts.length} files, ${((end - fileStarts[0].at) / 1000).toFixed(0)} s):\n${slowest.map((f) => `  ${f.s.toFixed(1).padStart(7)} s  ${f.file}`).join('\n')}`);
  console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(code === 0 && failed === 0 && total > 0 ? 0 : 1);
});
