// Fault injection in process: 429/500 fractions (seeded, repeatable), malformed SSE, stalled
// streams, crash after N requests.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSimServer } from '../../harness/sim/server.ts';
import { streamRequest } from './streamHelper.ts';

async function statuses(seed: number): Promise<number[]> {
  const sim = await startSimServer({ port: 0, timeScale: 0.01, faultHttp429Fraction: 0.3, faultHttp500Fraction: 0.2, faultSeed: seed });
  try {
    const out: number[] = [];
    for (let i = 0; i < 100; i++) {
      const r = await fetch(`${sim.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'a b c', max_tokens: 1 }) });
      const body = (await r.json()) as { error?: { code: number; type: string } };
      if (r.status !== 200) assert.is(body.error?.code, r.status, 'error body in vLLM shape');
      out.push(r.status);
    }
    return out;
  } finally {
    await sim.close();
  }
}

test('429 and 500 answered for about the asked fractions, the same way for the same seed', async () => {
  const a = await statuses(7);
  const b = await statuses(7);
  assert.equal(a, b, 'same seed, same faults');
  const n429 = a.filter((s) => s === 429).length;
  const n500 = a.filter((s) => s === 500).length;
  assert.ok(n429 >= 15 && n429 <= 45, `429s: ${n429}`);
  assert.ok(n500 >= 8 && n500 <= 35, `500s: ${n500}`);
  assert.is(n429 + n500 + a.filter((s) => s === 200).length, 100);
});

test('malformed SSE: one event of the stream is not valid JSON, the rest are', async () => {
  const sim = await startSimServer({ port: 0, timeScale: 0.05, faultMalformedSseFraction: 1 });
  try {
    const r = await streamRequest(`${sim.url}/v1/completions`, { prompt: 'a b c', max_tokens: 10, ignore_eos: true, stream: true });
    const broken = r.events.filter((e) => e.data !== '[DONE]' && e.json === null);
    assert.is(broken.length, 1);
    assert.is(r.events.filter((e) => e.json !== null).length, 9);
  } finally {
    await sim.close();
  }
});

test('stalled stream: tokens after the first are held for the stall time, none lost', async () => {
  const sim = await startSimServer({ port: 0, timeScale: 0.05, faultStallFraction: 1, faultStallFor: '300ms' });
  try {
    const r = await streamRequest(`${sim.url}/v1/completions`, { prompt: 'a b c', max_tokens: 10, ignore_eos: true, stream: true });
    const emits = r.events.filter((e) => e.emitNs !== null).map((e) => e.emitNs!);
    assert.is(emits.length, 10);
    const gapS = Number(emits[1] - emits[0]) / 1e9;
    assert.ok(gapS >= 0.29, `gap after first token ${gapS}`);
  } finally {
    await sim.close();
  }
});

test('crash after N requests: open streams are cut, the port stops answering', async () => {
  const sim = await startSimServer({ port: 0, timeScale: 0.05, faultCrashAfter: 2 });
  const url = `${sim.url}/v1/completions`;
  const long = streamRequest(url, { prompt: 'x', max_tokens: 3000, ignore_eos: true, stream: true }).then(
    (r) => r.events.some((e) => e.data === '[DONE]'),
    () => false,
  );
  for (let i = 0; i < 2; i++) {
    const r = await fetch(url, { method: 'POST', body: JSON.stringify({ prompt: 'a', max_tokens: 2 }) });
    assert.is(r.status, 200);
  }
  assert.is(await sim.done, 'crashed');
  assert.is(await long, false, 'the open stream never finished');
  const refused = await fetch(`${sim.url}/health`).then(
    () => false,
    () => true,
  );
  assert.ok(refused, 'nothing listens after the crash');
  await sim.close();
});

test.run();
