// The inventory: schema, every problem with its path (hosts named by name), groups, host resolution.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, homedir } from 'node:os';
import { join } from 'node:path';
import { parseInventory, loadInventory, resolveHosts } from '../../harness/provision/inventory.ts';

const good = {
  hosts: [
    { name: 'gpu1', address: '10.0.0.5', user: 'ubuntu', key: '~/.ssh/id_ed25519', gpuProfile: 'h100-sxm-80gb', labels: { rack: 'a' } },
    { name: 'gpu2', address: 'gpu2.lan', port: 2222, user: 'ops', agent: true },
  ],
  groups: { h100: ['gpu1', 'gpu2'] },
};

test('a good inventory: defaults filled, ~ and relative paths resolved', () => {
  const r = parseInventory(good, '/etc/fluidcap/inv.yaml');
  assert.ok(r.ok);
  if (!r.ok) return;
  const [g1, g2] = r.inventory.hosts;
  assert.is(g1.port, 22);
  assert.is(g1.key, join(homedir(), '.ssh/id_ed25519'));
  assert.is(g1.knownHosts, join(homedir(), '.ssh/known_hosts'));
  assert.equal(g1.docker, { socket: '/var/run/docker.sock' });
  assert.is(g1.nvidiaSmi, 'nvidia-smi');
  assert.is(g2.agent, true);
  assert.is(g2.key, undefined);
});

test('every problem at once, each with file, path and value with its type', () => {
  const r = parseInventory(
    {
      hosts: [
        { name: 'gpu1', address: '10.0.0.5', user: 'u', port: '22' },
        { name: 'gpu1', address: 'x', user: 'u', key: 'k', passphraseEnv: 'not valid', color: 'red' },
      ],
      groups: { g: ['gpu9'] },
    },
    'inv.yaml',
  );
  assert.not.ok(r.ok);
  if (r.ok) return;
  assert.equal(r.problems, [
    'inv.yaml: hosts[gpu1].port must be a number, got "22" (string)',
    'inv.yaml: hosts[gpu1].key must be set (a private key file), or set agent: true, got nothing (undefined)',
    'inv.yaml: hosts[gpu1].passphraseEnv must be an environment variable name, got "not valid" (string)',
    'inv.yaml: hosts[gpu1] has unknown field(s) color',
    'inv.yaml: hosts[gpu1].name must be unique, got "gpu1" (string)',
    'inv.yaml: groups.g[0] must name a host in hosts (gpu1), got "gpu9" (string)',
  ]);
  const r2 = parseInventory({ hosts: [{ name: 'a', address: 'x', user: 'u' }, { name: 'a', address: 'y', user: 'u', key: 'k' }], groups: { g: ['zz'] } }, 'inv.yaml');
  assert.not.ok(r2.ok);
  if (r2.ok) return;
  assert.equal(r2.problems, [
    'inv.yaml: hosts[a].key must be set (a private key file), or set agent: true, got nothing (undefined)',
    'inv.yaml: hosts[a].name must be unique, got "a" (string)',
    'inv.yaml: groups.g[0] must name a host in hosts (a), got "zz" (string)',
  ]);
});

test('loadInventory reads YAML and throws one message listing every problem', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-inv-'));
  const file = join(dir, 'inv.yaml');
  writeFileSync(file, 'hosts:\n  - name: local\n    address: x\n    user: u\n    key: k\n');
  try {
    await loadInventory(file);
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).message, `${file} has 1 problem:\n  ${file}: hosts[local].name must not be "local" (reserved for this machine), got "local" (string)`);
  }
  writeFileSync(file, 'hosts:\n  - name: gpu1\n    address: x\n    user: u\n    key: keys/id\n');
  const inv = await loadInventory(file);
  assert.is(inv.hosts[0].key, join(dir, 'keys/id'), 'key relative to the inventory file');
  await loadInventory(join(dir, 'missing.yaml')).then(() => assert.unreachable(), (e: Error) => assert.match(e.message, /missing\.yaml: cannot read the inventory \(ENOENT\)/));
});

test('resolveHosts: local, a host, a group, and a clear error naming the choices', () => {
  const r = parseInventory(good, 'inv.yaml');
  if (!r.ok) return assert.unreachable();
  assert.equal(resolveHosts(undefined, 'local').map((h) => h.name), ['local']);
  assert.equal(resolveHosts(r.inventory, 'gpu2').map((h) => h.name), ['gpu2']);
  assert.equal(resolveHosts(r.inventory, 'h100').map((h) => h.name), ['gpu1', 'gpu2']);
  assert.throws(() => resolveHosts(r.inventory, 'gpu7'), /target\.host must name a host or group in inv\.yaml \(gpu1, gpu2, h100\) or "local", got "gpu7" \(string\)/);
  assert.throws(() => resolveHosts(undefined, 'gpu1'), /pass an inventory with --hosts/);
});

test.run();
