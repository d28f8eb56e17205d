// figure.json names each system's run relative to the figure directory; a downloaded or edited one
// must not send `figure --resume` into a run outside it. Refused before any engine starts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFigure } from '../../harness/figures/runFigure.ts';
import { UserError } from '../../harness/util/errors.ts';

const state = (runs: unknown, extra: Record<string, unknown> = {}) => ({ name: 'metron-fig3', timeScale: 0.1, rateQps: 1, rates: [1], requests: 10, onHosts: false, runs, runSeconds: {}, ...extra });

async function resumeRefused(runs: unknown, pattern: RegExp, extra: Record<string, unknown> = {}, plant?: (dir: string) => void): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-figure-runs-'));
  const dir = join(work, 'fig');
  mkdirSync(join(dir, 'runs'), { recursive: true });
  const outside = join(work, 'outside', 'run');
  mkdirSync(outside, { recursive: true });
  plant?.(dir);
  writeFileSync(join(dir, 'figure.json'), JSON.stringify(state(runs, extra)));
  const logged: string[] = [];
  try {
    await runFigure({ name: 'metron-fig3', outDir: work, resumeDir: dir, timeScale: 0.1, rateQps: 1, requests: 10, log: (l) => logged.push(l) });
    assert.unreachable('resume must be refused');
  } catch (err) {
    assert.instance(err, UserError, String(err));
    assert.match((err as Error).message, pattern);
  }
  assert.equal(logged, [], 'nothing was run');
  assert.equal(readdirSync(outside), [], 'nothing was written outside');
  return dir;
}

test('a run named with ../ out of the figure directory is refused naming the file, entry and value', async () => {
  await resumeRefused({ vllm: '../outside/run' }, /fig\/figure\.json: runs\.vllm: must be a path inside .*fig relative to it, got "\.\.\/outside\/run"/);
  await resumeRefused({ vllm: 'runs/../../outside/run' }, /runs\.vllm: must be a path inside/);
});

test('an absolute run path is refused, not joined under the figure directory', async () => {
  await resumeRefused({ sarathi: '/outside/run' }, /runs\.sarathi: must be a path inside .* got "\/outside\/run"/);
});

test('runs that is not an object, or an entry that is not a string: one clear error', async () => {
  await resumeRefused(null, /figure\.json: runs must be an object of run directories relative to .*, got null/);
  await resumeRefused({ vllm: 5 }, /figure\.json: runs\.vllm must be a run directory relative to .*, got 5 \(number\)/);
});

test('a run directory inside the figure that is a link to one outside is refused', async () => {
  await resumeRefused({ vllm: 'runs/r1' }, /runs\/r1: is a symbolic link inside/, {}, (dir) => symlinkSync(join(dir, '..', 'outside', 'run'), join(dir, 'runs', 'r1')));
});

test.run();
