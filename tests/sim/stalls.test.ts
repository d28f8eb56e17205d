// The papers' behaviour: with the vllm scheduler a long prompt arriving while others decode makes
// their next token wait about as long as that prefill; with sarathi the largest gap stays near one
// chunked iteration. Gaps are measured from the engine's own emit stamps; both are printed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSimServer } from '../../harness/sim/server.ts';
import { iterationCost } from '../../harness/sim/costModel.ts';
import { findModel } from '../../harness/catalog/models.ts';
import { loadGpuProfile } from '../../harness/catalog/gpus.ts';
import { streamRequest, wordsPrompt } from './streamHelper.ts';

const MODEL = 'llama-3-8b';
const GPU = 'h100-sxm-80gb';
const LONG_PROMPT = 4000;
const DECODERS = 4;
// Modelled time runs 2× slower than the GPU so a noisy shared machine's lateness stays small beside it.
const TIME_SCALE = 2;

async function largestDecodeGapS(scheduler: 'vllm' | 'sarathi'): Promise<number> {
  const sim = await startSimServer({ model: MODEL, gpu: GPU, scheduler, port: 0, timeScale: TIME_SCALE });
  try {
    const url = `${sim.url}/v1/completions`;
    const emits: bigint[][] = Array.from({ length: DECODERS }, () => []);
    let longSentAfter: () => void = () => {};
    const decodersRunning = new Promise<void>((r) => (longSentAfter = r));
    const decoders = emits.map((list, i) =>
      streamRequest(url, { model: MODEL, prompt: wordsPrompt(64, `d${i}`), max_tokens: 90, ignore_eos: true, stream: true }, (e) => {
        if (e.emitNs !== null) list.push(e.emitNs);
        if (emits.every((l) => l.length >= 20)) longSentAfter();
      }),
    );
    await decodersRunning;
    const longStart = process.hrtime.bigint();
    const long = await streamRequest(url, { model: MODEL, prompt: wordsPrompt(LONG_PROMPT, 'long'), max_tokens: 1, stream: true });
    const longFirst = long.events.find((e) => e.emitNs !== null)!.emitNs!;
    await Promise.all(decoders);
    let worst = 0n;
    for (const list of emits) {
      for (let k = 1; k < list.length; k++) {
        // gaps that overlap the long request's life
        if (list[k] >= longStart && list[k - 1] <= longFirst + 50_000_000n) {
          const gap = list[k] - list[k - 1];
          if (gap > worst) worst = gap;
        }
      }
    }
    return Number(worst) / 1e9;
  } finally {
    await sim.close();
  }
}

test('vllm stalls decodes for the whole prefill; sarathi keeps gaps near one chunked iteration', async () => {
  const model = findModel(MODEL)!;
  const gpu = loadGpuProfile(GPU);
  const prefillS = iterationCost(model, gpu, { prefills: [{ chunkTokens: LONG_PROMPT, contextTokens: 0, completes: true }], decodeKvTokens: [] }).totalS * TIME_SCALE;
  // The costliest chunked iteration: the last chunk of the long prompt with its full context, plus the decodes.
  const chunkS = iterationCost(model, gpu, {
    prefills: [{ chunkTokens: 512 - DECODERS, contextTokens: LONG_PROMPT - 512, completes: true }],
    decodeKvTokens: Array(DECODERS).fill(160),
  }).totalS * TIME_SCALE;
  const vllmGapS = await largestDecodeGapS('vllm');
  // The gap is fixed in modelled time; wall-clock noise (a stalled shared core) only lengthens it.
  // So the smallest of up to three tries is the measurement: a sarathi that stopped chunking
  // fails all three, one stall of the machine does not.
  const sarathiBoundS = Math.max(chunkS * 2, chunkS + 0.025);
  const sarathiTries: number[] = [];
  while (sarathiTries.length < 3 && !(Math.min(...sarathiTries) <= sarathiBoundS)) sarathiTries.push(await largestDecodeGapS('sarathi'));
  const sarathiGapS = Math.min(...sarathiTries);
  console.log(
    `\n  long prompt ${LONG_PROMPT} tokens on ${MODEL}/${GPU}: modelled prefill ${(prefillS * 1e3).toFixed(1)} ms, ` +
      `modelled chunked iteration ${(chunkS * 1e3).toFixed(1)} ms\n` +
      `  (time scale ${TIME_SCALE}) largest decode gap: vllm ${(vllmGapS * 1e3).toFixed(1)} ms, sarathi ${sarathiTries.map((g) => (g * 1e3).toFixed(1)).join(', then ')} ms`,
  );
  assert.ok(vllmGapS >= prefillS * 0.9, `vllm gap ${vllmGapS} should cover the prefill ${prefillS}`);
  assert.ok(vllmGapS <= prefillS * 2, `vllm gap ${vllmGapS} about the prefill ${prefillS}`);
  assert.ok(sarathiGapS <= sarathiBoundS, `sarathi gap ${sarathiGapS} near one chunk ${chunkS} in ${sarathiTries.length} tries`);
  assert.ok(sarathiGapS < vllmGapS / 3, 'sarathi much smaller than vllm');
});

test.run();
