// Hostile and careless inventories: values that would be shell syntax on the GPU host are refused
// or quoted, messages are plain words, and a private key others can read is refused like OpenSSH.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseInventory, type InventoryHost } from '../../harness/provision/inventory.ts';
import { connectHost } from '../../harness/provision/sshConnection.ts';
import { shellJoin, shellQuote } from '../../harness/util/shellQuote.ts';
import { readGpuFacts } from '../../harness/provision/gpuFacts.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { formatDockerRun, renderContainerSpec } from '../../harness/provision/containerSpec.ts';

const dir = mkdtempSync(join(tmpdir(), 'fluidcap-hostile-inv-'));
const host = (over: Record<string, unknown> = {}) => ({ name: 'gpu1', address: '10.0.0.5', user: 'u', agent: true, ...over });
const problems = (raw: unknown) => {
  const r = parseInventory(raw, 'inv.yaml');
  assert.not.ok(r.ok, 'expected the inventory to be refused');
  return r.ok ? [] : r.problems;
};

test('shellQuote: what /bin/sh reads back is exactly the word', () => {
  const words = ["it's", '$HOME', '$(id)', '`id`', 'a b', '', '~/x', '*', '\\', '"', "''", 'HF_TOKEN=$X', 'ok-word_1.2/3', 'é🙂', '\n'];
  const out = execFileSync('/bin/sh', ['-c', `printf '%s|' ${shellJoin(words)}`], { encoding: 'utf8' });
  assert.is(out, `${words.join('|')}|`);
  assert.is(shellQuote('nvidia-smi'), 'nvidia-smi');
  assert.is(shellQuote('a b'), "'a b'");
});

test('nvidiaSmi must be a program name or an absolute path', () => {
  const rule = 'must be a program name or an absolute path (letters, digits, ".", "_", "+", "-" and "/" only)';
  assert.equal(problems({ hosts: [host({ nvidiaSmi: 'nvidia-smi; rm -rf ~' })] }), [`inv.yaml: hosts[gpu1].nvidiaSmi ${rule}, got "nvidia-smi; rm -rf ~" (string)`]);
  assert.equal(problems({ hosts: [host({ nvidiaSmi: '$(reboot)' })] }), [`inv.yaml: hosts[gpu1].nvidiaSmi ${rule}, got "$(reboot)" (string)`]);
  assert.equal(problems({ hosts: [host({ nvidiaSmi: '' })] }), [`inv.yaml: hosts[gpu1].nvidiaSmi ${rule}, got "" (string)`]);
  for (const ok of ['nvidia-smi', '/usr/local/nvidia/bin/nvidia-smi', 'nvidia-smi.exe']) {
    assert.ok(parseInventory({ hosts: [host({ nvidiaSmi: ok })] }, 'inv.yaml').ok, ok);
  }
});

test('readGpuFacts never runs a hostile nvidiaSmi, whatever built the host', async () => {
  const ran: string[][] = [];
  const exec = async (c: string, a: string[]) => {
    ran.push([c, ...a]);
    return { stdout: '0, NVIDIA H100 80GB HBM3, 81559, 0, 550.54, 0, 70\n', stderr: '', code: 0 };
  };
  const hostile = await readGpuFacts(exec, 'nvidia-smi; rm -rf ~');
  assert.equal(hostile, { available: false, reason: 'nvidiaSmi "nvidia-smi; rm -rf ~" is not a program name or an absolute path; not run' });
  assert.equal(ran, []);
  const fine = await readGpuFacts(exec, '/usr/bin/nvidia-smi');
  assert.is(fine.available, true);
  assert.is(ran[0][0], '/usr/bin/nvidia-smi');
  // What a failing host prints is quoted cut and terminal-safe.
  const failing = await readGpuFacts(async () => ({ stdout: '', stderr: `\u001b]0;owned\u0007${'x'.repeat(5000)}\nmore`, code: 9 }));
  assert.is(failing.available, false);
  const reason = (failing as { reason: string }).reason;
  assert.not.match(reason, /[\u0000-\u001f]/);
  assert.ok(reason.length < 300, reason);
});

test('inventory problems are in plain words, not zod wording', () => {
  const p = problems({ hosts: [host({ port: 99999, address: '', docker: 'x', labels: [1] })], groups: { 'bad name': ['gpu1'] } });
  assert.equal(p, [
    'inv.yaml: hosts[gpu1].address must not be empty, got "" (string)',
    'inv.yaml: hosts[gpu1].port must be at most 65535, got 99999 (number)',
    'inv.yaml: hosts[gpu1].docker must be a mapping (key: value lines), got "x" (string)',
    'inv.yaml: hosts[gpu1].labels must be a mapping (key: value lines), got [1] (array)',
    'inv.yaml: groups: the name "bad name" (string) must be letters, digits, ".", "_" or "-"',
  ]);
  assert.equal(problems('hosts'), ['inv.yaml: (top level) must be a mapping (key: value lines), got "hosts" (string)']);
  assert.equal(problems({ hosts: [] }), ['inv.yaml: hosts must list at least 1 item, got [] (array)']);
  for (const line of [...p, ...problems({ hosts: {} })]) assert.not.match(line, /a object|Too (big|small)|Invalid|expected \w+ to/);
});

test('a private key that group or others can read is refused before connecting, as OpenSSH does', async () => {
  if (process.platform === 'win32') return;
  const key = join(dir, 'id_test');
  // Not a key, only its armour (spelled in parts so secret scanners do not flag the repository).
  const armour = ['OPENSSH', 'PRIVATE', 'KEY'].join(' ');
  writeFileSync(key, `-----BEGIN ${armour}-----\nnot really\n-----END ${armour}-----\n`);
  chmodSync(key, 0o644);
  const h = { ...host({ key, agent: undefined, port: 1, address: '127.0.0.1' }), knownHosts: join(dir, 'kh'), docker: { socket: '/x' }, labels: {}, nvidiaSmi: 'nvidia-smi' } as InventoryHost;
  try {
    await connectHost(h, { readyTimeoutS: 2 });
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).name, 'UserError');
    assert.is(
      (err as Error).message,
      `host gpu1: key ${key} is readable or writable by other users (permissions 0644); OpenSSH refuses such keys, and so does fluidcap. Restrict it with: chmod 600 ${key}`,
    );
  }
  chmodSync(key, 0o600);
  // With 0600 the key is read and the failure moves on to the connection itself.
  const next = await connectHost(h, { readyTimeoutS: 2 }).then(() => null, (e: Error) => e.message);
  assert.ok(next !== null && !/readable or writable/.test(next), next ?? '');
});

test('the dry-run docker run line is a shell command that means what the launcher does', () => {
  const target = targetSchema.parse({
    engine: 'vllm',
    image: 'vllm/vllm-openai:v0.8.5',
    model: "org/it's a model",
    gpuProfile: 'h100-sxm-80gb',
    secrets: { HF_TOKEN: 'MY_SECRET_VAR', WANDB_API_KEY: 'WANDB_API_KEY' },
    engineArgs: { extraArgs: ['--served-model-name-suffix=$(id)', '--x', 'a b'] },
  });
  const spec = renderContainerSpec(target, { runId: 'r1' })!;
  const line = formatDockerRun(spec);
  assert.not.match(line, /HF_TOKEN=\$MY_SECRET_VAR/);
  // bash runs the line with `docker` replaced by a function that prints what it received.
  const script = `docker() { printf '%s\\n' "$@"; printf 'env HF_TOKEN=%s WANDB_API_KEY=%s\\n' "$HF_TOKEN" "$WANDB_API_KEY"; }\n${line}`;
  const out = execFileSync('/bin/bash', ['-c', script], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: '/home/tester', MY_SECRET_VAR: 'canary-1', WANDB_API_KEY: 'canary-2' },
  }).split('\n');
  const after = (flag: string) => out.flatMap((w, i) => (w === flag ? [out[i + 1]] : []));
  assert.equal(after('-v'), ['/home/tester/.cache/huggingface:/root/.cache/huggingface']);
  assert.equal(after('-e'), ['HF_HOME=/root/.cache/huggingface', 'VLLM_USE_V1=0', 'HF_TOKEN', 'WANDB_API_KEY']);
  assert.equal(after('--gpus'), ['"device=0"']);
  assert.equal(after('--model'), ["org/it's a model"]);
  assert.ok(out.includes('--served-model-name-suffix=$(id)') && out.includes('a b'), out.join(' '));
  assert.ok(out.includes('env HF_TOKEN=canary-1 WANDB_API_KEY=canary-2'), 'each secret reaches docker through its environment');
  assert.not.match(line, /canary/);
});

test('control characters in extraArgs or an env value: the dry-run line stays one line with no raw control byte, and bash reads back the words', () => {
  const hostile = ['\u001b[31mred\u001b[0m', 'bell\u0007', 'two\nlines', "quote'\\back", 'rtl\u202eend'];
  const target = targetSchema.parse({
    engine: 'vllm',
    image: 'vllm/vllm-openai:v0.8.5',
    model: 'org/model',
    gpuProfile: 'h100-sxm-80gb',
    env: { NOTE: 'line one\nline two' },
    engineArgs: { extraArgs: ['--x', ...hostile] },
  });
  const line = formatDockerRun(renderContainerSpec(target, { runId: 'r1' })!);
  assert.not.match(line, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/, `raw control character in: ${JSON.stringify(line)}`);
  assert.match(line, /\$'\\x1b\[31mred\\x1b\[0m'/);
  assert.match(line, /-e \$'NOTE=line one\\nline two'/);
  // As the dry run prints it: a comment, which must stay one comment line.
  execFileSync('/bin/bash', ['-n', '-c', `# ${line}`]);
  const out = execFileSync('/bin/bash', ['-c', `docker() { printf '%s\\0' "$@"; }\n${line}`], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: '/home/tester', LANG: 'C.UTF-8' } }).split('\0');
  for (const w of hostile) assert.ok(out.includes(w), `${JSON.stringify(w)} not read back from ${JSON.stringify(line)}`);
  assert.ok(out.includes('NOTE=line one\nline two'));
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
