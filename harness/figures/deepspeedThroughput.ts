// deepspeed-throughput: prefill and decode latency and throughput by batch size, with model-size and
// KV-cache-size estimates, in the shape ZeRO-Inference's benchmark (DeepSpeedExamples
// inference/huggingface/zero_inference/run_model.py and utils.py) reports them. There one
// `generate` call runs a batch of B prompts of P tokens for G new tokens; prefill latency is its
// first forward pass, decode latency the rest, and
//   prefill throughput = B·P / prefill latency, decode throughput = B·(G−1) / decode latency,
//   total throughput = B·G / total latency.
// Against a serving engine the batch is B streamed requests sent at once: prefill latency is the
// time from the first send to the last first token (every prompt of the batch prefilled), total
// latency the time to the last request's end. Pure: measured times in, files out.
import type { Chart } from '../report/doc.ts';
import { toCsv } from '../report/csv.ts';
import { judgeFigure, type FigurePaper } from './paperNumbers.ts';
import { figureArtifacts, type FigureArtifacts } from './output.ts';

/** DeepSpeed's GB: 2^30 bytes (utils.py). */
export const GIB = 2 ** 30;

/** One request of a measured batch: when it was sent after the batch's first send, and what it got. */
export interface BatchRequest {
  sentOffsetS: number;
  /** Seconds from its own send to its first token; null when none arrived. */
  ttftS: number | null;
  /** Seconds from its own send to its end. */
  e2eS: number;
  ok: boolean;
  outputTokens: number;
}

/** The model's sizes that the estimates use (harness/catalog's modelSizes, or a real model's). */
export interface ModelFacts {
  name: string;
  weightBytes: number;
  kvBytesPerToken: number;
  hiddenSize: number;
}

/** One batch size's line of the benchmark, in seconds, tokens per second and GiB. */
export interface BatchRow {
  batchSize: number;
  promptTokens: number;
  genTokens: number;
  modelGiB: number;
  /** K and V of every token of the batch (B·(P+G)), from the model's KV bytes per token. */
  cacheGiB: number;
  /** Activations of the prefill (B·(P+G)·hidden·2 bytes), as utils.py's hidden_bytes. */
  hiddenGiB: number;
  prefillLatencyS: number | null;
  prefillTokensPerS: number | null;
  decodeLatencyS: number | null;
  decodeTokensPerS: number | null;
  totalLatencyS: number | null;
  totalTokensPerS: number | null;
  /** Requests that failed or stopped short of G tokens: their batch's numbers are not the benchmark's. */
  shortOrFailed: number;
}

/** The benchmark's quantities for one batch, with latencies divided by the time scale (the model's time). */
export function batchRow(batch: readonly BatchRequest[], model: ModelFacts, promptTokens: number, genTokens: number, timeScale = 1): BatchRow {
  const b = batch.length;
  const seq = promptTokens + genTokens;
  const firsts = batch.map((r) => (r.ttftS === null ? null : r.sentOffsetS + r.ttftS));
  const shortOrFailed = batch.filter((r) => !r.ok || r.outputTokens < genTokens).length;
  const prefill = firsts.some((t) => t === null) || b === 0 ? null : Math.max(...(firsts as number[])) / timeScale;
  const total = b === 0 ? null : Math.max(...batch.map((r) => r.sentOffsetS + r.e2eS)) / timeScale;
  const decode = prefill !== null && total !== null ? total - prefill : null;
  return {
    batchSize: b,
    promptTokens,
    genTokens,
    modelGiB: model.weightBytes / GIB,
    cacheGiB: (b * seq * model.kvBytesPerToken) / GIB,
    hiddenGiB: (b * seq * model.hiddenSize * 2) / GIB,
    prefillLatencyS: prefill,
    prefillTokensPerS: prefill ? (b * promptTokens) / prefill : null,
    decodeLatencyS: decode,
    decodeTokensPerS: decode !== null ? (b * (genTokens - 1)) / Math.max(decode, 1e-10) : null,
    totalLatencyS: total,
    totalTokensPerS: total ? (b * genTokens) / total : null,
    shortOrFailed,
  };
}

const f3 = (v: number | null) => (v === null ? 'n/a' : v.toFixed(3));

/** The row as run_model.py's write_benchmark_log prints it (peak GPU memory: what was measured, else n/a). */
export function benchmarkLog(r: BatchRow, peakGpuMemGiB: number | null): string {
  return (
    `model size: ${f3(r.modelGiB)} GB\tcache size: ${f3(r.cacheGiB)} GB\thidden size (p): ${f3(r.hiddenGiB)} GB\n` +
    `peak gpu mem: ${f3(peakGpuMemGiB)} GB\tprefill latency: ${f3(r.prefillLatencyS)} s\tprefill throughput: ${f3(r.prefillTokensPerS)} token/s\n` +
    `decode latency: ${f3(r.decodeLatencyS)} s\tdecode throughput: ${f3(r.decodeTokensPerS)} token/s\n` +
    `total latency: ${f3(r.totalLatencyS)} s\ttotal throughput: ${f3(r.totalTokensPerS)} token/s`
  );
}

export interface DeepspeedInput {
  model: ModelFacts;
  rows: BatchRow[];
  timeScale: number;
  /** The paper's entries for this figure, judged against ours. */
  paper: FigurePaper;
  setup: string[];
}

const COLORS = { prefill: '#0969da', decode: '#cf222e', total: '#57606a' } as const;

export function deepspeedThroughput(input: DeepspeedInput): FigureArtifacts {
  const rows = [...input.rows].sort((a, b) => a.batchSize - b.batchSize);
  const pts = (pick: (r: BatchRow) => number | null) => rows.flatMap((r) => (pick(r) === null ? [] : [[r.batchSize, pick(r)!] as [number, number]]));
  const logX = rows.length > 1 && rows[rows.length - 1].batchSize / rows[0].batchSize >= 8 ? 'log' : 'linear';
  const latency: Chart = {
    title: 'Latency of one batch by batch size',
    xLabel: 'batch size (requests sent at once)',
    yLabel: 'latency (s)',
    xScale: logX,
    series: [
      { name: 'prefill', kind: 'line', dots: true, color: COLORS.prefill, points: pts((r) => r.prefillLatencyS) },
      { name: 'decode', kind: 'line', dots: true, color: COLORS.decode, points: pts((r) => r.decodeLatencyS) },
      { name: 'total', kind: 'line', dots: true, color: COLORS.total, points: pts((r) => r.totalLatencyS) },
    ],
    hLines: [],
    vLines: [],
    description: 'Per batch size: time until every prompt of the batch is prefilled (last first token), the decode time after it, and the whole batch.',
  };
  const throughput: Chart = {
    title: 'Throughput by batch size',
    xLabel: 'batch size (requests sent at once)',
    yLabel: 'tokens per second',
    xScale: logX,
    series: [
      { name: 'prefill (prompt tokens/s)', kind: 'line', dots: true, color: COLORS.prefill, points: pts((r) => r.prefillTokensPerS) },
      { name: 'decode (generated tokens/s)', kind: 'line', dots: true, color: COLORS.decode, points: pts((r) => r.decodeTokensPerS) },
      { name: 'total (generated tokens/s)', kind: 'line', dots: true, color: COLORS.total, points: pts((r) => r.totalTokensPerS) },
    ],
    hLines: [],
    vLines: [],
    description: 'Prefill throughput B·P / prefill latency, decode throughput B·(G−1) / decode latency, total B·G / total latency (run_model.py\u2019s definitions).',
  };
  const memory: Chart = {
    title: 'Model and KV-cache size estimates by batch size',
    xLabel: 'batch size (requests sent at once)',
    yLabel: 'GiB',
    xScale: logX,
    series: [
      { name: 'model weights', kind: 'line', color: COLORS.total, points: pts((r) => r.modelGiB) },
      { name: 'KV cache (B·(P+G) tokens)', kind: 'line', dots: true, color: COLORS.decode, points: pts((r) => r.cacheGiB) },
      { name: 'prefill activations (hidden)', kind: 'line', dots: true, color: COLORS.prefill, points: pts((r) => r.hiddenGiB) },
    ],
    hLines: [],
    vLines: [],
    description: 'Estimates from the model\u2019s shape (bf16): weights, the KV cache the batch holds at its longest, and the prefill\u2019s hidden states.',
  };
  const ours: Record<string, number | null> = {};
  for (const r of rows) {
    for (const [k, v] of Object.entries({
      prefillLatencyS: r.prefillLatencyS,
      prefillTokensPerS: r.prefillTokensPerS,
      decodeLatencyS: r.decodeLatencyS,
      decodeTokensPerS: r.decodeTokensPerS,
      totalTokensPerS: r.totalTokensPerS,
      cacheGiB: r.cacheGiB,
    })) {
      ours[`bs${r.batchSize}.${k}`] = v;
    }
    ours['modelGiB'] = r.modelGiB;
  }
  const claims = judgeFigure(input.paper, ours);
  const csv = toCsv(
    ['batchSize', 'promptTokens', 'genTokens', 'modelGiB', 'cacheGiB', 'hiddenGiB', 'prefillLatencyS', 'prefillTokensPerS', 'decodeLatencyS', 'decodeTokensPerS', 'totalLatencyS', 'totalTokensPerS', 'shortOrFailed'],
    rows.map((r) => [r.batchSize, r.promptTokens, r.genTokens, r.modelGiB, r.cacheGiB, r.hiddenGiB, r.prefillLatencyS, r.prefillTokensPerS, r.decodeLatencyS, r.decodeTokensPerS, r.totalLatencyS, r.totalTokensPerS, r.shortOrFailed]),
  );
  const log = rows.map((r) => `batch size ${r.batchSize}, prompt_len = ${r.promptTokens}, gen_len = ${r.genTokens}\n${benchmarkLog(r, null)}\n`).join('\n');
  const table = [
    '| batch | prefill latency (s) | prefill tok/s | decode latency (s) | decode tok/s | total tok/s | KV cache (GiB) |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.batchSize} | ${f3(r.prefillLatencyS)} | ${f1(r.prefillTokensPerS)} | ${f3(r.decodeLatencyS)} | ${f1(r.decodeTokensPerS)} | ${f1(r.totalTokensPerS)} | ${f3(r.cacheGiB)} |`),
  ];
  const short = rows.filter((r) => r.shortOrFailed > 0);
  return figureArtifacts({
    name: 'deepspeed-throughput',
    title: 'DeepSpeed ZeRO-Inference benchmark: latency and throughput by batch size',
    charts: [
      { base: 'latency', alt: 'latency by batch size', chart: latency },
      { base: 'throughput', alt: 'throughput by batch size', chart: throughput },
      { base: 'memory', alt: 'model and KV-cache size estimates', chart: memory },
    ],
    tables: [
      { file: 'batches.csv', text: csv },
      { file: 'benchmark.log', text: log },
      { file: 'batches.md', text: table.join('\n') + '\n' },
    ],
    claims,
    notes: [
      ...input.setup,
      `Model ${input.model.name}: ${f3(input.model.weightBytes / GIB)} GiB of bf16 weights, ${input.model.kvBytesPerToken} KV bytes per token (grouped-query heads counted, where utils.py's cache_bytes assumes one KV head per attention head).`,
      input.timeScale !== 1 ? `Latencies are in the model's time: measured on an engine running at time scale ${input.timeScale}, divided by it.` : 'Latencies as measured (time scale 1).',
      'Peak GPU memory is not measured here (the benchmark reads torch\u2019s allocator); benchmark.log prints n/a for it.',
      ...(short.length > 0 ? [`Batch sizes ${short.map((r) => r.batchSize).join(', ')}: ${short.map((r) => r.shortOrFailed).join(', ')} requests failed or stopped before ${rows[0].genTokens} tokens, so those rows are not the benchmark's quantities.`] : []),
      'Every batch size\u2019s numbers: batches.md (table), batches.csv, and benchmark.log in run_model.py\u2019s printed format.',
    ],
    summary: rows.map((r) => `batch ${r.batchSize}: prefill ${f3(r.prefillLatencyS)} s (${f1(r.prefillTokensPerS)} tok/s), decode ${f3(r.decodeLatencyS)} s (${f1(r.decodeTokensPerS)} tok/s), KV ${f3(r.cacheGiB)} GiB`),
  });
}

const f1 = (v: number | null) => (v === null ? 'n/a' : v.toFixed(1));
