// An existing OpenAI-compatible server seen as an Engine: nothing launched, nothing to stop, no GPU
// facts; only its base URL (without a trailing /v1).
import { join } from 'node:path';
import type { Host } from './inventory.ts';
import type { EndpointPlan, Engine } from './engineTypes.ts';

/** The Engine for an endpoint plan; `launchedAt` is the wall-clock time of attaching. */
export function endpointEngine(plan: EndpointPlan, host: Host, runDir: string, launchedAt: string): Engine {
  const baseUrl = plan.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  return {
    baseUrl,
    serverLogPath: join(runDir, 'server.log'),
    facts: {
      engine: 'endpoint', host: host.name, baseUrl, access: 'direct', containerName: null, containerId: null, image: null,
      imageId: null, imageDigest: null, gpu: null, dockerVersion: null, models: [], timeToReadyS: null, launchedAt,
      readyAt: null, sshHostKey: null, tunnel: null,
    },
    onExit: () => () => {},
    startGpuTelemetry: () => async () => {},
    stop: async () => ({ removed: [], remaining: [], gpuIdle: null, problems: [] }),
  };
}
