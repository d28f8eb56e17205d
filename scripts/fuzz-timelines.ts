// Fuzzes the timeline reader with mutated real timelines (the archived sim quickstart run): byte
// flips, control and NUL bytes, huge or non-finite numbers, inflated chunk and token counts, cut
// and overlong lines. Every line must come back as a record or a problem (never a throw), every
// record must survive the metrics, and resident memory may grow at most 50 MB + 20× the largest
// line. `tsx scripts/fuzz-timelines.ts [files] [seed]` prints the counts; a test runs it smaller.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { readTimelines } from '../harness/timeline/reader.ts';
import { computeRequestMetrics } from '../harness/metrics/request.ts';
import { createRng, type Rng } from '../harness/util/rng.ts';

export const SEED_TIMELINE = resolve(import.meta.dirname, '..', 'results', 'examples', 'sim-quickstart', 'probes', '01-qps-2', 'timelines.jsonl');

export interface TimelineFuzzResult {
  files: number;
  lines: number;
  records: number;
  problems: number;
  crashes: string[];
  largestLineBytes: number;
  rssGrowthBytes: number;
  rssLimitBytes: number;
}

// A full collection before the baseline, so garbage of the set-up is not counted as growth.
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)];
const HOSTILE_NUMBERS = ['1000000000', '1e309', '-1e309', '4611686018427387904', '-0.2', '1e-320', '0', 'NaN', '1.5', '"7"', 'null', '[]', '{}'];
const HOSTILE_BYTES = ['\u001b]0;owned\u0007', '\u001b[2J', '\u009b31m', '\u0000', '\r', '\u202e', '\ufffd', '"', '\\', '{', '[', ']', '}', ','];

/** One mutation of a real line. */
function mutate(rng: Rng, line: string): string {
  switch (Math.floor(rng.next() * 9)) {
    case 0: {
      // Replace one number (a time, a token count) with a hostile one.
      const nums = [...line.matchAll(/-?\d+(?:\.\d+)?/g)];
      if (nums.length === 0) return line;
      const m = pick(rng, nums);
      return line.slice(0, m.index) + pick(rng, HOSTILE_NUMBERS) + line.slice(m.index! + m[0].length);
    }
    case 1: {
      const at = Math.floor(rng.next() * line.length);
      return line.slice(0, at) + pick(rng, HOSTILE_BYTES) + line.slice(at);
    }
    case 2:
      return line.slice(0, Math.floor(rng.next() * line.length));
    case 3:
      return line.replace(/"outputTokens":\d+/, `"outputTokens":${pick(rng, ['1000000000', '4611686018427387904', '0', '1'])}`);
    case 4:
      // The first chunk claims a huge token count.
      return line.replace(/"chunks":\[\[([\d.]+),\d+\]/, `"chunks":[[$1,${pick(rng, ['1000000000', '1048577', '99999999999'])}]`);
    case 5: {
      // Many chunks: the chunk list repeated (times stay ordered only sometimes).
      const m = /"chunks":\[(.*?)\],"status"/.exec(line);
      if (!m) return line;
      const times = 1 + Math.floor(rng.next() * Math.min(200, 2e6 / line.length));
      return line.replace(m[0], `"chunks":[${Array(times).fill(m[1]).join(',')}],"status"`);
    }
    case 6:
      return `[${'['.repeat(Math.floor(rng.next() * 100_000))}`;
    case 7: {
      const bytes = Buffer.from(line);
      for (let i = 0; i < 1 + rng.next() * 8; i++) bytes[Math.floor(rng.next() * bytes.length)] = Math.floor(rng.next() * 256);
      return bytes.toString('latin1');
    }
    default:
      return line.replace(/"id":"[^"]*"/, `"id":"${'x'.repeat(Math.floor(rng.next() * 2000))}"`);
  }
}

/** Runs `files` mutated copies of the seed timeline through the reader and the metrics. */
export async function fuzzTimelines(opts: { files: number; seed: number; linesPerFile?: number; maxLineBytes?: number }): Promise<TimelineFuzzResult> {
  const rng = createRng(opts.seed);
  const source = readFileSync(SEED_TIMELINE, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-fuzz-timelines-'));
  const result: TimelineFuzzResult = { files: 0, lines: 0, records: 0, problems: 0, crashes: [], largestLineBytes: 0, rssGrowthBytes: 0, rssLimitBytes: 0 };
  let rssBefore = 0;
  let rssPeak = 0;
  try {
    // Every file is written first, so the memory measured below is the reader's, not the fuzzer's.
    for (let f = 0; f < opts.files; f++) {
      const lines: string[] = [];
      for (let i = 0; i < (opts.linesPerFile ?? 20); i++) {
        let line = pick(rng, source);
        const mutations = rng.next() < 0.2 ? 0 : 1 + Math.floor(rng.next() * 3);
        for (let m = 0; m < mutations; m++) line = mutate(rng, line);
        lines.push(line);
        result.largestLineBytes = Math.max(result.largestLineBytes, Buffer.byteLength(line, 'latin1'));
      }
      // latin1 keeps the flipped bytes as bytes (invalid UTF-8 included).
      writeFileSync(join(dir, `${f}.jsonl`), lines.join(rng.next() < 0.1 ? '\r\n' : '\n'), 'latin1');
    }
    collectGarbage();
    rssBefore = process.memoryUsage().rss;
    rssPeak = rssBefore;
    for (let f = 0; f < opts.files; f++) {
      const path = join(dir, `${f}.jsonl`);
      result.files += 1;
      try {
        for await (const item of readTimelines(path, `${f}.jsonl`, { maxLineBytes: opts.maxLineBytes })) {
          result.lines += 1;
          if (item.problem !== undefined) {
            result.problems += 1;
            if (/[\u0000-\u001f\u007f-\u009f]/.test(item.problem)) result.crashes.push(`${f}.jsonl:${item.line}: control character in the problem text`);
            continue;
          }
          result.records += 1;
          const m = computeRequestMetrics(item.record!, { dpS: 1, tbtDeadlineS: 0.025 });
          if (m.tbtSamplesS.length > (1 << 20)) result.crashes.push(`${f}.jsonl:${item.line}: ${m.tbtSamplesS.length} TBT samples`);
        }
      } catch (err) {
        result.crashes.push(`${f}.jsonl: ${(err as Error).name}: ${(err as Error).message.slice(0, 200)}`);
      }
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  result.rssGrowthBytes = rssPeak - rssBefore;
  result.rssLimitBytes = 50e6 + 20 * result.largestLineBytes;
  return result;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const files = Number(process.argv[2] ?? 2000);
  const seed = Number(process.argv[3] ?? 1);
  const r = await fuzzTimelines({ files, seed });
  console.log(
    `${r.files} files, ${r.lines} lines: ${r.records} records, ${r.problems} problems, ${r.crashes.length} crashes; ` +
      `largest line ${r.largestLineBytes} B; RSS growth ${(r.rssGrowthBytes / 1e6).toFixed(1)} MB (limit ${(r.rssLimitBytes / 1e6).toFixed(1)} MB)`,
  );
  for (const c of r.crashes.slice(0, 20)) console.log(`  ${c}`);
  process.exitCode = r.crashes.length > 0 || r.rssGrowthBytes > r.rssLimitBytes ? 1 : 0;
}
