// What a started engine says it runs, read once it is ready: its start-up log (server.log) and
// its /version route. Shared by the container and the process launch.
import { readFile } from 'node:fs/promises';
import type { EngineBasis } from './containerSpec.ts';
import { readEngineRuntime, type EngineRuntime } from './engineRuntime.ts';
import type { LaunchDeps } from './launchDeps.ts';

// The start-up lines reach server.log through the log follower, which may trail readiness by a
// moment: an engine expected to print them (vLLM, the simulated one) is read a few times.
export async function readRuntimeAfterStart(spec: { basis: EngineBasis }, serverLogPath: string, baseUrl: string, deps: LaunchDeps): Promise<EngineRuntime> {
  const version = await deps.httpGet(`${baseUrl}/version`, 5).then((r) => (r.status === 200 ? r.body : null), () => null);
  let rt = readEngineRuntime(await readFile(serverLogPath, 'utf8').catch(() => ''), version);
  for (let i = 0; i < 8 && spec.basis.scheduler !== null && rt.generation === null && rt.chunkedPrefill === null; i++) {
    await deps.sleep(0.25);
    rt = readEngineRuntime(await readFile(serverLogPath, 'utf8').catch(() => ''), version);
  }
  return rt;
}
