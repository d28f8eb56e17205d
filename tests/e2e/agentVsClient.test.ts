// Same numbers from either side: `fluidcap run` searches the simulated engine's capacity twice
// (its container on the e2e host behind sshd + dockerd), once with the load sent by an agent beside
// the engine and once by the client over loopback (access: direct), the same recipe and seed. A
// correct system gives two estimates of one capacity, so their 95% intervals overlap with high
// probability; the same seed sends the same requests at every rate both searches visit, which
// takes out the sample-to-sample spread the intervals do not cover (docs/verdicts.md). The ratio
// is printed, not asserted: within the search's tolerance is stricter than the estimates' noise.
// scripts/agent-vs-client.ts runs the full recipe and prints both rules.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { e2eEnv, e2eInventory, freePort } from './e2eEnv.ts';
import { ROOT, fluidcap, onlyRunDir, readJson, type CapacityFile } from '../pipeline/support.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers, removeRunContainers } from '../../harness/provision/teardown.ts';
import { bracketOf, intervalOf } from '../../harness/gate/evidence.ts';

const env = e2eEnv('agent vs client');
const RECIPE = join(ROOT, 'tests', 'fixtures', 'recipes', 'agent-vs-client.yaml');

if (env) {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-agent-vs-client-'));
  const inventory = join(work, 'inventory.yaml');
  const runDirs: string[] = [];

  /** One search with the load sent from `from`; returns its run directory. */
  async function search(from: 'agent' | 'client'): Promise<string> {
    const r = parse(readFileSync(RECIPE, 'utf8')) as Record<string, Record<string, unknown>>;
    r.target = { ...r.target, image: env!.image, host: 'e2e', port: await freePort(), access: 'direct', readyTimeout: '90s' };
    // Three probes: a pass, a fail, and one between them close both ends of each interval.
    // Receivers at normal priority on both sides: a Docker that refuses real-time threads in
    // containers (cgroup v1 with RT group scheduling, as CI's is) leaves the agent's there while
    // this process's would run under SCHED_FIFO, and a loaded machine then delays only the agent's
    // reads (scripts/agent-vs-client.ts shows it). The comparison is of where load is sent from.
    const search = r.search as { probe?: Record<string, unknown> };
    r.search = { ...search, maxProbes: 3, probe: { ...search.probe, realtimeReceivers: false } };
    r.load = { from };
    const file = join(work, `${from}.yaml`);
    writeFileSync(file, stringify(r));
    const out = join(work, from);
    const run = await fluidcap(['run', file, '--hosts', inventory, '--out', out], { timeoutMs: 300_000 });
    assert.is(run.code, 0, run.stderr.slice(-3000));
    const dir = onlyRunDir(out);
    runDirs.push(dir);
    assert.equal(await listRunContainers(localDocker(), dir.split('/').pop()!), [], `load from ${from}: a container is left with the run label`);
    return dir;
  }

  const intervalIn = (dir: string) => {
    const c = readJson<CapacityFile & { tolerance: number; outcome: string }>(join(dir, 'capacity.json'));
    const path = c.probes.map((p) => `${p.qps}${p.passed ? '✓' : '✗'}`).join(' ');
    return { capacityQps: c.capacityQps, path, ...intervalOf(c, c.capacityQps, bracketOf({ capacityQps: c.capacityQps, passQps: c.bracket.passQps, failQps: c.bracket.failQps, tolerance: c.tolerance, outcome: c.outcome })) };
  };

  test('the same recipe and seed, load sent by an agent and by the client over loopback: the 95% intervals overlap', async () => {
    const t0 = performance.now();
    writeFileSync(inventory, e2eInventory(env));
    const fromAgent = await search('agent');
    const fromClient = await search('client');
    const manifests = [fromAgent, fromClient].map((d) => readJson<{ plan: { load: { from: string; chosenBy: string } } }>(join(d, 'manifest.json')));
    assert.equal(manifests.map((m) => [m.plan.load.from, m.plan.load.chosenBy]), [['agent', 'recipe'], ['client', 'recipe']]);
    // The same seed: the first probe of each search planned the same requests at the same times
    // (their prompts' text differs by the run's nonce, which keeps a prefix cache from serving them).
    const firstPlan = (d: string) => readJson<{ seed: number; requests: unknown[] }>(join(d, 'probes', '01-qps-16', 'plan.json'));
    assert.equal([firstPlan(fromAgent).seed, firstPlan(fromAgent).requests], [firstPlan(fromClient).seed, firstPlan(fromClient).requests], 'the two searches planned different first probes');
    const [a, c] = [intervalIn(fromAgent), intervalIn(fromClient)];
    const q = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '∞');
    const figures = `agent ${q(a.capacityQps)} QPS [${q(a.lowQps)}, ${q(a.highQps)}] (${a.source}; ${a.path}), client ${q(c.capacityQps)} QPS [${q(c.lowQps)}, ${q(c.highQps)}] (${c.source}; ${c.path}), ratio ${(a.capacityQps / c.capacityQps).toFixed(3)}`;
    assert.ok(a.capacityQps > 0 && c.capacityQps > 0, figures);
    assert.ok(a.lowQps <= c.highQps && c.lowQps <= a.highQps, `the intervals do not overlap: ${figures}`);
    console.log(`  ${figures}; ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });

  test.after(async () => {
    for (const d of runDirs) await removeRunContainers(localDocker(), d.split('/').pop()!, { graceS: 1 }).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
}

test.run();
