// Load agents as child processes over pipes (the same protocol and code the container runs over
// Docker attach), against the simulated engine in this process: two agents share a plan, their
// records merge ordered and named; a version mismatch is refused; a killed agent makes the probe
// interrupted with what was received kept.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer } from '../../harness/sim/server.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { linkOverStreams } from '../../harness/agent/link.ts';
import { runAgentProbe, type ProbeAgent } from '../../harness/agent/runAgents.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const ENTRY = new URL('../../harness/agent/entry.mjs', import.meta.url).pathname;
const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 64 }, output: { min: 4, max: 12 } }, arrivals: { process: 'poisson' }, seed: 9 });
const readLines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TimelineRecord);

function startAgents(n: number, url: string, version: string): { agents: ProbeAgent[]; children: ChildProcess[] } {
  const children = Array.from({ length: n }, () => spawn(process.execPath, [ENTRY], { env: { ...process.env, FLUIDCAP_AGENT_VERSION: version }, stdio: ['pipe', 'pipe', 'pipe'] }));
  const agents = children.map((c, k) => ({
    link: linkOverStreams(`agent ${k}`, { stdin: c.stdin!, stdout: c.stdout!, stderr: c.stderr!, ended: new Promise<string>((r) => c.once('exit', (code, sig) => r(`agent ${k} exited (${sig ?? code})`))) }),
    baseUrl: url,
    host: 'local',
  }));
  return { agents, children };
}
const exited = (c: ChildProcess) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r())));

const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.2 });
await sim.ready;
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-agents-'));
const options = { model: 'tiny', workers: 1, requestTimeoutS: 10, stallTimeoutS: 2, scrapeIntervalS: 0.2 };

test('two agents: the plan is dealt round-robin, the merged timeline is ordered by arrival and names each agent', async () => {
  const plan = planProbe({ workload, rateQps: 30, requests: 40, maxContextTokens: 2048, idPrefix: '01' });
  const { agents, children } = startAgents(2, sim.url, 'v-test');
  const out = join(dir, 'two');
  const result = await runAgentProbe({ plan, options, agents, version: 'v-test', timelinesFile: join(out, 'timelines.jsonl'), serverMetricsFile: join(out, 'server-metrics.jsonl'), warmupRequests: 4 });
  await Promise.all(children.map(exited));
  assert.is(result.agentLost, null);
  assert.is(result.byStatus.ok, 40, JSON.stringify(result.byStatus));
  assert.is(result.sent, 40);
  assert.equal(result.load.agents.map((a) => a.planned), [20, 20]);
  const lines = readLines(join(out, 'timelines.jsonl'));
  assert.is(lines.length, 40);
  const index = new Map(plan.requests.map((r) => [r.id, r.index]));
  lines.forEach((l, i) => {
    assert.is(l.agent, index.get(l.id)! % 2, `${l.id} sent by agent ${l.agent}`);
    if (i > 0) assert.ok(l.scheduledS >= lines[i - 1].scheduledS, 'ordered by planned arrival');
  });
  assert.equal(lines.filter((l) => l.warmup).map((l) => index.get(l.id)), [0, 1, 2, 3]);
  assert.ok(existsSync(join(out, 'server-metrics.jsonl')), 'the first agent scraped /metrics');
  assert.ok(result.clientHealth.recvMinusEmit !== null, 'receive − emit measured on the agents');
});

test('an agent of another version is refused before any request is sent', async () => {
  const plan = planProbe({ workload, rateQps: 30, requests: 10, maxContextTokens: 2048, idPrefix: '02' });
  const { agents, children } = startAgents(1, sim.url, 'v-old');
  const out = join(dir, 'version');
  const err = await runAgentProbe({ plan, options, agents, version: 'v-new', timelinesFile: join(out, 'timelines.jsonl'), serverMetricsFile: join(out, 'server-metrics.jsonl') }).then(() => null, (e: Error) => e);
  assert.ok(err, 'refused');
  assert.match(err!.message, /load agent version v-old, this fluidcap is v-new/);
  await Promise.all(children.map(exited));
  assert.is(readFileSync(join(out, 'timelines.jsonl'), 'utf8'), '');
});

test('an agent killed mid-probe: the probe is interrupted, the other agent cancelled, received records kept', async () => {
  const plan = planProbe({ workload, rateQps: 20, requests: 200, maxContextTokens: 2048, idPrefix: '03' });
  const { agents, children } = startAgents(2, sim.url, 'v-test');
  const out = join(dir, 'killed');
  let ended = 0;
  const result = await runAgentProbe({
    plan, options, agents, version: 'v-test', timelinesFile: join(out, 'timelines.jsonl'), serverMetricsFile: join(out, 'server-metrics.jsonl'),
    shouldStop: () => {
      if (++ended === 10) children[1].kill('SIGKILL');
      return null;
    },
  });
  await Promise.all(children.map(exited));
  assert.ok(result.agentLost, 'lost');
  assert.match(result.agentLost!, /agent 1/);
  assert.ok(result.sent < 200, `stopped early (${result.sent} sent)`);
  const lines = readLines(join(out, 'timelines.jsonl'));
  assert.ok(lines.length >= 10, `${lines.length} records kept`);
  assert.is(children[0].exitCode, 0, 'the surviving agent finished its cancelled probe and exited');
});

test.after(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});
test.run();
