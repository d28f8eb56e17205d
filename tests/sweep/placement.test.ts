// Placement: a group's hosts all used, GPU sets of each run's size, one port per GPU set over all
// hosts (two inventory hosts may share a network), runs of one set queued on it, and problems.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gpuLocks, placeRuns, type PlacementRequest } from '../../harness/sweep/placement.ts';

const groups: Record<string, string[]> = { pair: ['a', 'b'], a: ['a'], b: ['b'], local: ['local'] };
const hostsOf = (n: string) => {
  const h = groups[n];
  if (!h) throw new Error(`target.host must name a host or group, got "${n}"`);
  return h;
};
const req = (id: string, over: Partial<PlacementRequest> = {}): PlacementRequest => ({ id, hostOrGroup: 'pair', gpus: [0], gpuCount: 1, launch: 'container', ...over });

test('four one-GPU runs on a two-host group, one GPU each: alternate hosts, two sets, two ports', () => {
  const r = placeRuns(['r1', 'r2', 'r3', 'r4'].map((id) => req(id)), { hostsOf, portBase: 9000 });
  assert.ok(r.ok);
  if (!r.ok) return;
  assert.equal(r.placements.map((p) => [p.host, p.gpus, p.port]), [['a', [0], 9000], ['b', [0], 9001], ['a', [0], 9000], ['b', [0], 9001]]);
  assert.equal(r.slots, ['a#0', 'b#0']);
});

test('gpusPerHost: sets of each run\'s size; a TP-2 run avoids GPUs a TP-1 run holds; every set its own port', () => {
  const r = placeRuns([req('tp1'), req('tp1b'), req('tp2', { gpuCount: 2, gpus: [0, 1] }), req('tp4', { gpuCount: 4, gpus: [0, 1, 2, 3], hostOrGroup: 'a' })], { hostsOf, gpusPerHost: 4, portBase: 8000 });
  assert.ok(r.ok);
  if (!r.ok) return;
  const [p1, p2, p3, p4] = r.placements;
  assert.equal([p1.host, p1.gpus], ['a', [0]]);
  assert.equal([p2.host, p2.gpus], ['b', [0]]);
  assert.equal([p3.host, p3.gpus], ['a', [2, 3]]);
  assert.equal([p4.host, p4.gpus], ['a', [0, 1, 2, 3]]);
  const ports = r.placements.map((p) => p.port);
  assert.is(new Set(ports).size, 4, `ports ${ports}`);
  // the TP-4 run shares GPUs with both runs on host a: it takes their locks and waits its turn
  assert.equal(gpuLocks(p4), ['a#0', 'a#1', 'a#2', 'a#3']);
  assert.ok(gpuLocks(p4).includes(gpuLocks(p1)[0]) && gpuLocks(p4).includes(gpuLocks(p3)[1]));
  assert.not.ok(gpuLocks(p2).some((l) => gpuLocks(p4).includes(l)), 'host b is independent');
});

test('no two runs placed at once on one host share a port, whatever the mix', () => {
  const reqs = Array.from({ length: 12 }, (_, i) => req(`r${i}`, { gpuCount: 1 + (i % 3), gpus: Array.from({ length: 1 + (i % 3) }, (_, g) => g) }));
  const r = placeRuns(reqs, { hostsOf, gpusPerHost: 8, portBase: 7000 });
  assert.ok(r.ok);
  if (!r.ok) return;
  for (const p of r.placements) {
    for (const q of r.placements) {
      if (p === q || p.slot === q.slot) continue;
      const disjoint = !gpuLocks(p).some((l) => gpuLocks(q).includes(l));
      if (disjoint) assert.ok(p.port !== q.port, `${p.id} and ${q.id} may run together on port ${p.port}`);
    }
  }
});

test('local processes get no port; endpoints are not placed on GPUs; problems are listed per run', () => {
  const ok = placeRuns([req('sim', { launch: 'local-process', hostOrGroup: 'local' }), req('ep', { launch: 'endpoint', hostOrGroup: 'local', gpus: [] })], { hostsOf, portBase: 8000 });
  assert.ok(ok.ok);
  if (ok.ok) {
    assert.equal([ok.placements[0].host, ok.placements[0].port], ['local', null]);
    assert.equal(gpuLocks(ok.placements[1]), []);
  }
  const bad = placeRuns([req('big', { gpuCount: 16 }), req('nowhere', { hostOrGroup: 'h200' })], { hostsOf, gpusPerHost: 8, portBase: 8000 });
  assert.not.ok(bad.ok);
  if (!bad.ok) assert.equal(bad.problems, ['big: needs 16 GPUs, more than gpusPerHost (8)', 'nowhere: target.host must name a host or group, got "h200"']);
});

test.run();
