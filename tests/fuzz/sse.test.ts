// The SSE differential fuzzer (scripts/fuzz-sse.ts) at a CI-sized count: our parser and
// eventsource-parser 3 dispatch the same events for every generated stream and split. The full
// run (10^6 inputs) is `tsx scripts/fuzz-sse.ts`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fuzzSse } from '../../scripts/fuzz-sse.ts';

test('20,000 generated streams, random splits: no event differs from eventsource-parser', () => {
  const r = fuzzSse({ inputs: 20_000, seed: Number(process.env.FLUIDCAP_FUZZ_SEED ?? 20261122) });
  assert.is(r.inputs, 20_000);
  assert.ok(r.events > 10_000, `only ${r.events} events compared`);
  assert.is(r.mismatchCount, 0, JSON.stringify(r.mismatches.slice(0, 2), null, 1));
});

test.run();
