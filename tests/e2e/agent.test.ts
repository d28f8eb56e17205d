// Load agents over the real sshd + dockerd of CI: the agent image built and imported through the
// SSH connection, one agent beside the simulated engine's container (engine on loopback), then two
// agents on two "hosts" (a second sshd in front of the same dockerd) sharing one Poisson plan; the
// merged arrivals keep the plan's rate and gap CV²; no container is left after either.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eHost, e2eInventory, freePort, secondSshd } from './e2eEnv.ts';
import { BIN, FAST_RECIPE, ROOT, childEnv, fluidcap, readJson, readJsonl, untilProbeStarted } from '../pipeline/support.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { launchEngine, type Engine } from '../../harness/provision/launcher.ts';
import { dockerFor, localDocker } from '../../harness/provision/dockerAgent.ts';
import { connectHost, type HostConnection } from '../../harness/provision/sshConnection.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { ensureAgentImage, localAgentVersion, pruneAgentImages } from '../../harness/agent/image.ts';
import { AGENT_VERSION_LABEL } from '../../harness/agent/version.ts';
import { startAgents, type AgentSite } from '../../harness/agent/container.ts';
import { runAgentProbe } from '../../harness/agent/runAgents.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { shown } from '../support/hooks.ts';

const env = e2eEnv('load agents');
const readLines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TimelineRecord);

/** Rate and squared coefficient of variation of the gaps of arrival times (sorted here). */
function arrivalProcess(times: number[]): { rate: number; cv2: number } {
  const t = [...times].sort((a, b) => a - b);
  const gaps = t.slice(1).map((x, i) => x - t[i]);
  const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
  const variance = gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length;
  return { rate: 1 / mean, cv2: variance / mean ** 2 };
}

if (env) {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-agent-'));
  const runId = `e2e-${process.pid}-agent`;
  const version = localAgentVersion();
  const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 64 }, output: { min: 4, max: 12 } }, arrivals: { process: 'poisson' }, seed: 11 });
  const options = { model: 'tiny', workers: 1, requestTimeoutS: 20, stallTimeoutS: 5, scrapeIntervalS: 0.5 };
  let engine: Engine | null = null;
  let conn: HostConnection | null = null;
  let port = 0;

  test.before(shown(async () => {
    port = await freePort();
    const target = targetSchema.parse({ engine: 'sim', image: env.image, model: 'tiny', port, sim: { timeScale: 0.05 }, readyTimeout: '60s' });
    engine = await launchEngine(renderContainerSpec(target, { runId })!, e2eHost(env), { runDir: dir });
    conn = await connectHost(e2eHost(env));
  }));

  test('one agent beside the engine: image imported over SSH, probe timed on the agent, container removed', async () => {
    const t0 = performance.now();
    const docker = dockerFor(conn!);
    const lines: string[] = [];
    const image = await ensureAgentImage(docker, { version, hostName: 'e2e', log: (l) => lines.push(l) });
    assert.is(image, `fluidcap/agent:${version}`);
    const site: AgentSite = { docker, hostName: 'e2e', engineUrl: `http://127.0.0.1:${port}`, lost: conn!.closed };
    const started = await startAgents([site], { count: 1, image, runId, namePrefix: `fluidcap-${runId}-agent-p01` });
    const labelled = await listRunContainers(localDocker(), runId);
    assert.is(labelled.filter((c) => c.Labels['fluidcap.role'] === 'agent').length, 1, 'the agent carries the run label');
    const plan = planProbe({ workload, rateQps: 20, requests: 60, maxContextTokens: 2048, idPrefix: '01' });
    const out = join(dir, 'one');
    try {
      const result = await runAgentProbe({ plan, options, agents: started.agents, version, timelinesFile: join(out, 'timelines.jsonl'), serverMetricsFile: join(out, 'server-metrics.jsonl'), log: (l) => lines.push(l) });
      assert.is(result.agentLost, null, lines.join('\n'));
      assert.is(result.byStatus.ok, 60, JSON.stringify(result.byStatus));
      assert.ok(result.clientHealth.recvMinusEmit && result.clientHealth.recvMinusEmit.samples > 0, 'receive − emit measured beside the engine');
      assert.equal(result.load.agents.map((a) => [a.host, a.planned, a.sent]), [['e2e', 60, 60]]);
      assert.ok(result.serverMetrics.available, 'the agent scraped /metrics on loopback');
      const records = readLines(join(out, 'timelines.jsonl'));
      assert.is(records.length, 60);
      assert.ok(records.every((r) => r.agent === 0));
    } finally {
      assert.equal(await started.remove(), []);
    }
    assert.equal((await listRunContainers(localDocker(), runId)).filter((c) => c.Labels['fluidcap.role'] === 'agent'), [], 'no agent container left');
    console.log(`  one agent: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });

  test('an import keeps the two newest agent images of other versions and removes older ones; its own version stays', async () => {
    const docker = localDocker();
    // Stand-in images of four other versions, a second apart (Docker dates images to the second).
    const tar = join(dir, 'empty.tar');
    writeFileSync(join(dir, 'marker'), 'x');
    execFileSync('tar', ['-cf', tar, '-C', dir, 'marker']);
    const fakes: string[] = [];
    for (let i = 0; i < 4; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 1100));
      const fake = `0.0.0-e2e${process.pid}v${i}`;
      const stream = await docker.importImage(createReadStream(tar) as never, { repo: 'fluidcap/agent', tag: fake, changes: [`LABEL ${AGENT_VERSION_LABEL}=${fake} fluidcap.image=agent`] } as never);
      await new Promise<void>((resolve, reject) => docker.modem.followProgress(stream as unknown as NodeJS.ReadableStream, (e: Error | null) => (e ? reject(e) : resolve())));
      fakes.push(fake);
    }
    const idOf = async (v: string) => (await docker.getImage(`fluidcap/agent:${v}`).inspect()).Id;
    const ids = await Promise.all(fakes.map(idOf));
    try {
      const removed = await pruneAgentImages(docker, version);
      assert.ok(removed.includes(ids[0]) && removed.includes(ids[1]), `the two oldest stand-ins removed: ${removed}`);
      assert.ok(!removed.includes(ids[2]) && !removed.includes(ids[3]), 'the two newest kept');
      assert.is(await idOf(fakes[3]), ids[3]);
      assert.ok(await idOf(version), 'the current version\'s image stays');
    } finally {
      for (const f of fakes) await docker.getImage(`fluidcap/agent:${f}`).remove({ force: true }).catch(() => {});
    }
  });

  test('two agents on two hosts: one plan dealt between them, merged arrivals keep the rate (3%) and gap CV² (10%)', async () => {
    const t0 = performance.now();
    const sshd2 = await secondSshd(dir, env.sshdConfig);
    const keyLine = readFileSync(env.knownHosts, 'utf8').split('\n').find((l) => l.trim())!;
    writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${sshd2.port} ${keyLine.slice(keyLine.indexOf(' ') + 1)}\n`);
    const conn2 = await connectHost(e2eHost(env, { name: 'e2e-b', port: sshd2.port, knownHosts: join(dir, 'known_hosts') }));
    try {
      const sites: AgentSite[] = [
        { docker: dockerFor(conn!), hostName: 'e2e', engineUrl: `http://127.0.0.1:${port}`, lost: conn!.closed },
        { docker: dockerFor(conn2), hostName: 'e2e-b', engineUrl: `http://127.0.0.1:${port}`, lost: conn2.closed },
      ];
      const image = await ensureAgentImage(sites[1].docker, { version, hostName: 'e2e-b', log: () => {} });
      const started = await startAgents(sites, { count: 2, image, runId, namePrefix: `fluidcap-${runId}-agent-p02` });
      const plan = planProbe({ workload, rateQps: 30, requests: 300, maxContextTokens: 2048, idPrefix: '02' });
      const out = join(dir, 'two');
      try {
        const result = await runAgentProbe({ plan, options, agents: started.agents, version, timelinesFile: join(out, 'timelines.jsonl'), serverMetricsFile: join(out, 'server-metrics.jsonl') });
        assert.is(result.agentLost, null);
        assert.is(result.byStatus.ok, 300, JSON.stringify(result.byStatus));
        assert.equal(result.load.agents.map((a) => [a.host, a.planned]), [['e2e', 150], ['e2e-b', 150]]);
        const records = readLines(join(out, 'timelines.jsonl'));
        assert.is(records.length, 300);
        assert.equal(records.map((r) => r.id), plan.requests.map((r) => r.id), 'merged in plan order');
        assert.ok(records.every((r, i) => r.agent === i % 2));
        // The arrivals the two agents recorded, merged, are the planned process (Poisson: CV² near 1).
        const arrived = arrivalProcess(records.map((r) => r.scheduledS));
        const process = arrivalProcess(plan.requests.map((r) => r.scheduledS));
        assert.ok(Math.abs(arrived.rate / 30 - 1) < 0.03 * 4, `rate ${arrived.rate} vs 30 QPS planned`);
        assert.ok(Math.abs(arrived.rate / process.rate - 1) < 0.03, `rate ${arrived.rate} vs ${process.rate}`);
        assert.ok(Math.abs(arrived.cv2 / process.cv2 - 1) < 0.1, `gap CV² ${arrived.cv2} vs ${process.cv2}`);
        assert.ok(records.every((r) => r.sentS >= r.scheduledS - 1e-6), 'no request sent before its time');
        // When they went out depends on this machine's load: printed, not asserted (no timed assertions).
        const sent = arrivalProcess(records.map((r) => r.sentS));
        console.log(`  two agents: sent rate ${sent.rate.toFixed(2)} vs planned ${process.rate.toFixed(2)} QPS, sent-gap CV² ${sent.cv2.toFixed(3)} vs ${process.cv2.toFixed(3)}`);
      } finally {
        assert.equal(await started.remove(), []);
      }
    } finally {
      await conn2.close();
      sshd2.stop();
    }
    console.log(`  two agents: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });

  test('fluidcap run with the default agent (a container on another host): the agent killed mid-probe exits 3 with the resume line; --resume finishes; no container left', async () => {
    const t0 = performance.now();
    const runDirs = join(dir, 'runs');
    const inventory = join(dir, 'inventory.yaml');
    writeFileSync(inventory, e2eInventory(env));
    const sim = `sim: { scheduler: vllm, timeScale: 1 }\n  image: ${env.image}\n  host: e2e\n  port: ${await freePort()}\n  readyTimeout: 60s`;
    // Probes of 8 s at least, so one is still sending when its agent is killed.
    // At most four probes: the fault lands in the second; the resumed run only has to finish.
    const text = readFileSync(FAST_RECIPE, 'utf8').replace('sim: { scheduler: vllm, timeScale: 1 }', sim).replace('minDuration: 3s', 'minDuration: 8s').replace('maxProbes: 8', 'maxProbes: 4');
    assert.ok(text.includes('host: e2e') && text.includes('minDuration: 8s') && text.includes('maxProbes: 4'));
    const recipe = join(dir, 'agent-run.yaml');
    writeFileSync(recipe, text.replace('name: fast', 'name: agentrun'));
    const child = spawn(process.execPath, [BIN, 'run', recipe, '--hosts', inventory, '--out', runDirs], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    const runDir = await untilProbeStarted(runDirs, 2, exited, () => stderr);
    const runIdOf = runDir.split('/').pop()!;
    // The second probe's agent, once it runs: killed as a host would kill it.
    let agent: string | null = null;
    for (let i = 0; i < 600 && agent === null; i++) {
      const found = (await listRunContainers(localDocker(), runIdOf)).find((c) => c.Labels['fluidcap.role'] === 'agent' && c.State === 'running' && c.Names[0].includes('-p02-'));
      if (found) agent = found.Id;
      else await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(agent, `no running agent for probe 2:\n${stderr.slice(-2000)}`);
    // Killed mid-probe: once the timeline of probe 2 has records.
    const probes = join(runDir, 'probes');
    const recorded = () => {
      const d = existsSync(probes) ? readdirSync(probes).find((n) => n.startsWith('02-qps-') && !n.endsWith('.interrupted')) : undefined;
      return d && existsSync(join(probes, d, 'timelines.jsonl')) ? readFileSync(join(probes, d, 'timelines.jsonl'), 'utf8').split('\n').length - 1 : 0;
    };
    for (let i = 0; i < 1200 && recorded() < 5 && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(recorded() >= 5, `probe 2 recorded nothing:\n${stderr.slice(-2000)}`);
    await localDocker().getContainer(agent!).kill().catch(() => {});
    const code = await exited;
    assert.is(code, 3, stderr.slice(-3000));
    assert.match(stderr, /a load agent was lost during probe \d+ at \S+ QPS: agent 0 on e2e.*resume with: fluidcap run --resume /s, stderr.slice(-3000));
    assert.equal(await listRunContainers(localDocker(), runIdOf), [], 'no container left after the fault');
    const events = readJsonl(join(runDir, 'events.jsonl'));
    const moved = events.find((e) => e.type === 'probe-interrupted')!;
    assert.ok(moved, 'the probe was moved aside, not judged');
    const lost = readJson<{ agentLost?: string; valid: boolean }>(join(runDir, String(moved.movedTo), 'summary.json'));
    assert.ok(lost.agentLost && !lost.valid);

    const resumed = await fluidcap(['run', '--resume', runDir, '--hosts', inventory], { timeoutMs: 600_000 });
    assert.is(resumed.code, 0, resumed.stderr.slice(-3000));
    const manifest = readJson<{ status: string; plan: { load: { from: string; chosenBy: string } }; host: { loadFrom: string } }>(join(runDir, 'manifest.json'));
    assert.is(manifest.status, 'completed');
    assert.equal(manifest.plan.load, { from: 'agent', chosenBy: 'default', agents: 1, hosts: null });
    assert.match(manifest.host.loadFrom, /^1 load agent beside the engine on e2e \(version /);
    const finished = readJsonl(join(runDir, 'events.jsonl')).filter((e) => e.type === 'probe-finished');
    assert.ok(finished.length >= 2);
    let refusedRealtime = false;
    for (const f of finished) {
      const s = readJson<{ load: { from: string; agents: { host: string }[] }; client: { realtimeReceivers?: number } }>(join(runDir, String(f.dir), 'summary.json'));
      assert.is(s.load.from, 'agent');
      assert.equal(s.load.agents.map((a) => a.host), ['e2e']);
      // The recipe leaves workers to their default (at least one receiving thread).
      if (s.client.realtimeReceivers === 0) refusedRealtime = true;
    }
    // Whether this host's Docker grants containers real-time threads varies (cgroup v1 with RT group
    // scheduling does not): when it refused them, the console said so, once per session.
    const said = resumed.stderr.match(/load agents: the receivers run at normal priority/g)?.length ?? 0;
    assert.is(said, refusedRealtime ? 1 : 0, resumed.stderr.slice(-3000));
    assert.match(readFileSync(join(runDir, 'report.md'), 'utf8'), /load sent from.*1 load agent beside the engine on e2e/);
    assert.equal(await listRunContainers(localDocker(), runIdOf), [], 'no container left after the resumed run');
    console.log(`  killed and resumed run: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });

  test.after(async () => {
    await conn?.close();
    const report = await engine?.stop();
    assert.equal(report?.remaining ?? [], []);
    assert.equal(await listRunContainers(localDocker(), runId), [], 'no container left with the run label');
  });
}

test.run();
