// The prefill profile fits D_p against the prompt length the engine counted (usage.prompt_tokens),
// not the planned one: against the simulated engine (which counts words) with a sizing that
// wrongly claims two tokens per word, every planned length is sent as half as many words.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer } from '../../harness/sim/server.ts';
import { planProfile } from '../../harness/capacity/profilePlan.ts';
import { runProfile } from '../../harness/capacity/profiler.ts';
import { PROMPT_WORDS } from '../../harness/load/textSizing.ts';

test('D_p is fitted at the lengths the engine counted, and the log says where they differ from plan', async () => {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.05 });
  await sim.ready;
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-profile-counts-'));
  const log: string[] = [];
  try {
    const wrong = { words: PROMPT_WORDS, wordTokens: PROMPT_WORDS.map(() => 2), firstTokens: PROMPT_WORDS.map(() => 2), source: 'test: two tokens per word (wrong)' };
    const plan = planProfile({ promptLengths: [128, 256, 512], repeats: 2, warmup: 0 }, { maxContextTokens: 2048 });
    // The tiny model's prefill barely grows over these lengths, so the fit may be refused; fit.json is written either way.
    await runProfile(
      plan,
      { baseUrl: sim.url, model: 'tiny', api: 'completions', format: 'text', seed: 1, requestTimeoutS: 30, content: { textSizing: wrong, nonce: 'n', stream: 'profile-1' } },
      { runDir, ttftSlackS: 0.3, fitBounds: { minR2: 0, maxRepeatCv: 100, noiseFloorS: 1 }, log: (l) => log.push(l) },
    ).catch((err: Error) => assert.match(err.message, /prefill profile refused/));
    const fit = JSON.parse(readFileSync(join(runDir, 'profile', 'fit.json'), 'utf8')) as { lengths: { promptTokens: number }[] };
    assert.equal(fit.lengths.map((l) => l.promptTokens), [64, 128, 256]);
    const rows = readFileSync(join(runDir, 'profile', 'prefill.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { promptTokens: number; usagePromptTokens: number });
    assert.ok(rows.every((r) => r.usagePromptTokens === r.promptTokens / 2));
    assert.ok(log.some((l) => l.includes('512 prompt tokens planned, the engine counted 256')), log.join('\n'));
  } finally {
    await sim.close();
    rmSync(runDir, { recursive: true });
  }
});

test.run();
