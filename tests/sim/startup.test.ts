// `fluidcap sim serve` start-up failures a user causes: a busy port, an address that is not this
// machine's, a trace path that cannot be written. Each is one line naming the flag and value, exit
// 2, no stack trace, and nothing left listening (in process the call rejects and the test ends).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { createServer, type Server, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { startSimServer } from '../../harness/sim/server.ts';
import { shown } from '../support/hooks.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;
const serve = (args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'sim', 'serve', ...(args.includes('--log-stats-interval') ? [] : ['--log-stats-interval', '0']), ...args], { env: childEnv, timeout: 60_000 }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
const noStack = (text: string) => assert.not.match(text, /^\s+at |internal error|Unhandled/m, `stack trace printed:\n${text}`);

let busy: Server;
let busyPort: number;
test.before(shown(async () => {
  busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  busyPort = (busy.address() as AddressInfo).port;
}));

test('a busy port: exit 2, the port named, a way out', async () => {
  const r = await serve(['--port', String(busyPort)]);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stderr, `fluidcap: port ${busyPort} on 127.0.0.1 is already in use (pick another --port, or --port 0 for a free one)\n`);
  noStack(r.stderr);
});

test('an address that is not this machine: exit 2 naming --host', async () => {
  const r = await serve(['--host', '999.1.1.1', '--port', '0']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /^fluidcap: --host "999\.1\.1\.1" is not an address of this machine \((ENOTFOUND|EAI_AGAIN|EADDRNOTAVAIL)\)/);
  noStack(r.stderr);
});

test('an unwritable --trace-iterations path: exit 2 before listening', async () => {
  const r = await serve(['--port', '0', '--trace-iterations', '/nonexistent-dir/trace.jsonl']);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stderr, 'fluidcap: --trace-iterations: cannot write "/nonexistent-dir/trace.jsonl" (ENOENT)\n');
  assert.not.match(r.stdout, /listening/);
  noStack(r.stderr);
});

test('a stats interval beyond the timer limit: exit 2 naming the flag', async () => {
  const r = await serve(['--port', '0', '--log-stats-interval', '1e10']);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stderr, "fluidcap: --log-stats-interval must be at most 2147483.647 seconds (Node's timer limit), got 10000000000\n");
});

test('in process: startSimServer rejects with a UserError and leaves nothing running', async () => {
  try {
    await startSimServer({ port: busyPort, host: '127.0.0.1', logStatsInterval: 0 } as never);
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).name, 'UserError');
    assert.match((err as Error).message, /already in use/);
  }
});

test.after(() => new Promise<void>((r) => busy.close(() => r())));
test.run();
