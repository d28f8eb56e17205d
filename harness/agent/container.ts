// Load agent containers: started beside the engine through the host's Docker (over the SSH
// connection fluidcap already holds), on the host network so the engine is on loopback, labelled
// with the run like the engine's container so teardown and `fluidcap clean` remove them too.
// Their stdin and stdout are the protocol's transport (Docker attach on the same connection).
import { PassThrough, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { RUN_LABEL } from '../provision/containerSpec.ts';
import { createRunContainer } from '../provision/teardown.ts';
import { linkOverStreams, type AgentLink } from './link.ts';
import { ROLE_LABEL } from './version.ts';
import type { ProbeAgent } from './runAgents.ts';

/** Where agents may run: a host's Docker, and the engine's URL as seen from that host. */
export interface AgentSite {
  docker: Docker;
  hostName: string;
  engineUrl: string;
  /** Settles when the host's connection drops or closes (never for this machine). */
  lost?: Promise<Error | null>;
}

export interface StartedAgents {
  agents: ProbeAgent[];
  /** Removes every agent container (force); never throws, says what it could not remove. */
  remove(): Promise<string[]>;
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/**
 * Starts `count` agents placed round-robin over `sites` (agent k on site k mod sites), each named
 * `<namePrefix>-<k>`; on failure, or once `signal` is aborted, removes what it created and throws.
 * Each create goes through createRunContainer, so a teardown of the host's run (the engine's, on
 * Ctrl-C) waits for a create in flight before it lists the run's containers.
 */
export async function startAgents(
  sites: AgentSite[],
  opts: { count: number; image: string; runId: string; namePrefix: string; signal?: AbortSignal },
): Promise<StartedAgents> {
  // Every create issued, answered or not: one whose answer was lost may still have been made, and
  // its name (unique to this probe) finds it.
  const issued: { docker: Docker; name: string; created: Promise<Docker.Container | null> }[] = [];
  const remove = async () => {
    const problems: string[] = [];
    await Promise.all(
      issued.map(async (c) => {
        const container = await c.created;
        try {
          await (container ?? c.docker.getContainer(c.name)).remove({ force: true });
        } catch (err) {
          if (statusOf(err) !== 404 && statusOf(err) !== 409) problems.push(`${c.name}: ${(err as Error).message}`);
        }
      }),
    );
    return problems;
  };
  const checkAbort = () => {
    if (opts.signal?.aborted) throw new Error(`load agents ${opts.namePrefix}-*: not started, the probe was interrupted`);
  };
  try {
    const agents: ProbeAgent[] = [];
    for (let k = 0; k < opts.count; k++) {
      const site = sites[k % sites.length];
      const name = `${opts.namePrefix}-${k}`;
      // A leftover of the same name (an earlier attempt of this probe) is ours to replace.
      await site.docker.getContainer(name).remove({ force: true }).catch(() => {});
      checkAbort();
      const creating = createRunContainer(site.docker, {
        name,
        Image: opts.image,
        Labels: { [RUN_LABEL]: opts.runId, [ROLE_LABEL]: 'agent' },
        OpenStdin: true,
        StdinOnce: true,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        // SYS_NICE lets the receivers run under SCHED_FIFO as they do on a workstation (threadPriority.ts).
        HostConfig: { NetworkMode: 'host', CapAdd: ['SYS_NICE'] },
      });
      issued.push({ docker: site.docker, name, created: creating.catch(() => null) });
      const c = await creating;
      checkAbort();
      // Attached before it starts, so its hello is not missed.
      const stream = (await c.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      site.docker.modem.demuxStream(stream, stdout, stderr);
      let transportEnded!: (why: string) => void;
      const ended = new Promise<string>((r) => (transportEnded = r));
      stream.on('end', () => {
        stdout.end();
        stderr.end();
      });
      stream.on('close', () => transportEnded(`agent ${k} on ${site.hostName}: its connection closed`));
      stream.on('error', (err) => transportEnded(`agent ${k} on ${site.hostName}: its connection failed (${err.message})`));
      void site.lost?.then((err) => transportEnded(`agent ${k} on ${site.hostName}: the host's connection was lost (${err?.message ?? 'closed'})`));
      checkAbort();
      await c.start();
      // The exit is reported on its own channel, which may overtake the agent's last output: the
      // link reads that output before it acts on the notice (link.ts, EXIT_DRAIN_MS).
      void c.wait().then(
        (r: { StatusCode?: number }) => transportEnded(`agent ${k} on ${site.hostName} exited (code ${r.StatusCode ?? '?'})`),
        (err: Error) => transportEnded(`agent ${k} on ${site.hostName}: lost its container (${err.message})`),
      );
      const link: AgentLink = linkOverStreams(`agent ${k} on ${site.hostName}`, { stdin: stream, stdout, stderr, ended });
      agents.push({ link, baseUrl: site.engineUrl, host: site.hostName });
    }
    checkAbort();
    return { agents, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
