// The simulated engine's options (camelCase mirrors of the `fluidcap sim serve` flags), validated
// all at once into a resolved config. Every problem names the flag and the value with its type.
import { z } from 'zod';
import { loadGpuProfile, type GpuProfile } from '../catalog/gpus.ts';
import { findModel, listModels, modelSizes, type ModelSpec } from '../catalog/models.ts';
import { describeValue, UserError } from '../util/errors.ts';
import { parseDurationS } from '../util/duration.ts';
import { blocksFor, kvBlocksForMemory } from './kvCache.ts';
import type { SchedulerPolicy } from './scheduler.ts';
import { METRICS_NAMINGS, type MetricsNaming } from './vllmMetrics.ts';

// Options of startSimServer and of the CLI (after yargs turns flags into camelCase).
export interface SimServerOptions {
  model?: string;
  gpu?: string;
  scheduler?: SchedulerPolicy;
  host?: string;
  port?: number;
  timeScale?: number;
  tensorParallel?: number;
  /** Pipeline stages (pipeline.ts); the deployment's GPUs are tensorParallel × this. */
  pipelineParallel?: number;
  gpuMemoryUtilization?: number;
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
  chunkSize?: number;
  maxModelLen?: number;
  /** Rope scaling's factor: the model takes its catalog context × this (vLLM's rope_scaling). */
  ropeScalingFactor?: number;
  servedModelName?: string;
  /** Fixes the number of KV blocks (as vLLM's --num-gpu-blocks-override); for preemption tests. */
  numGpuBlocksOverride?: number;
  /** Seconds (or a duration string) before the engine is ready. */
  startDelay?: number | string;
  traceIterations?: string;
  faultCrashAfter?: number;
  faultStallFraction?: number;
  faultStallFor?: number | string;
  faultHttp429Fraction?: number;
  faultHttp500Fraction?: number;
  faultMalformedSseFraction?: number;
  faultExitAtStart?: boolean;
  faultSeed?: number;
  /** Where gpu-profiles/*.yaml live (default: the repository's). */
  gpuProfilesDir?: string;
  /** Log sink for the engine's stdout lines (default: silent in-process). */
  log?: (line: string) => void;
  /** Seconds between vLLM-style throughput log lines; 0 = none. */
  logStatsInterval?: number;
  /** Validate requests as Sarathi-Serve's OpenAI server does (strictOpenai.ts); no /health, no /tokenize. */
  strictOpenai?: boolean;
  /** How tokens are streamed: plain (one chunk with text per token) or as vLLM's OpenAI server does. */
  stream?: StreamStyle;
  /** --stream vllm: fraction of tokens streamed without text (held-back UTF-8, special tokens). */
  emptyTextFraction?: number;
  /** --stream vllm: fraction of tokens held back and sent with the next one (one chunk, two tokens). */
  mergeFraction?: number;
  /** Which vLLM's /metrics names to export: newest (default), 0.8.5-v1 or 0.8.5-v0. */
  metricsNaming?: MetricsNaming;
  /** Log every request's whole prompt and token ids, as vLLM 0.8.5 does by default. */
  logRequests?: boolean;
}

export type StreamStyle = 'plain' | 'vllm';

/** How tokens become chunks (see README "Streaming"). */
export interface StreamConfig {
  style: StreamStyle;
  emptyTextFraction: number;
  mergeFraction: number;
}

// Fault-injection settings after validation.
export interface FaultConfig {
  crashAfter: number | null;
  stallFraction: number;
  stallForS: number;
  http429Fraction: number;
  http500Fraction: number;
  malformedSseFraction: number;
  exitAtStart: boolean;
  seed: number;
}

// Everything the server and engine need, checked and defaulted.
export interface SimConfig {
  model: ModelSpec;
  servedModelName: string;
  gpu: GpuProfile;
  scheduler: SchedulerPolicy;
  host: string;
  port: number;
  timeScale: number;
  tensorParallel: number;
  pipelineParallel: number;
  gpuMemoryUtilization: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  chunkSize: number;
  maxModelLen: number;
  totalKvBlocks: number;
  startDelayS: number;
  traceIterations: string | null;
  logStatsIntervalS: number;
  strictOpenai: boolean;
  metricsNaming: MetricsNaming;
  logRequests: boolean;
  faults: FaultConfig;
  stream: StreamConfig;
}

// How often vLLM streams a token without text is a property of the model's vocabulary and output
// (random weights make it common); these defaults only make the case present in every stream.
export const DEFAULT_EMPTY_TEXT_FRACTION = 0.1;
export const DEFAULT_MERGE_FRACTION = 0.02;

const DURATION_HINT = 'must be a duration such as 25ms, 2s or 10m';
// The sim's options are written by fluidcap (a recipe's rendered argv) or a developer at its own
// command line, always read as seconds when bare, as its --help says.
const duration = z.preprocess((v) => (v === undefined ? v : parseDurationS(v, { bareSeconds: true }) ?? v), z.number(DURATION_HINT).min(0, 'must be >= 0'));
const int = (min: number) => z.number('must be a number').int('must be an integer').min(min, `must be >= ${min}`);
const fraction = z.number('must be a number').min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1');

const optionsSchema = z.object({
  model: z.string('must be a model name').default('tiny'),
  gpu: z.string('must be a GPU profile name').default('h100-sxm-80gb'),
  scheduler: z.enum(['vllm', 'sarathi', 'llamacpp'], 'must be vllm, sarathi or llamacpp').default('vllm'),
  host: z.string('must be a host name or address').min(1, 'must not be empty').default('127.0.0.1'),
  port: int(0).max(65535, 'must be <= 65535').default(8000),
  timeScale: z.number('must be a number').gt(0, 'must be > 0').refine(Number.isFinite, 'must be finite').default(1),
  tensorParallel: int(1).default(1),
  pipelineParallel: int(1).default(1),
  gpuMemoryUtilization: z.number('must be a number').gt(0, 'must be > 0 and <= 1').max(1, 'must be > 0 and <= 1').default(0.9),
  maxNumSeqs: int(1).default(256),
  maxNumBatchedTokens: int(1).optional(),
  chunkSize: int(1).default(512),
  maxModelLen: int(1).optional(),
  ropeScalingFactor: z.number('must be a number').gt(1, 'must be > 1').max(32, 'must be <= 32').optional(),
  servedModelName: z.string('must be a name').min(1, 'must not be empty').optional(),
  numGpuBlocksOverride: int(1).optional(),
  startDelay: duration.default(0),
  traceIterations: z.string('must be a file path').optional(),
  faultCrashAfter: int(1).optional(),
  faultStallFraction: fraction.default(0),
  faultStallFor: duration.default(1),
  faultHttp429Fraction: fraction.default(0),
  faultHttp500Fraction: fraction.default(0),
  faultMalformedSseFraction: fraction.default(0),
  faultExitAtStart: z.boolean('must be true or false').default(false),
  faultSeed: int(0).default(0),
  gpuProfilesDir: z.string().optional(),
  logStatsInterval: z.number('must be a number').min(0, 'must be >= 0').default(0),
  strictOpenai: z.boolean('must be true or false').default(false),
  stream: z.enum(['plain', 'vllm'], 'must be plain or vllm').default('plain'),
  emptyTextFraction: fraction.optional(),
  mergeFraction: fraction.optional(),
  metricsNaming: z.enum(METRICS_NAMINGS as [MetricsNaming, ...MetricsNaming[]], `must be one of ${METRICS_NAMINGS.join(', ')}`).default('newest'),
  logRequests: z.boolean('must be true or false').default(false),
});

function flag(key: PropertyKey): string {
  return '--' + String(key).replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

// Validates options and derives KV capacity; throws one UserError listing every problem.
export function resolveSimConfig(options: SimServerOptions): SimConfig {
  const { log: _log, ...plain } = options;
  const problems: string[] = [];
  let parsed = optionsSchema.safeParse(plain);
  if (!parsed.success) {
    const failed = new Set<PropertyKey>();
    for (const i of parsed.error.issues) {
      const key = i.path[0] ?? '';
      failed.add(key);
      problems.push(`${flag(key)} ${i.message}, got ${describeValue((plain as Record<PropertyKey, unknown>)[key])}`);
    }
    // Check the rest with defaults in place of the bad values, so every problem is reported at once.
    const rest = Object.fromEntries(Object.entries(plain).filter(([k]) => !failed.has(k)));
    parsed = optionsSchema.safeParse(rest);
    if (!parsed.success) throw new UserError(`sim: ${problems.join('; ')}`);
  }
  const o = parsed.data;
  const model = findModel(o.model);
  if (!model) problems.push(`--model ${describeValue(o.model)} is not in the catalog; known: ${listModels().join(', ')} (or their Hugging Face ids)`);
  let gpu: GpuProfile | null = null;
  try {
    gpu = loadGpuProfile(o.gpu, o.gpuProfilesDir);
  } catch (err) {
    problems.push(`--gpu: ${(err as Error).message}`);
  }
  if (!model || !gpu) throw new UserError(`sim: ${problems.join('; ')}`);

  const tp = o.tensorParallel;
  if (model.heads % tp !== 0 || model.kvHeads % tp !== 0) {
    problems.push(`--tensor-parallel must divide the model's ${model.heads} attention heads and ${model.kvHeads} KV heads, got ${describeValue(tp)}`);
  }
  const pp = o.pipelineParallel;
  if (model.layers % pp !== 0) problems.push(`--pipeline-parallel must divide the model's ${model.layers} layers (balanced stages), got ${describeValue(pp)}`);
  // Every GPU of the deployment holds 1/(TP·PP) of the weights and of each token's KV entries.
  const gpus = tp * pp;
  // As vLLM: rope scaling stretches the context by its factor, and the longest context defaults to it.
  const context = Math.floor(model.maxContextTokens * (o.ropeScalingFactor ?? 1));
  const maxModelLen = o.maxModelLen ?? context;
  if (maxModelLen > context) {
    const scaled = o.ropeScalingFactor === undefined ? '' : ` × --rope-scaling-factor ${o.ropeScalingFactor}`;
    problems.push(`--max-model-len must be <= ${model.name}'s context of ${model.maxContextTokens} tokens${scaled}${scaled ? ` = ${context}` : ''}, got ${describeValue(maxModelLen)}`);
  }
  // llama.cpp's n_batch defaults to 2048 (common/common.h); vLLM's budget must hold one whole prompt.
  const maxNumBatchedTokens = o.maxNumBatchedTokens ?? (o.scheduler === 'llamacpp' ? 2048 : Math.max(4096, maxModelLen));
  if (o.scheduler === 'vllm' && maxNumBatchedTokens < maxModelLen) {
    problems.push(`--max-num-batched-tokens must be >= --max-model-len (${maxModelLen}) with the vllm scheduler (whole prompts are prefilled in one iteration), got ${describeValue(maxNumBatchedTokens)}`);
  }
  const sizes = modelSizes(model);
  const weightsGiB = sizes.weightBytes / 2 ** 30 / gpus;
  const usableGiB = gpu.memoryGiB * o.gpuMemoryUtilization;
  const memoryBlocks = kvBlocksForMemory({
    memoryGiB: gpu.memoryGiB,
    gpuMemoryUtilization: o.gpuMemoryUtilization,
    weightBytes: sizes.weightBytes,
    kvBytesPerToken: sizes.kvBytesPerToken,
    tensorParallel: gpus,
  });
  const totalKvBlocks = o.numGpuBlocksOverride ?? memoryBlocks;
  if (weightsGiB >= usableGiB) {
    problems.push(
      `--model ${model.name} does not fit: ${weightsGiB.toFixed(1)} GiB of bf16 weights per GPU at --tensor-parallel ${tp}${pp > 1 ? ` × --pipeline-parallel ${pp}` : ''}, ` +
        `but ${gpu.name} offers ${gpu.memoryGiB} GiB × --gpu-memory-utilization ${o.gpuMemoryUtilization} = ${usableGiB.toFixed(1)} GiB`,
    );
  } else if (totalKvBlocks - Math.floor(totalKvBlocks * 0.01) < blocksFor(maxModelLen)) {
    problems.push(
      `KV cache too small: ${totalKvBlocks} blocks of 16 tokens (${totalKvBlocks * 16} tokens) cannot hold one sequence of --max-model-len ${maxModelLen}; ` +
        `raise --gpu-memory-utilization or --tensor-parallel, or lower --max-model-len`,
    );
  }
  if (o.stream !== 'vllm') {
    for (const key of ['emptyTextFraction', 'mergeFraction'] as const) {
      if (o[key] !== undefined) problems.push(`${flag(key)} applies only with --stream vllm, got ${describeValue(o[key])} with --stream ${o.stream}`);
    }
  }
  if (problems.length) throw new UserError(`sim: ${problems.join('; ')}`);

  return {
    model,
    servedModelName: o.servedModelName ?? o.model,
    gpu,
    scheduler: o.scheduler,
    host: o.host,
    port: o.port,
    timeScale: o.timeScale,
    tensorParallel: tp,
    pipelineParallel: pp,
    gpuMemoryUtilization: o.gpuMemoryUtilization,
    maxNumSeqs: o.maxNumSeqs,
    maxNumBatchedTokens,
    chunkSize: o.chunkSize,
    maxModelLen,
    totalKvBlocks,
    startDelayS: o.startDelay,
    traceIterations: o.traceIterations ?? null,
    logStatsIntervalS: o.logStatsInterval,
    strictOpenai: o.strictOpenai,
    metricsNaming: o.metricsNaming,
    logRequests: o.logRequests,
    faults: {
      crashAfter: o.faultCrashAfter ?? null,
      stallFraction: o.faultStallFraction,
      stallForS: o.faultStallFor,
      http429Fraction: o.faultHttp429Fraction,
      http500Fraction: o.faultHttp500Fraction,
      malformedSseFraction: o.faultMalformedSseFraction,
      exitAtStart: o.faultExitAtStart,
      seed: o.faultSeed,
    },
    stream: {
      style: o.stream,
      emptyTextFraction: o.stream === 'vllm' ? (o.emptyTextFraction ?? DEFAULT_EMPTY_TEXT_FRACTION) : 0,
      mergeFraction: o.stream === 'vllm' ? (o.mergeFraction ?? DEFAULT_MERGE_FRACTION) : 0,
    },
  };
}
