// The sweep executor's scheduling and resume logic, with a stand-in for runCapacity that each test
// controls (the real runs, engines and signals are exercised by tests/e2e/sweep.test.ts): at most
// `parallel` runs at once, never two on one GPU set, Ctrl-C starts nothing new, `--resume` skips
// finished runs and resumes the interrupted ones in their own directories.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSweep } from '../../harness/sweep/runSweep.ts';
import { parseInventory, type Inventory } from '../../harness/provision/inventory.ts';
import type { RunOptions, RunOutcome } from '../../harness/capacity/runCapacity.ts';
import { ROOT } from '../pipeline/support.ts';
import { readIndex } from '../../harness/runDir/resultsIndex.ts';

function sweepDir(matrix: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sweepsched-'));
  copyFileSync(join(ROOT, 'sweeps/sim-base.yaml'), join(dir, 'base.yaml'));
  writeFileSync(join(dir, 'sweep.yaml'), `name: sched\nrecipe: base.yaml\nmatrix:\n${matrix}gpusPerHost: 2\n`);
  return dir;
}

/** A stand-in run: makes the run directory runCapacity would (manifest naming the recipe), then waits for `finish`. */
function standIn(onStart: (id: string, opts: RunOptions) => Promise<'completed' | 'interrupted'>) {
  return async (opts: RunOptions): Promise<RunOutcome> => {
    const id = opts.recipeFile.split('/').pop()!.replace(/\.yaml$/, '');
    const runDir = opts.resumeDir ?? join(opts.outDir, `run-${id}`);
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, 'manifest.json'), JSON.stringify({ recipeFile: opts.recipeFile }));
    const status = await onStart(id, opts);
    if (status === 'completed') {
      const capacity = { capacityQps: 4, outcome: 'converged', reason: 'ok', tolerance: 0.1, bracket: { passQps: 4, failQps: 4.4 }, slo: {}, gpuSeconds: 10, cost: null, probes: [] };
      writeFileSync(join(runDir, 'capacity.json'), JSON.stringify(capacity));
    }
    return { runDir, status, reason: status === 'completed' ? 'ok' : 'interrupted by signal', capacity: null };
  };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

test('six runs, two GPU sets: two at a time, never two on one set, every run once', async () => {
  const dir = sweepDir('  maxNumSeqs: [4, 8, 16]\n  scheduler: [vllm, sarathi]\n');
  const running = new Map<string, string>();
  let max = 0;
  let indexedBeforeEnd = 0;
  const order: string[] = [];
  const outcome = await runSweep({
    sweepFile: join(dir, 'sweep.yaml'),
    outDir: join(dir, 'out'),
    log: () => {},
    runOne: standIn(async (id, opts) => {
      const gpus = readFileSync(opts.recipeFile, 'utf8').match(/gpus: \[(.*)\]/)![1];
      assert.not.ok([...running.values()].includes(gpus), `${id} started on GPU set ${gpus} while another run holds it`);
      running.set(id, gpus);
      order.push(id);
      max = Math.max(max, running.size);
      // Runs enter the results index as they finish, not when the sweep ends.
      if (order.length === 6) indexedBeforeEnd = readIndex(join(dir, 'out', 'index.jsonl')).length;
      // The first run is the slowest: without GPU locks the third (same set) would start beside it.
      for (let i = 0; i < (id.startsWith('c01') ? 12 : 2); i++) await tick();
      running.delete(id);
      return 'completed';
    }),
  });
  assert.is(outcome.status, 'completed');
  assert.is(max, 2);
  assert.is(order.length, 6);
  assert.is(new Set(order).size, 6);
  assert.equal(outcome.rows.map((r) => r.capacity?.capacityQps), [4, 4, 4, 4, 4, 4]);
  assert.match(readFileSync(join(outcome.sweepDir, 'report.md'), 'utf8'), /6 configurations; 6 completed/);
  assert.ok(indexedBeforeEnd >= 4, `when the sixth run started, ${indexedBeforeEnd} finished run(s) were indexed (at least 4 had finished)`);
  assert.is(readIndex(join(dir, 'out', 'index.jsonl')).length, 6, 'every finished run of the sweep is in the results folder\'s index');
});

test('Ctrl-C: runs in progress end interrupted, nothing new starts; --resume skips the finished run and resumes the others in their directories', async () => {
  const dir = sweepDir('  maxNumSeqs: [4, 8]\n  scheduler: [vllm, sarathi]\n');
  const abort = new AbortController();
  const started: string[] = [];
  const first = await runSweep({
    sweepFile: join(dir, 'sweep.yaml'),
    outDir: join(dir, 'out'),
    signal: abort.signal,
    log: () => {},
    runOne: standIn(async (id, opts) => {
      started.push(id);
      if (id.startsWith('c01')) return 'completed';
      if (started.length === 3) setTimeout(() => abort.abort(), 5); // c02 and c03 now in progress
      while (!opts.signal!.aborted) await tick();
      return 'interrupted';
    }),
  });
  assert.is(first.status, 'interrupted');
  assert.equal(started.map((s) => s.slice(0, 3)), ['c01', 'c02', 'c03']);
  assert.equal(first.counts, { completed: 1, failed: 0, interrupted: 2, notStarted: 1, invalid: 0 });

  const calls: { id: string; resumeDir?: string }[] = [];
  const second = await runSweep({
    resumeDir: first.sweepDir,
    outDir: join(dir, 'out'),
    log: () => {},
    runOne: standIn(async (id, opts) => {
      calls.push({ id: id.slice(0, 3), resumeDir: opts.resumeDir });
      return 'completed';
    }),
  });
  assert.is(second.status, 'completed');
  assert.is(second.sweepDir, first.sweepDir);
  assert.equal(calls.map((c) => c.id).sort(), ['c02', 'c03', 'c04']);
  for (const c of calls) {
    if (c.id === 'c04') assert.is(c.resumeDir, undefined, 'never started: a fresh run');
    else assert.match(c.resumeDir ?? '', new RegExp(`/runs/run-${c.id}`), `${c.id} resumed in its own directory`);
  }
  assert.equal(second.rows.map((r) => r.status), ['completed', 'completed', 'completed', 'completed']);

  // A changed sweep file is refused rather than mixing two matrices.
  appendFileSync(join(dir, 'sweep.yaml'), 'parallel: 1\n');
  try {
    await runSweep({ resumeDir: first.sweepDir, outDir: join(dir, 'out'), log: () => {} });
    assert.unreachable('resume with a changed sweep file must fail');
  } catch (err) {
    assert.match((err as Error).message, /sweep\.yaml changed since sweep sched-\S+ started; resuming would mix two matrices/);
  }
});

test('resume with an inventory that would move a started run: refused, naming the run', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sweepsched-'));
  const base = readFileSync(join(ROOT, 'sweeps/sim-base.yaml'), 'utf8').replace('  engine: sim\n', '  engine: sim\n  image: fluidcap/sim:dev\n  host: pair\n');
  writeFileSync(join(dir, 'base.yaml'), base);
  writeFileSync(join(dir, 'sweep.yaml'), 'name: moved\nrecipe: base.yaml\nmatrix:\n  maxNumSeqs: [4, 8]\n');
  const inventory = (order: string[]): Inventory => {
    const r = parseInventory({ hosts: ['a', 'b'].map((name) => ({ name, address: '10.0.0.1', user: 'u', key: '/k' })), groups: { pair: order } }, join(dir, 'inv.yaml'));
    if (!r.ok) throw new Error(r.problems.join('\n'));
    return r.inventory;
  };
  const abort = new AbortController();
  const first = await runSweep({
    sweepFile: join(dir, 'sweep.yaml'),
    outDir: join(dir, 'out'),
    inventory: inventory(['a', 'b']),
    signal: abort.signal,
    log: () => {},
    runOne: standIn(async (_id, opts) => {
      abort.abort();
      return opts.signal!.aborted ? 'interrupted' : 'completed';
    }),
  });
  assert.is(first.status, 'interrupted');
  assert.equal(first.rows.map((r) => r.host), ['a', 'b']);
  try {
    await runSweep({ resumeDir: first.sweepDir, outDir: join(dir, 'out'), inventory: inventory(['b', 'a']), log: () => {}, runOne: standIn(async () => 'completed') });
    assert.unreachable('a started run must not move to another host');
  } catch (err) {
    assert.match((err as Error).message, /c01-maxNumSeqs4\.yaml: c01-maxNumSeqs4 would now be placed differently \(was the inventory changed\?\); resume with the same --hosts/);
  }
  const again = await runSweep({ resumeDir: first.sweepDir, outDir: join(dir, 'out'), inventory: inventory(['a', 'b']), log: () => {}, runOne: standIn(async () => 'completed') });
  assert.is(again.status, 'completed');
});

test.run();
