// The sweep journal: each run's state folded from its lines, a torn last line ignored.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SweepJournal, runStates, slurmTimes, type SweepEvent } from '../../harness/sweep/journal.ts';

test('finished, interrupted, killed mid-run and never started runs', () => {
  const path = join(mkdtempSync(join(tmpdir(), 'fluidcap-sweepjournal-')), 'sweep.jsonl');
  const j = new SweepJournal(path);
  j.append({ type: 'sweep-started', name: 's', sweepFile: '/s.yaml', sweepSha256: 'x', recipeSha256: 'y', runs: 4, resumed: false });
  j.append({ type: 'run-started', id: 'c01', host: 'a', gpus: [0], port: 1, recipeFile: '/r1', resumeDir: null });
  j.append({ type: 'run-started', id: 'c02', host: 'b', gpus: [0], port: 2, recipeFile: '/r2', resumeDir: null });
  j.append({ type: 'run-finished', id: 'c01', status: 'completed', reason: 'ok', runDir: '/runs/1', capacityQps: 4 });
  j.append({ type: 'run-finished', id: 'c02', status: 'interrupted', reason: 'signal', runDir: '/runs/2', capacityQps: null });
  j.append({ type: 'run-started', id: 'c03', host: 'a', gpus: [0], port: 1, recipeFile: '/r3', resumeDir: null });
  appendFileSync(path, '{"type":"run-finished","id":"c03","sta'); // SIGKILL mid-write
  const lines = j.read();
  assert.is(lines.length, 6);
  const s = runStates(lines, ['c01', 'c02', 'c03', 'c04']);
  assert.equal(s.get('c01'), { status: 'completed', runDir: '/runs/1', attempts: 1, jobId: null });
  assert.equal(s.get('c02'), { status: 'interrupted', runDir: '/runs/2', attempts: 1, jobId: null });
  assert.equal(s.get('c03'), { status: 'started', runDir: null, attempts: 1, jobId: null });
  assert.equal(s.get('c04'), { status: 'pending', runDir: null, attempts: 0, jobId: null });
});

test('a resumed run: its run directory kept from the start line, the later end wins', () => {
  const s = runStates(
    [
      { type: 'run-started', id: 'c02', host: 'b', gpus: [0], port: 2, recipeFile: '/r2', resumeDir: null },
      { type: 'run-finished', id: 'c02', status: 'interrupted', reason: 'signal', runDir: '/runs/2', capacityQps: null },
      { type: 'run-started', id: 'c02', host: 'b', gpus: [0], port: 2, recipeFile: '/r2', resumeDir: '/runs/2' },
      { type: 'run-finished', id: 'c02', status: 'completed', reason: 'ok', runDir: '/runs/2', capacityQps: 3 },
      { type: 'run-finished', id: 'zzz', status: 'completed', reason: 'not in this sweep', runDir: '/x', capacityQps: 1 },
    ],
    ['c02'],
  );
  assert.equal([...s.entries()], [['c02', { status: 'completed', runDir: '/runs/2', attempts: 2, jobId: null }]]);
});

test('a Slurm job stays the run\'s to re-attach to until its release is journalled', () => {
  const started: SweepEvent = { type: 'run-started', id: 'c01', host: 'cluster', gpus: [0], port: 1, recipeFile: '/r1', resumeDir: null };
  const held = runStates([{ type: 'allocation-submitted', id: 'c01', jobId: '41' }, started, { type: 'allocation-submitted', id: 'c01', jobId: '42' }], ['c01']);
  assert.equal(held.get('c01'), { status: 'started', runDir: null, attempts: 1, jobId: '42' });
  const released = runStates([started, { type: 'allocation-submitted', id: 'c01', jobId: '42' }, { type: 'allocation-released', id: 'c01', jobId: '42', heldS: 3 }], ['c01']);
  assert.is(released.get('c01')!.jobId, null);
});

test('Slurm times add up over sessions: queue waits of new jobs, holds of released ones; a re-attached job queues no more', () => {
  const t = slurmTimes([
    { type: 'allocation-running', id: 'c01', jobId: '41', node: 'n1', queuedS: 12.5, slurmQueuedS: 12, reattached: false },
    { type: 'allocation-released', id: 'c01', jobId: '41', heldS: 30 },
    { type: 'allocation-running', id: 'c01', jobId: '42', node: 'n2', queuedS: 4, slurmQueuedS: null, reattached: false },
    { type: 'allocation-running', id: 'c01', jobId: '42', node: 'n2', queuedS: 0, slurmQueuedS: null, reattached: true },
    { type: 'allocation-released', id: 'c01', jobId: '42', heldS: 20 },
    { type: 'allocation-released', id: 'c02', jobId: '50', heldS: 99 },
  ]);
  assert.equal([...t.entries()], [['c01', { jobId: '42', node: 'n2', queuedS: 16.5, heldS: 50, jobs: 2 }]]);
});

test.run();
