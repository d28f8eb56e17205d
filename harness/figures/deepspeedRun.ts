// `fluidcap figure deepspeed-throughput`: starts the engine of the paper recipe (the simulated
// engine by default, the inventory's host with --hosts), sends batches of B requests at once with a
// fixed prompt and output length for each batch size, and draws deepspeedThroughput.ts's figure.
// Each batch runs twice and the second is reported, as run_model.py does (the first warms the
// engine). Every request's timeline is archived under batches/ before anything is derived from it.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { appendFileIn, makeDirIn, writeFileIn } from '../util/confinedFs.ts';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse, stringify } from 'yaml';
import { loadRunRecipe, resolveRun } from '../capacity/resolveRun.ts';
import { startEngineSession, type EngineSession } from '../capacity/engineSession.ts';
import { setUpPrompts } from '../capacity/promptSetup.ts';
import { sendOne } from '../load/sendOne.ts';
import { findModel, modelSizes } from '../catalog/models.ts';
import { UserError, describeValue } from '../util/errors.ts';
import { writeJsonFile } from '../runDir/jsonFiles.ts';
import type { Inventory } from '../provision/inventory.ts';
import { figurePaper, parsePaperNumbers } from './paperNumbers.ts';
import { batchRow, deepspeedThroughput, type BatchRequest, type BatchRow } from './deepspeedThroughput.ts';
import { drawFigure, type FigureArtifacts } from './output.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PAPER_NUMBERS = join(import.meta.dirname, 'paperNumbers.json');

/** ZeRO-Inference's benchmark setting (README: prompt 512, generation 32) and batch sizes 1…64. */
export const DEEPSPEED_DEFAULTS = { batchSizes: [1, 2, 4, 8, 16, 32, 64], promptTokens: 512, genTokens: 32 } as const;
const BASE_RECIPE = 'llama3-8b-h100-vllm';

export interface DeepspeedOptions {
  outDir: string;
  inventory?: Inventory;
  /** Simulated engine: real seconds per modelled second (ignored on real hosts). */
  timeScale: number;
  batchSizes?: readonly number[];
  promptTokens?: number;
  genTokens?: number;
  signal?: AbortSignal;
  log: (line: string) => void;
  now?: () => Date;
}

export interface DeepspeedOutcome {
  dir: string;
  status: 'completed' | 'interrupted';
  artifacts: FigureArtifacts[];
  runSeconds: Record<string, number>;
}

/** Runs every batch size on one engine, then writes the figure's files. */
export async function runDeepspeedThroughput(o: DeepspeedOptions): Promise<DeepspeedOutcome> {
  const batchSizes = [...(o.batchSizes ?? DEEPSPEED_DEFAULTS.batchSizes)].sort((a, b) => a - b);
  const promptTokens = o.promptTokens ?? DEEPSPEED_DEFAULTS.promptTokens;
  const genTokens = o.genTokens ?? DEEPSPEED_DEFAULTS.genTokens;
  if (batchSizes.length === 0 || !batchSizes.every((b) => Number.isInteger(b) && b >= 1)) throw new UserError(`batch sizes must be whole numbers >= 1, got ${describeValue(o.batchSizes)}`);
  if (!(Number.isInteger(promptTokens) && promptTokens >= 1)) throw new UserError(`prompt length must be a whole number >= 1, got ${describeValue(promptTokens)}`);
  if (!(Number.isInteger(genTokens) && genTokens >= 2)) throw new UserError(`generation length must be a whole number >= 2 (decode needs a second token), got ${describeValue(genTokens)}`);
  const onHosts = Boolean(o.inventory);
  const scale = onHosts ? 1 : o.timeScale;
  if (!(scale > 0 && scale <= 1)) throw new UserError(`--time-scale must be > 0 and <= 1, got ${describeValue(o.timeScale)}`);
  const now = o.now ?? (() => new Date());
  const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const dir = join(o.outDir, `deepspeed-throughput-${stamp}`);
  const engineDir = join(dir, 'engine');
  makeDirIn(dir, join(dir, 'batches'));
  makeDirIn(dir, engineDir);

  const baseFile = join(ROOT, 'recipes', 'papers', `${BASE_RECIPE}${onHosts ? '' : '-sim'}.yaml`);
  const base = parse(readFileSync(baseFile, 'utf8')) as Record<string, unknown>;
  const target = { ...(base.target as Record<string, unknown>) };
  if (!onHosts) target.sim = { ...(target.sim as Record<string, unknown>), timeScale: scale };
  const recipeFile = join(dir, 'recipe.yaml');
  writeFileIn(dir, recipeFile, `# Written by fluidcap figure deepspeed-throughput from ${baseFile}\n${stringify({ ...base, name: 'deepspeed-throughput', target })}`);
  const recipe = await loadRunRecipe(recipeFile, { env: process.env, hosts: 'unchecked' });
  // Random per figure so no prompt repeats one an earlier figure sent (prompt caches).
  const plan = resolveRun(recipe, 'deepspeed-throughput', randomBytes(8).toString('hex'));
  const spec = findModel(plan.servedModel);
  if (!spec) throw new UserError(`${recipeFile}: target.model ${describeValue(plan.servedModel)} is not in the model catalog, so its sizes cannot be estimated`);
  const sizes = modelSizes(spec);
  const model = { name: spec.name, weightBytes: sizes.weightBytes, kvBytesPerToken: sizes.kvBytesPerToken, hiddenSize: spec.hiddenSize };

  const t0 = performance.now();
  const rows: BatchRow[] = [];
  let session: EngineSession | null = null;
  let interrupted = false;
  try {
    session = await startEngineSession(plan, { runDir: engineDir, inventory: o.inventory, log: o.log, signal: o.signal });
    const prompts = await setUpPrompts(plan, { name: recipe.target.engine, baseUrl: session.baseUrl, apiKey: session.apiKey }, [promptTokens]);
    const send = { ...prompts.content, nonce: plan.prompts.nonce ?? undefined, extraBody: prompts.extraBody, baseUrl: session.baseUrl, model: prompts.model, api: plan.workload.api, format: prompts.format, apiKey: session.apiKey, seed: plan.seed, requestTimeoutS: 600, stallTimeoutS: 120 };
    let index = 0;
    for (const b of batchSizes) {
      let measured: BatchRequest[] = [];
      for (const attempt of ['warm-up', 'measured'] as const) {
        if (o.signal?.aborted) {
          interrupted = true;
          break;
        }
        const startNs = process.hrtime.bigint();
        const results = await Promise.all(
          Array.from({ length: b }, async (_, i) => {
            const offsetS = Number(process.hrtime.bigint() - startNs) / 1e9;
            const r = await sendOne({ promptTokens, maxTokens: genTokens, index: index + i, id: `bs${b}-${attempt}-${i}` }, { ...send, stream: `bs${b}-${attempt}` });
            return { offsetS, r };
          }),
        );
        index += b;
        // Raw first: every request's timeline with its send offset, whatever is derived later.
        const file = join(dir, 'batches', `bs${b}-${attempt}.jsonl`);
        for (const { offsetS, r } of results) appendFileIn(dir, file, `${JSON.stringify({ sentOffsetS: offsetS, ...r.record })}\n`);
        measured = results.map(({ offsetS, r }) => ({ sentOffsetS: offsetS, ttftS: r.ttftS, e2eS: r.e2eS, ok: r.record.status === 'ok', outputTokens: r.record.outputTokens }));
      }
      if (interrupted) break;
      const row = batchRow(measured, model, promptTokens, genTokens, scale);
      rows.push(row);
      o.log(`batch ${b}: prefill ${row.prefillLatencyS?.toFixed(3)} s, decode ${row.decodeLatencyS?.toFixed(3)} s${row.shortOrFailed ? `, ${row.shortOrFailed} requests failed or short` : ''}`);
    }
  } finally {
    if (session) {
      const stop = await session.stop();
      for (const p of stop.problems) o.log(p);
    }
  }
  const runSeconds = { engine: (performance.now() - t0) / 1000 };
  writeJsonFile(dir, join(dir, 'figure.json'), { name: 'deepspeed-throughput', timeScale: scale, onHosts, batchSizes, promptTokens, genTokens, runSeconds, rows });
  if (interrupted) return { dir, status: 'interrupted', artifacts: [], runSeconds };

  const paper = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);
  const setup = [
    `Engine: ${onHosts ? 'the host of the inventory' : 'fluidcap\u2019s simulated engine (a local process)'} from recipes/papers/${BASE_RECIPE}${onHosts ? '' : '-sim'}.yaml (recipe.yaml here): Llama-3-8B on one H100, vLLM-style scheduler.`,
    `Workload as ZeRO-Inference\u2019s benchmark: batches of ${batchSizes.join(', ')} requests sent at once, ${promptTokens}-token prompts, ${genTokens} generated tokens each (min_tokens and ignore_eos), each batch run twice and the second reported.`,
    `Reductions: none in the batch list unless given; ${scale !== 1 ? `every modelled duration × ${scale} on the simulated engine` : 'time scale 1'}. Run time here: ${runSeconds.engine.toFixed(0)} s (engine start to release).`,
    'Not a replay of ZeRO-Inference itself: there one generate() call holds the batch on a GPU with weights offloaded; here a serving engine batches streamed requests continuously.',
  ];
  const artifacts = await drawFigure(deepspeedThroughput({ model, rows, timeScale: scale, paper: figurePaper(paper, 'deepspeed-throughput', { trace: `fixed ${promptTokens}/${genTokens}`, onHosts }, {
    formulas: 'prefill B·P ÷ prefill latency; decode B·(G − 1) ÷ decode latency; total B·G ÷ (prefill + decode)',
    promptTokens,
    genTokens,
    warmupLoops: 2,
  }), setup }));
  for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
  return { dir, status: 'completed', artifacts: [artifacts], runSeconds };
}
