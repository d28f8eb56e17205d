// The example sweeps in sweeps/ stay valid: `fluidcap sweep --dry-run` expands and places
// them (the cluster one over a two-host inventory group) and exits 0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fluidcap } from '../pipeline/support.ts';

test('sim-batch.yaml: four local runs, two GPU sets, two at a time', async () => {
  const r = await fluidcap(['sweep', 'sweeps/sim-batch.yaml', '--dry-run'], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^sweep sim-batch: 4 runs on 2 GPU sets, at most 2 at once\n/);
  assert.match(r.stdout, /c04-maxNumSeqs32-schedulersarathi +maxNumSeqs=32 scheduler=sarathi +local +1 +-\n/);
});

test('cluster-vllm.yaml over a two-host group: every host used, TP-2 on its own GPU pair, distinct ports', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sweep-examples-'));
  const inv = join(dir, 'inventory.yaml');
  writeFileSync(inv, 'hosts:\n  - { name: gpu1, address: 10.0.0.5, user: ubuntu, key: ~/.ssh/id_ed25519 }\n  - { name: gpu2, address: 10.0.0.6, user: ubuntu, key: ~/.ssh/id_ed25519 }\ngroups:\n  h100: [gpu1, gpu2]\n');
  const r = await fluidcap(['sweep', 'sweeps/cluster-vllm.yaml', '--hosts', inv, '--dry-run', '--json'], { timeoutMs: 60_000 });
  assert.is(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout) as { runs: { id: string; host: string; gpus: number[]; port: number }[] };
  assert.equal(plan.runs.map((x) => [x.id, x.host, x.gpus, x.port]), [
    ['c01-tensorParallel1-maxNumSeqs128', 'gpu1', [0], 8100],
    ['c02-tensorParallel1-maxNumSeqs256', 'gpu2', [0], 8101],
    ['c03-tensorParallel2-maxNumSeqs256', 'gpu1', [2, 3], 8102],
  ]);
  const without = await fluidcap(['sweep', 'sweeps/cluster-vllm.yaml', '--dry-run'], { timeoutMs: 60_000 });
  assert.is(without.code, 2);
  assert.match(without.stderr, /target\.host is "h100" \(string\): pass an inventory with --hosts/);
});

test.run();
