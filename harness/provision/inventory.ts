// The host inventory (SPEC §3): which GPU machines fluidcap may use and how to reach them.
// Validated in full before anything connects, every problem reported at once with its path.
//
// Interface (stable): `inventorySchema`, `parseInventory(raw, file)`, `loadInventory(file)`,
// `resolveHosts(inventory, nameOrGroup)`, `LOCAL_HOST`, types `Inventory`, `InventoryHost`.
//
// ```yaml
// hosts:
//   - name: gpu1
//     address: 10.0.0.5          # DNS name or IP
//     port: 22
//     user: ubuntu
//     key: ~/.ssh/id_ed25519     # or `agent: true` (SSH_AUTH_SOCK) / `agent: /path/to/agent.sock`
//     passphraseEnv: GPU1_KEY_PASSPHRASE   # name of a local env var holding the key's passphrase
//     knownHosts: ~/.ssh/known_hosts        # default
//     gpuProfile: h100-sxm-80gb
//     docker: { socket: /var/run/docker.sock }
//     hfCache: /data/hf-cache    # host path mounted as the container's Hugging Face cache
//     nvidiaSmi: nvidia-smi      # or a path
//     labels: { rack: a }
//   - name: cluster              # a Slurm cluster: the SSH fields reach its login host
//     kind: slurm
//     address: login.cluster.example.edu
//     user: alice
//     key: ~/.ssh/id_ed25519
//     slurm:
//       partition: gpu
//       account: lab-llm           # optional, as are qos and constraint
//       qos: normal
//       timeLimit: "02:00:00"      # minutes, HH:MM:SS or D-HH:MM:SS
//       gpuRequest: gres           # --gres=gpu[:type]:N (default), or gpus: --gpus=[type:]N
//       gpuType: h100              # optional GPU type in the request
//       constraint: h100           # node features (--constraint), & and | allowed
//       maxConcurrent: 2           # allocations a sweep holds at once (default 1)
//       nodeSshPort: 22            # compute nodes' sshd, reached through the login host
// groups:
//   h100: [gpu1]
// ```
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { UserError, describeValue } from '../util/errors.ts';
import { NVIDIA_SMI_RE } from './gpuFacts.ts';
import { MAX_ALIAS_COUNT, yamlExpansionProblem } from '../util/yamlLimits.ts';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const NAME_RULE = 'must be letters, digits, ".", "_" or "-"';

// Slurm names (partition, account, QoS, GPU type, features) and time limits as sbatch reads them;
// each travels as one argv word, so these rules are for clear errors, not for safety.
const SLURM_NAME = z.string().regex(NAME_RE, NAME_RULE);
const SLURM_TIME_RE = /^(\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2})$/;
const slurmSchema = z.strictObject({
  partition: SLURM_NAME,
  account: SLURM_NAME.optional(),
  qos: SLURM_NAME.optional(),
  timeLimit: z.string().regex(SLURM_TIME_RE, 'must be a Slurm time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS'),
  gpuRequest: z.enum(['gres', 'gpus']).default('gres'),
  gpuType: SLURM_NAME.optional(),
  constraint: z.string().regex(/^[A-Za-z0-9_.-]+([&|][A-Za-z0-9_.-]+)*$/, 'must be node features joined by & or | (such as h100 or a100&nvlink)').optional(),
  maxConcurrent: z.number().int().min(1).default(1),
  nodeSshPort: z.number().int().min(1).max(65535).default(22),
});
export type SlurmSettings = z.output<typeof slurmSchema>;

const hostSchema = z
  .strictObject({
    /** `slurm`: the SSH fields reach a login host, and runs get their node from an allocation; absent: ssh. */
    kind: z.enum(['ssh', 'slurm']).optional(),
    slurm: slurmSchema.optional(),
    name: z.string().regex(NAME_RE, NAME_RULE).refine((n) => n !== 'local', 'must not be "local" (reserved for this machine)'),
    address: z.string().min(1),
    port: z.number().int().min(1).max(65535).default(22),
    user: z.string().min(1),
    key: z.string().min(1).optional(),
    agent: z.union([z.boolean(), z.string().min(1)]).optional(),
    passphraseEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
    knownHosts: z.string().min(1).default('~/.ssh/known_hosts'),
    gpuProfile: z.string().min(1).optional(),
    docker: z.strictObject({ socket: z.string().startsWith('/', 'must be an absolute path').default('/var/run/docker.sock') }).prefault({}),
    hfCache: z.string().min(1).optional(),
    /** nvidia-smi on the host (a path when it is not on the SSH session's PATH). */
    nvidiaSmi: z
      .string()
      .regex(NVIDIA_SMI_RE, 'must be a program name or an absolute path (letters, digits, ".", "_", "+", "-" and "/" only)')
      .default('nvidia-smi'),
    labels: z.record(z.string(), z.string()).default({}),
  })
  .superRefine((h, ctx) => {
    if (h.key === undefined && h.agent === undefined && typeof h.name !== 'string') return;
    if (h.key === undefined && (h.agent === undefined || h.agent === false)) {
      ctx.addIssue({ code: 'custom', path: ['key'], input: h.key, message: 'must be set (a private key file), or set agent: true' });
    }
    if (h.kind === 'slurm' && h.slurm === undefined) {
      ctx.addIssue({ code: 'custom', path: ['slurm'], input: h.slurm, message: 'must be set for kind: slurm (at least partition and timeLimit)' });
    }
    if (h.kind !== 'slurm' && h.slurm !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['kind'], input: h.kind, message: 'must be slurm when the host has a slurm section' });
    }
    if (h.passphraseEnv !== undefined && h.key === undefined) {
      ctx.addIssue({ code: 'custom', path: ['passphraseEnv'], input: h.passphraseEnv, message: 'needs key (a passphrase unlocks a key file)' });
    }
  }, { when: (p) => typeof p.value === 'object' && p.value !== null });

/** Inventory file schema (hosts and named groups of them). */
export const inventorySchema = z
  .strictObject({
    hosts: z.array(hostSchema).min(1),
    groups: z.record(z.string().regex(NAME_RE, NAME_RULE), z.array(z.string()).min(1)).default({}),
  })
  .superRefine((inv, ctx) => {
    if (!Array.isArray(inv.hosts)) return;
    const names = new Set<string>();
    inv.hosts.forEach((h, i) => {
      if (typeof h?.name !== 'string') return;
      if (names.has(h.name)) ctx.addIssue({ code: 'custom', path: ['hosts', i, 'name'], input: h.name, message: 'must be unique' });
      names.add(h.name);
    });
    for (const [group, members] of Object.entries(inv.groups ?? {})) {
      if (!Array.isArray(members)) continue;
      if (names.has(group)) ctx.addIssue({ code: 'custom', path: ['groups', group], input: group, message: 'must not share a name with a host' });
      members.forEach((m, i) => {
        if (typeof m === 'string' && !names.has(m)) ctx.addIssue({ code: 'custom', path: ['groups', group, i], input: m, message: `must name a host in hosts (${[...names].join(', ')})` });
      });
    }
  }, { when: (p) => typeof p.value === 'object' && p.value !== null });

export type InventoryHost = z.output<typeof hostSchema> & {
  local?: false;
  /** Reached through this host's SSH connection (a compute node behind a Slurm login host); set at run time, never in a file. */
  jump?: InventoryHost;
};
export type Inventory = z.output<typeof inventorySchema> & { file: string };

/** The machine fluidcap runs on: the local Docker socket, no SSH. */
export interface LocalHost {
  name: 'local';
  local: true;
  docker: { socket: string };
  gpuProfile?: string;
  hfCache?: string;
  nvidiaSmi: string;
}
export const LOCAL_HOST: LocalHost = { name: 'local', local: true, docker: { socket: '/var/run/docker.sock' }, nvidiaSmi: 'nvidia-smi' };
export type Host = InventoryHost | LocalHost;

/** Expands `~/` the way ssh does, for key, knownHosts and hfCache paths. */
export function expandHome(path: string, home = homedir()): string {
  return path === '~' ? home : path.startsWith('~/') ? resolve(home, path.slice(2)) : path;
}

function pathOf(path: PropertyKey[], raw: unknown): string {
  // Hosts are a list: name them by their `name` when they have one, so messages read hosts[gpu1].port.
  let node: unknown = raw;
  return path
    .map((p, i) => {
      const here = node;
      node = here !== null && typeof here === 'object' ? (here as Record<PropertyKey, unknown>)[p as string] : undefined;
      if (typeof p === 'number') {
        const name = i > 0 && path[i - 1] === 'hosts' ? (node as { name?: unknown } | undefined)?.name : undefined;
        return typeof name === 'string' ? `[${name}]` : `[${p}]`;
      }
      return i === 0 ? String(p) : `.${String(p)}`;
    })
    .join('');
}

function valueAt(raw: unknown, path: PropertyKey[]): unknown {
  let node = raw;
  for (const p of path) node = node !== null && typeof node === 'object' ? (node as Record<PropertyKey, unknown>)[p as string] : undefined;
  return node;
}

const TYPE_WORDS: Record<string, string> = {
  array: 'a list',
  object: 'a mapping (key: value lines)',
  record: 'a mapping (key: value lines)',
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
};

// zod's own wording ("must be a object", "Too big: expected number to be <=65535") reads like a
// stack trace to someone editing YAML: each issue kind gets a sentence in plain words instead.
function plainMessage(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      if (issue.origin === 'array') return `must list at least ${String(issue.minimum)} item${Number(issue.minimum) === 1 ? '' : 's'}`;
      return `must be ${issue.inclusive ? 'at least' : 'more than'} ${String(issue.minimum)}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${String(issue.maximum)} characters`;
      return `must be ${issue.inclusive ? 'at most' : 'less than'} ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_union':
      return 'must be true, false or a path';
    default:
      return /^(must|has|needs)\b/.test(issue.message) ? issue.message : `is not valid (${issue.message})`;
  }
}

/** Validates a decoded inventory; every problem as `file: path message, got value (type)`. */
export function parseInventory(raw: unknown, file: string): { ok: true; inventory: Inventory } | { ok: false; problems: string[] } {
  const result = inventorySchema.safeParse(raw);
  if (result.success) {
    const dir = dirname(resolve(file));
    const hosts = result.data.hosts.map((h) => ({
      ...h,
      key: h.key === undefined ? undefined : resolve(dir, expandHome(h.key)),
      knownHosts: resolve(dir, expandHome(h.knownHosts)),
    }));
    return { ok: true, inventory: { ...result.data, hosts, file } };
  }
  const problems = result.error.issues.map((issue) => {
    const input = 'input' in issue && issue.input !== undefined ? issue.input : valueAt(raw, issue.path);
    const where = issue.path.length > 0 ? `${pathOf(issue.path, raw)} ` : '';
    if (issue.code === 'unrecognized_keys') return `${file}: ${where}has unknown field(s) ${issue.keys.join(', ')}`;
    if (issue.code === 'invalid_key') {
      const key = issue.path[issue.path.length - 1];
      const rule = issue.issues[0]?.message ?? NAME_RULE;
      return `${file}: ${pathOf(issue.path.slice(0, -1), raw)}: the name ${describeValue(key)} ${rule}`;
    }
    return `${file}: ${where || '(top level) '}${plainMessage(issue)}, got ${describeValue(input)}`;
  });
  return { ok: false, problems };
}

/** Reads and validates an inventory file; throws one UserError listing every problem. */
export async function loadInventory(file: string): Promise<Inventory> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UserError(`${file}: cannot read the inventory (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    const message = (err as Error).message;
    throw new UserError(`${file}: ${/alias/i.test(message) ? yamlExpansionProblem(err as Error) : `not valid YAML: ${message.split('\n')[0]}`}`);
  }
  const result = parseInventory(raw, file);
  if (!result.ok) {
    const n = result.problems.length;
    throw new UserError(`${file} has ${n} problem${n === 1 ? '' : 's'}:\n  ${result.problems.join('\n  ')}`);
  }
  return result.inventory;
}

/** The hosts a recipe's `target.host` names: `local`, one host, or every host of a group. */
export function resolveHosts(inventory: Inventory | undefined, nameOrGroup: string): Host[] {
  if (nameOrGroup === 'local') return [LOCAL_HOST];
  if (inventory === undefined) {
    throw new UserError(`target.host is ${describeValue(nameOrGroup)}: pass an inventory with --hosts to say how to reach it`);
  }
  const host = inventory.hosts.find((h) => h.name === nameOrGroup);
  if (host) return [host];
  const group = inventory.groups[nameOrGroup];
  if (group) return group.map((m) => inventory.hosts.find((h) => h.name === m)!);
  const known = [...inventory.hosts.map((h) => h.name), ...Object.keys(inventory.groups)];
  throw new UserError(`target.host must name a host or group in ${inventory.file} (${known.join(', ')}) or "local", got ${describeValue(nameOrGroup)}`);
}
