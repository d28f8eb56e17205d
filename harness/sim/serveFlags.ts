// The flags of `fluidcap sim serve`, in one place: the CLI registers them, and recipe validation
// parses the argv a run would start the simulated engine with, so a flag or value the engine would
// refuse is reported before a results directory exists.
import yargs, { type Argv } from 'yargs';
import { listModels } from '../catalog/models.ts';
import { listGpuProfiles } from '../catalog/gpus.ts';
import { DEFAULT_EMPTY_TEXT_FRACTION, DEFAULT_MERGE_FRACTION, resolveSimConfig, type SimServerOptions } from './config.ts';

export const FLAG_KEYS = [
  'model', 'gpu', 'scheduler', 'host', 'port', 'timeScale', 'tensorParallel', 'pipelineParallel', 'gpuMemoryUtilization', 'maxNumSeqs',
  'maxNumBatchedTokens', 'chunkSize', 'maxModelLen', 'ropeScalingFactor', 'servedModelName', 'numGpuBlocksOverride', 'startDelay',
  'traceIterations', 'faultCrashAfter', 'faultStallFraction', 'faultStallFor', 'faultHttp429Fraction',
  'faultHttp500Fraction', 'faultMalformedSseFraction', 'faultExitAtStart', 'faultSeed', 'logStatsInterval',
  'strictOpenai',
  'stream', 'emptyTextFraction', 'mergeFraction',
  'metricsNaming', 'logRequests',
] as const;

/** The `sim serve` flags, for the CLI and for checking an argv before anything starts. */
export function serveOptions(y: Argv) {
  return y
    .option('model', { type: 'string', default: 'tiny', describe: `catalog name or HF id: ${listModels().join(', ')}` })
    .option('gpu', { type: 'string', default: 'h100-sxm-80gb', describe: `GPU profile: ${listGpuProfiles().join(', ')}` })
    .option('scheduler', { type: 'string', default: 'vllm', describe: "vllm (prefill-prioritizing), sarathi (chunked prefill) or llamacpp (llama-server's fixed slots)" })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'address to listen on' })
    .option('port', { type: 'number', default: 8000, describe: 'port; 0 picks a free one (printed on start)' })
    .option('time-scale', { type: 'number', default: 1, describe: 'multiplies every modelled duration (< 1 runs faster than a GPU)' })
    .option('tensor-parallel', { type: 'number', default: 1, alias: 'tensor-parallel-size', describe: 'GPUs sharing the model' })
    .option('pipeline-parallel', { type: 'number', default: 1, alias: 'pipeline-parallel-size', describe: "pipeline stages (micro-batches in flight, each with its own scheduler, 1/stages of the KV cache and of --max-num-seqs)" })
    .option('gpu-memory-utilization', { type: 'number', default: 0.9, describe: 'fraction of GPU memory for weights + KV cache' })
    .option('max-num-seqs', { type: 'number', default: 256, describe: 'most requests in one batch' })
    .option('max-num-batched-tokens', { type: 'number', describe: 'vllm: prompt tokens per prefill iteration (default max(4096, max-model-len))' })
    .option('chunk-size', { type: 'number', default: 512, describe: 'sarathi: tokens per iteration (decodes + prefill chunks)' })
    .option('max-model-len', { type: 'number', describe: "prompt + output limit (default: the model's context)" })
    .option('rope-scaling-factor', { type: 'number', describe: "rope scaling: the model takes its catalog context × this (default: its context as trained)" })
    .option('served-model-name', { type: 'string', describe: 'name clients use in "model" (default: --model as given)' })
    .option('num-gpu-blocks-override', { type: 'number', describe: 'fix the number of 16-token KV blocks (forces preemption in tests)' })
    .option('start-delay', { type: 'string', default: '0', describe: 'not ready for this long (duration, e.g. 30s): port bound, requests held until ready, as vLLM does while loading' })
    .option('trace-iterations', { type: 'string', describe: 'write one JSON line per iteration (planned vs actual times, batch) to this file' })
    .option('log-stats-interval', { type: 'number', default: 10, describe: 'seconds between throughput log lines; 0 = none' })
    .option('strict-openai', {
      type: 'boolean',
      default: false,
      describe: "validate requests as Sarathi-Serve's OpenAI server does: fields it does not declare and token-id prompts answered 400; no /health or /tokenize (drive it as engine: endpoint)",
    })
    .option('metrics-naming', { type: 'string', default: 'newest', describe: "/metrics under vLLM newest's names, or 0.8.5's with its V1 or V0 engine: newest, 0.8.5-v1, 0.8.5-v0" })
    .option('log-requests', { type: 'boolean', default: false, describe: "log each request's whole prompt and token ids, as vLLM 0.8.5 does unless --disable-log-requests" })
    .option('fault-crash-after', { type: 'number', describe: 'crash (drop every connection, exit 1) after this many finished requests' })
    .option('fault-stall-fraction', { type: 'number', default: 0, describe: 'fraction of streams that stall after their first token' })
    .option('fault-stall-for', { type: 'string', default: '1s', describe: 'how long a stalled stream holds its tokens (real time, not scaled)' })
    .option('fault-http-429-fraction', { type: 'number', default: 0, describe: 'fraction of requests answered 429' })
    .option('fault-http-500-fraction', { type: 'number', default: 0, describe: 'fraction of requests answered 500' })
    .option('fault-malformed-sse-fraction', { type: 'number', default: 0, describe: 'fraction of streams with one malformed SSE event mid-stream' })
    .option('fault-exit-at-start', { type: 'boolean', default: false, describe: 'fail at start-up with exit 1, as an engine out of memory does' })
    .option('fault-seed', { type: 'number', default: 0, describe: 'seed of the fault draws' })
    .option('stream', { type: 'string', default: 'plain', describe: "plain (one chunk with text per token) or vllm (as vLLM's OpenAI server streams: tokens without text, merged tokens)" })
    .option('empty-text-fraction', { type: 'number', describe: `--stream vllm: fraction of tokens streamed with empty text, drawn per prompt and token (default ${DEFAULT_EMPTY_TEXT_FRACTION})` })
    .option('merge-fraction', { type: 'number', describe: `--stream vllm: fraction of tokens sent with the next token in one chunk (default ${DEFAULT_MERGE_FRACTION}); a client that has not read the last chunk gets them merged too` })
    .epilog(
      'Tokens are words: a text prompt counts its whitespace-separated words, a chat prompt the words of every ' +
        "message's text (no template tokens). Every streamed chunk carries fluidcap_emit_ns (CLOCK_MONOTONIC ns).",
    );
}

/** The options yargs parsed, as startSimServer takes them. */
export function optionsFromArgs(argv: Record<string, unknown>): SimServerOptions {
  const options: SimServerOptions = {};
  for (const key of FLAG_KEYS) if (argv[key] !== undefined) (options as Record<string, unknown>)[key] = argv[key];
  return options;
}

// yargs names an unknown flag twice (`bogus-flag, bogusFlag`): say it once, as it was written.
function unknownFlagsMessage(message: string): string {
  const m = /^Unknown arguments?: (.*)$/.exec(message);
  if (!m) return message;
  const names = m[1].split(', ');
  const camel = (n: string) => n.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const written = names.filter((n) => n.includes('-') || !names.some((o) => o !== n && camel(o) === n));
  return `unknown flag${written.length > 1 ? 's' : ''} ${written.map((n) => (n.length === 1 ? `-${n}` : `--${n}`)).join(', ')}`;
}

/** Why `sim serve <argv>` would refuse to start (unknown flag, bad value), or [] when it would start. */
export function simServeArgvProblems(argv: readonly string[]): string[] {
  let parsed: Record<string, unknown>;
  try {
    parsed = serveOptions(yargs([...argv]))
      .strict()
      .exitProcess(false)
      .help(false)
      .version(false)
      .fail((msg, err) => {
        throw err ?? new Error(msg);
      })
      .parseSync() as Record<string, unknown>;
  } catch (err) {
    return [unknownFlagsMessage((err as Error).message)];
  }
  if (parsed._ instanceof Array && parsed._.length > 0) return [`unexpected argument${parsed._.length > 1 ? 's' : ''} ${parsed._.join(' ')}`];
  try {
    resolveSimConfig(optionsFromArgs(parsed));
  } catch (err) {
    return [(err as Error).message.replace(/^sim: /, '')];
  }
  return [];
}
