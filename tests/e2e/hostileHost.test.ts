// Inventory values meet a real remote shell (the e2e sshd): a hostile nvidiaSmi stays one word
// and runs nothing, and arguments with quotes, spaces and `$` reach the program unchanged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eHost } from './e2eEnv.ts';
import { connectHost, type HostConnection } from '../../harness/provision/sshConnection.ts';
import { readGpuFacts } from '../../harness/provision/gpuFacts.ts';
import { checkHosts } from '../../harness/provision/checkHosts.ts';
import { shown } from '../support/hooks.ts';

const env = e2eEnv('hostile inventory values over SSH');
if (env) {
  // The sshd runs on this machine, so a file the remote shell creates is visible here.
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-hostile-ssh-'));
  const marker = join(dir, 'pwned');
  let conn: HostConnection;

  test.before(shown(async () => {
    conn = await connectHost(e2eHost(env));
  }));

  test('a command with shell syntax is one program name, not a command line', async () => {
    const r = await conn.exec(`nvidia-smi; touch ${marker}`, []);
    assert.is(r.code, 127);
    assert.not.ok(existsSync(marker), 'the remote shell ran the second command');
  });

  test('arguments with quotes, spaces, $ and empty words arrive unchanged', async () => {
    const words = ["it's", '$HOME', 'a b', '', '`id`', '"x"', '~/y', '*'];
    const r = await conn.exec('printf', ['%s|', ...words]);
    assert.is(r.code, 0, r.stderr);
    assert.is(r.stdout, `${words.join('|')}|`);
  });

  test('readGpuFacts and hosts check with a hostile nvidiaSmi run nothing else', async () => {
    const facts = await readGpuFacts((c, a) => conn.exec(c, a), `true; touch ${marker}`);
    assert.is(facts.available, false);
    const [check] = await checkHosts(null, { extraHosts: [e2eHost(env, { nvidiaSmi: `$(touch ${marker})` })] });
    assert.is(check.gpu?.available, false);
    assert.not.ok(existsSync(marker), 'a hostile nvidiaSmi ran on the host');
  });

  test.after(async () => {
    await conn?.close();
    rmSync(dir, { recursive: true, force: true });
  });
}
test.run();
