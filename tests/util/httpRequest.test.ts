// An engine on a port WHATWG fetch refuses (its "bad ports": 10080, 6000, 6665-6669, ...) is
// still reached: readiness, the liveness check after a probe and the model list all go through
// node:http. The engine is our simulated one, listening on the first such port that is free.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import { httpRequest } from '../../harness/util/httpRequest.ts';
import { realLaunchDeps } from '../../harness/provision/launchDeps.ts';
import { waitReady } from '../../harness/provision/readiness.ts';
import { engineGone } from '../../harness/capacity/probeStep.ts';
import { readServedModel } from '../../harness/load/tokenizeCalibration.ts';
import { FETCH_BAD_PORTS } from '../support/ports.ts';

async function simOnBadPort(): Promise<SimServerHandle> {
  for (const port of [...FETCH_BAD_PORTS].reverse()) {
    try {
      return await startSimServer({ model: 'tiny', port, host: '127.0.0.1', timeScale: 0.05 });
    } catch {
      // taken here: try the next
    }
  }
  throw new Error(`none of the ports ${[...FETCH_BAD_PORTS].join(', ')} is free on this machine`);
}

test('an engine on a port fetch refuses is found ready, alive and serving its model', async () => {
  const sim = await simOnBadPort();
  try {
    await sim.ready;
    const base = `http://127.0.0.1:${sim.port}`;
    // The premise: fetch itself will not reach it.
    const refused = await fetch(`${base}/health`).then(() => null, (err: Error & { cause?: Error }) => err.cause?.message ?? err.message);
    assert.is(refused, 'bad port', `fetch reached port ${sim.port}: the premise of this test no longer holds`);

    const health = await httpRequest(`${base}/health`, { timeoutS: 5 });
    assert.is(health.status, 200);
    const ready = await waitReady(base, { deadlineS: 10, pollS: 0.05 }, {
      get: realLaunchDeps.httpGet,
      nowS: realLaunchDeps.nowS,
      sleep: (s) => realLaunchDeps.sleep(s),
      gone: async () => null,
    });
    assert.ok(ready.ready, JSON.stringify(ready));
    if (ready.ready) assert.ok(ready.models.length > 0);
    assert.is(await engineGone({ baseUrl: `${base}/v1`, apiKey: undefined }, () => null, { graceS: 0 }), null);
    const served = await readServedModel(base);
    assert.is(served.note, null);
    assert.ok(served.id);
  } finally {
    await sim.close();
  }
});

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

test('a POST carries its body and key; a silent server fails within the limit; a closed port names the refusal', async () => {
  let seen: { method?: string; auth?: string; type?: string; body: string } = { body: '' };
  const echo = createServer((req, res) => {
    let body = '';
    req.on('data', (b: Buffer) => (body += b.toString()));
    req.on('end', () => {
      seen = { method: req.method, auth: req.headers.authorization, type: req.headers['content-type'], body };
      res.end('{"ok":true}');
    });
  });
  const silent = createServer(() => {
    // never answers
  });
  const echoPort = await listen(echo);
  const silentPort = await listen(silent);
  try {
    const a = await httpRequest(`http://127.0.0.1:${echoPort}/x`, { method: 'POST', body: '{"a":1}', apiKey: 'k1', timeoutS: 5 });
    assert.equal(a, { status: 200, text: '{"ok":true}' });
    assert.equal(seen, { method: 'POST', auth: 'Bearer k1', type: 'application/json', body: '{"a":1}' });

    const t0 = performance.now();
    const late = await httpRequest(`http://127.0.0.1:${silentPort}/`, { timeoutS: 0.3 }).then(() => 'answered', (err: Error) => err.message);
    assert.match(late, /within 0\.3 s/);
    assert.ok(performance.now() - t0 < 5000, 'the limit bounds the wait');
  } finally {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
    await new Promise((r) => echo.close(r));
  }
  // The port is closed now: the error names the refusal, not a bare "fetch failed".
  const refused = await httpRequest(`http://127.0.0.1:${echoPort}/`, { timeoutS: 2 }).then(() => 'answered', (err: Error) => err.message);
  assert.match(refused, /ECONNREFUSED/);
});

test.run();
