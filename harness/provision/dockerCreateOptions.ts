// Turns a container spec into Docker's create-container body. Kept apart from the launcher so the
// exact API request is checked field by field in tests without a daemon. Pure.
import type Docker from 'dockerode';
import type { ContainerSpec } from './containerSpec.ts';

export interface CreateInputs {
  /** Secret values by container variable name, resolved from the local environment at launch. */
  secretValues: Record<string, string>;
  /** Mount sources with `~/` already resolved against the remote home. */
  resolveSource: (source: string) => string;
}

/** dockerode's createContainer options for a spec. */
export function dockerCreateOptions(spec: ContainerSpec, inputs: CreateInputs): Docker.ContainerCreateOptions {
  const env = [
    ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    ...spec.secretEnv.map((s) => `${s.name}=${inputs.secretValues[s.name] ?? ''}`),
  ];
  const hostConfig: Docker.HostConfig = {
    NetworkMode: spec.networkMode,
    Binds: spec.mounts.map((m) => `${inputs.resolveSource(m.source)}:${m.target}${m.readOnly ? ':ro' : ''}`),
    // Never restarted by Docker: a crashed engine must be seen as crashed.
    RestartPolicy: { Name: 'no' },
    AutoRemove: false,
  };
  if (spec.gpuDeviceIds) hostConfig.DeviceRequests = [{ Driver: 'nvidia', DeviceIDs: spec.gpuDeviceIds, Capabilities: [['gpu']] }];
  if (spec.ipcMode) hostConfig.IpcMode = spec.ipcMode;
  if (spec.shmSizeBytes) hostConfig.ShmSize = spec.shmSizeBytes;
  return {
    name: spec.name,
    Image: spec.image,
    Cmd: spec.argv,
    Env: env,
    Labels: spec.labels,
    HostConfig: hostConfig,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
  };
}
