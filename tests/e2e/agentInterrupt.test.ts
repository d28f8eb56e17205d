// A Ctrl-C that lands while a load agent's container is being created, over the real sshd +
// dockerd of CI. On Ctrl-C two things happen at once: the probe's start of its agents is aborted,
// and the engine session tears its host down (engineTeardown.ts: remove the run's containers by
// label, then close the SSH connection). The daemon lists a container only once its create is
// done, and finishes a create whose caller has gone, so a teardown that only listed left the agent
// behind. Here the interrupt lands at several moments after the create was issued (from at once to
// after the agent started); after each, and once the daemon has had time to finish any create, no
// container with the run's label may be left. No engine is needed: the agent is stopped before it
// would send anything.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { e2eEnv, e2eHost } from './e2eEnv.ts';
import { openHost, type HostHandle } from '../../harness/provision/hostHandle.ts';
import { tearDown } from '../../harness/provision/engineTeardown.ts';
import { realLaunchDeps } from '../../harness/provision/launchDeps.ts';
import { dockerFor, localDocker } from '../../harness/provision/dockerAgent.ts';
import { connectHost } from '../../harness/provision/sshConnection.ts';
import { listRunContainers, removeRunContainers } from '../../harness/provision/teardown.ts';
import type { StopReport } from '../../harness/provision/engineTypes.ts';
import { ensureAgentImage, localAgentVersion } from '../../harness/agent/image.ts';
import { startAgents } from '../../harness/agent/container.ts';
import { RUN_LABEL } from '../../harness/provision/containerSpec.ts';
import { shown } from '../support/hooks.ts';

const env = e2eEnv('agent create interrupted');

/** Milliseconds between issuing the agent's create and the interrupt ('now': in the same tick). */
const OFFSETS: ('now' | number)[] = ['now', 5, 40, 250, 1000];

/** Runs (by label) the daemon has created a container for, as its events report them. */
async function watchCreates(prefix: string): Promise<{ seen: Set<string>; stop: () => void }> {
  const seen = new Set<string>();
  const stream = (await localDocker().getEvents({ filters: { type: ['container'], event: ['create'], label: [RUN_LABEL] } })) as NodeJS.ReadableStream & { destroy(): void };
  let buf = '';
  stream.on('data', (b: Buffer) => {
    buf += b.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const run = (JSON.parse(buf.slice(0, i)) as { Actor?: { Attributes?: Record<string, string> } }).Actor?.Attributes?.[RUN_LABEL] ?? '';
      if (run.startsWith(prefix)) seen.add(run);
      buf = buf.slice(i + 1);
    }
  });
  return { seen, stop: () => stream.destroy() };
}

if (env) {
  const prefix = `e2e-${process.pid}-race`;
  let image = '';

  test.before(shown(async () => {
    const conn = await connectHost(e2eHost(env));
    try {
      image = await ensureAgentImage(dockerFor(conn), { version: localAgentVersion(), hostName: 'e2e', log: () => {} });
    } finally {
      await conn.close();
    }
  }));

  test('Ctrl-C at any moment of an agent\'s create: teardown waits for the create, and no container is left', async () => {
    const t0 = performance.now();
    const cases: { offset: string; started: string; settledAfterInterrupt: boolean; report: StopReport }[] = [];
    const creates = await watchCreates(prefix);
    for (const offset of OFFSETS) {
      const runId = `${prefix}-${offset}`;
      const handle: HostHandle = await openHost(e2eHost(env));
      const abort = new AbortController();
      let stopping: Promise<StopReport> | null = null;
      let fired!: () => void;
      const interrupted = new Promise<void>((r) => (fired = r));
      // What Ctrl-C does: the work's abort (interrupts.ts), then the engine session's stop() (signals.ts).
      const interrupt = () => {
        abort.abort();
        stopping ??= tearDown(
          { handle, telemetryStops: [], tunnel: null, logs: null },
          {
            hostName: 'e2e',
            containerName: `fluidcap-${runId}`,
            runId,
            reconnectTimeoutS: 10,
            reconnect: () => openHost(e2eHost(env)),
            removeRunContainers: (h) => removeRunContainers(h.docker, runId, { graceS: 1 }),
            waitGpusIdle: null,
            log: () => {},
          },
          realLaunchDeps,
        );
        fired();
      };
      let settledAfterInterrupt = false;
      const create = handle.docker.createContainer.bind(handle.docker);
      handle.docker.createContainer = ((opts: Parameters<typeof create>[0]) => {
        const p = create(opts);
        const answered = () => void (settledAfterInterrupt = stopping !== null);
        void p.then(answered, answered);
        if (offset === 'now') interrupt();
        else setTimeout(interrupt, offset);
        return p;
      }) as typeof handle.docker.createContainer;

      const site = { docker: handle.docker, hostName: 'e2e', engineUrl: 'http://127.0.0.1:9', lost: handle.lost };
      const started = await startAgents([site], { count: 1, image, runId, namePrefix: `fluidcap-${runId}-agent-p01`, signal: abort.signal }).then(
        // Started before the interrupt landed: the probe's own finally removes them, as probeStep.ts does.
        async (s) => (await interrupted, await s.remove(), 'started'),
        (err: Error) => `not started (${err.message.slice(0, 80)})`,
      );
      await interrupted;
      const report = await stopping!;
      cases.push({ offset: String(offset), started, settledAfterInterrupt, report });
    }
    // A create the teardown did not wait for is finished by the daemon afterwards (seconds later on
    // a loaded machine): every case's create is waited for, as the daemon reports it, before looking.
    for (let i = 0; i < 1200 && creates.seen.size < OFFSETS.length; i++) await new Promise((r) => setTimeout(r, 100));
    creates.stop();
    const left = (await listRunContainers(localDocker())).filter((c) => (c.Labels?.[RUN_LABEL] ?? '').startsWith(prefix));
    for (const c of cases) console.log(`  interrupt ${c.offset} ms after the create: ${c.started}; create answered after the interrupt: ${c.settledAfterInterrupt}; teardown removed ${JSON.stringify(c.report.removed)}`);
    await Promise.all(left.map((c) => localDocker().getContainer(c.Id).remove({ force: true }).catch(() => {})));
    assert.equal(left.map((c) => `${c.Names[0]} (${c.State})`), [], 'agent containers left after the interrupt');
    assert.is(creates.seen.size, OFFSETS.length, 'the daemon created each case\'s agent');
    assert.ok(cases.some((c) => c.settledAfterInterrupt), 'in at least one case the interrupt landed while the create was in flight');
    for (const c of cases) assert.equal(c.report.remaining, [], `offset ${c.offset}: the teardown confirmed nothing is left`);
    console.log(`  agent create interrupted at ${OFFSETS.length} moments: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });
}

test.run();
