// `fluidcap sweep` on a real engine fluidcap did not write: llama.cpp's server in Docker over the
// loopback sshd, its slot count swept over 2 and 4 (one capacity search each, one after the other on
// the host's one "GPU set"). About 100 s here.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eInventory, freePort } from './e2eEnv.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';
import { RUN_LABEL } from '../../harness/provision/containerSpec.ts';
import { runDirsIn } from '../pipeline/support.ts';
import { checkFinishedRun, fluidcap, llamaDockerRecipe, llamaEnv } from './llamacppSupport.ts';

const env = e2eEnv('llama.cpp sweep');
const llama = env ? llamaEnv('llama.cpp sweep') : null;

if (env && llama) {
  test('a sweep over llama-server slots 2 and 4 finds a capacity for each and leaves no container', async () => {
    const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-llamacpp-sweep-'));
    const inventory = join(work, 'inventory.yaml');
    writeFileSync(inventory, e2eInventory(env));
    // Sent from this process: what is under test is the sweep over llama.cpp's slots; llama.cpp with
    // load agents is covered by agentLlamacpp and llamacppDocker, and an agent per probe costs seconds.
    writeFileSync(join(work, 'base.yaml'), `${llamaDockerRecipe('llamacpp-slots-e2e', llama.image, await freePort())}load: { from: client }\n`);
    writeFileSync(join(work, 'sweep.yaml'), 'name: llamacpp-slots-e2e\nrecipe: base.yaml\nmatrix:\n  target.engineArgs.slots: [2, 4]\n');
    const out = join(work, 'results');
    const t0 = performance.now();
    const r = await fluidcap(['sweep', join(work, 'sweep.yaml'), '--hosts', inventory, '--out', out], { timeoutMs: 600_000, env: { FLUIDCAP_LLAMA_MODEL: llama.model } });
    assert.is(r.code, 0, r.stderr.slice(-4000));
    console.log(`  llama.cpp sweep over slots 2 and 4 took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    // The results folder also holds index.jsonl, where each finished run is indexed.
    const [sweepDir] = readdirSync(out, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    const runs = runDirsIn(join(out, sweepDir, 'runs'));
    assert.is(runs.length, 2, runs.join(', '));
    for (const run of runs) {
      const runDir = join(out, sweepDir, 'runs', run);
      const capacity = await checkFinishedRun(runDir);
      const spec = readFileSync(join(runDir, 'manifest.json'), 'utf8');
      // Each run launched the engine with its own slot count.
      assert.match(spec, new RegExp(`"--parallel",\\s*"${run.includes('slots2') ? 2 : 4}"`), `${run}: manifest does not show its --parallel`);
      console.log(`  llama.cpp sweep ${run}: capacity ${capacity.capacityQps} QPS, bracket ${JSON.stringify(capacity.bracket)}`);
    }
    const csv = readFileSync(join(out, sweepDir, 'report.csv'), 'utf8').trim().split('\n');
    assert.is(csv.length, 3, 'report.csv: a header and one row per configuration');
    assert.ok(existsSync(join(out, sweepDir, 'report.html')));
    const left = (await listRunContainers(localDocker())).filter((c) => (c.Labels?.[RUN_LABEL] ?? '').startsWith('llamacpp-slots-e2e'));
    assert.equal(left, [], 'the sweep left a labelled container');
  });
}

test.run();
