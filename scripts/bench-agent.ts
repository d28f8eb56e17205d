// npm run bench:agent — the client's timing error by where the load is sent from. The simulated
// engine runs in a container behind this machine's e2e sshd + dockerd (scripts/ci/setup-e2e.sh);
// for 100 and 500 concurrent streams it is probed three ways in one run: this process through
// the SSH tunnel (access: ssh-tunnel), this process on the engine's address (access: direct), and
// a load agent beside the engine (the agent's container on the host network, engine on loopback).
// Prints receive−emit p50/p99/max per row (from the engine's fluidcap_emit_ns), the main thread's
// delay p99 where the load went through the tunnel, and the 1-minute load average; no assertion.
// Here every "host" is this machine, so the three ways differ only by what lies between engine and
// clock (the tunnel's relay, the agent's container), not by a network.
// Usage: set -a; source .tmp/e2e/env; set +a; npx tsx scripts/bench-agent.ts [--streams 100,500] [--output 200]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { targetSchema } from '../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../harness/provision/containerSpec.ts';
import { launchEngine } from '../harness/provision/launcher.ts';
import type { InventoryHost } from '../harness/provision/inventory.ts';
import { planProbe } from '../harness/load/plan.ts';
import { runProbe } from '../harness/load/runProbe.ts';
import { workloadSchema } from '../harness/load/workloadSpec.ts';
import type { ClientHealth } from '../harness/load/health.ts';
import { ensureAgentImage, localAgentVersion } from '../harness/agent/image.ts';
import { startAgents } from '../harness/agent/container.ts';
import { runAgentProbe } from '../harness/agent/runAgents.ts';
import { createServer } from 'node:net';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '100,500' }, output: { type: 'string', default: '200' }, 'ramp-s': { type: 'string', default: '0.5' } } });
const e = process.env;
if (!e.FLUIDCAP_E2E_SSH_PORT || !e.FLUIDCAP_E2E_KEY || !e.FLUIDCAP_E2E_KNOWN_HOSTS) {
  console.error('bench-agent: no e2e sshd/docker (run scripts/ci/setup-e2e.sh, then: set -a; source .tmp/e2e/env; set +a)');
  process.exit(2);
}
const host: InventoryHost = {
  name: 'e2e', address: e.FLUIDCAP_E2E_SSH_HOST ?? '127.0.0.1', port: Number(e.FLUIDCAP_E2E_SSH_PORT), user: e.FLUIDCAP_E2E_SSH_USER ?? 'root',
  key: e.FLUIDCAP_E2E_KEY, knownHosts: e.FLUIDCAP_E2E_KNOWN_HOSTS, docker: { socket: '/var/run/docker.sock' }, labels: {}, nvidiaSmi: 'nvidia-smi',
};
const freePort = () => new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});

const dir = mkdtempSync(join(tmpdir(), 'fluidcap-bench-agent-'));
const runId = `bench-agent-${process.pid}`;
const port = await freePort();
const target = targetSchema.parse({ engine: 'sim', image: e.FLUIDCAP_E2E_IMAGE ?? 'fluidcap/sim:dev', model: 'tiny', port, host: 'e2e', access: 'ssh-tunnel', sim: { timeScale: 1 }, readyTimeout: '120s' });
const engine = await launchEngine(renderContainerSpec(target, { runId })!, host, { runDir: dir, access: 'ssh-tunnel' });
const site = engine.loadSite!;
const version = localAgentVersion();
const image = await ensureAgentImage(site.docker, { version, hostName: 'e2e', log: (l) => console.error(l) });
const directUrl = `http://127.0.0.1:${port}`;
const ms = (s: number | undefined) => (s === undefined ? '—' : (s * 1000).toFixed(2));
const rows: string[] = [];
try {
  for (const streams of values.streams.split(',').map(Number)) {
    const workload = workloadSchema.parse({ lengths: { prompt: 64, output: Number(values.output) }, arrivals: { process: 'constant' }, seed: streams });
    const plan = planProbe({ workload, rateQps: streams / Number(values['ramp-s']), requests: streams, maxContextTokens: 1 << 20 });
    const common = { model: 'tiny', workers: 1, requestTimeoutS: 120, stallTimeoutS: 30, metricsUrl: false as const };
    for (const way of ['client over ssh-tunnel', 'client over direct', 'agent beside the engine'] as const) {
      const out = join(dir, `${streams}-${way.replace(/\W+/g, '-')}`);
      let health: ClientHealth;
      let ok: number;
      if (way === 'agent beside the engine') {
        const started = await startAgents([{ docker: site.docker, hostName: 'e2e', engineUrl: directUrl, lost: site.lost }], { count: 1, image, runId, namePrefix: `fluidcap-${runId}-agent-${streams}` });
        try {
          const r = await runAgentProbe({ plan, options: common, agents: started.agents, version, timelinesFile: join(out, 'timelines.jsonl'), serverMetricsFile: join(out, 'server-metrics.jsonl') });
          health = r.clientHealth;
          ok = r.byStatus.ok;
        } finally {
          await started.remove();
        }
      } else {
        const tunnel = way === 'client over ssh-tunnel';
        const r = await runProbe(plan, { ...common, outDir: out, baseUrl: tunnel ? engine.baseUrl : directUrl, tunnelRelayCost: tunnel ? engine.tunnelRelayCost : undefined });
        health = r.clientHealth;
        ok = r.byStatus.ok;
      }
      const rme = health.recvMinusEmit;
      const rt = (health as ClientHealth & { realtimeReceivers?: number }).realtimeReceivers ?? 0;
      rows.push(`| ${streams} | ${way} | ${ok}/${streams} | ${ms(rme?.p50S)} | ${ms(rme?.p99S)} | ${ms(rme?.maxS)} | ${ms(health.tunnelRelay?.mainLoopDelayP99S)} | ${ms(health.cpuWait?.waitPerWakeS ?? undefined)} | ${rt} | ${loadavg()[0].toFixed(1)} |`);
      console.error(rows.at(-1));
    }
  }
} finally {
  await engine.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log('| streams | sent from | ok | receive−emit p50 (ms) | p99 (ms) | max (ms) | tunnel relay main-thread delay p99 (ms) | CPU wait per wake (ms) | SCHED_FIFO receivers | load avg (1 min) |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
