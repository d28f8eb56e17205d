// Builds a small run directory from synthetic JSON files, shaped like runCapacity's output: two
// passing probes and one failing one, a prefill fit, server metrics and GPU samples. Text fields
// carry `<`, `|` and a <script> tag so escaping is tested on every path the report takes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SyntheticRunOptions {
  runId?: string;
  capacityQps?: number;
  fluidTokensPerS?: number | null;
  usdPerMillionOutputTokens?: number | null;
  gitSha?: string;
  /** Leave out everything but capacity.json (a run written by an older version). */
  minimal?: boolean;
  /** Record an estimate with its 95% interval in capacity.json (2.6–3.9 QPS around 3.4). */
  interval?: boolean;
}

const SLO = {
  fluidity: { tbtDeadlineS: 0.025, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity: { tbtDeadline: 25ms, minFluidity: 0.9 }' },
  ttft: { percentile: 90, maxS: 2, source: 'ttft: "p90 <= 2s"' },
};

const dist = (p50: number, p99: number) => ({ count: 90, mean: p50, min: p50 / 2, p50, p90: p99 * 0.9, p99, max: p99 * 1.2 });

// Statistical decisions for probes 1 and 2 only: probe 3 stands for a run written before they existed.
const STATISTICS: Record<number, object> = {
  1: { decision: 'pass', confidence: 0.973, leaning: 'pass', evidence: 'SLO "fluidity p99 >= 0.9": pass (97.3% confidence): 0 misses in 90 requests', arrivalQps: 2.0412, burstQps: 2.1377 },
  2: { decision: 'undecided', confidence: 0.724, leaning: 'fail', evidence: 'SLO "fluidity p99 >= 0.9": undecided (leaning fail, 72.4% confidence): 9 misses in 864 requests' },
};

function summary(index: number, qps: number, passed: boolean, o: { fluidP99: number; ttftP99: number; earlyStop: string | null; baselinePass: Record<string, boolean> }) {
  return {
    index,
    qps,
    dir: `probes/0${index}-qps-${qps}`,
    passed,
    valid: true,
    interrupted: false,
    requests: 90,
    planned: 100,
    sent: 100,
    warmupRequests: 10,
    durationS: 100 / qps,
    earlyStop: o.earlyStop,
    ...(STATISTICS[index] ? { statistics: STATISTICS[index] } : {}),
    sloValue: o.fluidP99,
    slo: { passed, method: 'nearest-rank', results: [] },
    baselines: {
      fluidity: { passed: o.baselinePass.fluidity, results: [{ name: 'fluidity', source: SLO.fluidity.source, value: o.fluidP99, passed: o.baselinePass.fluidity }] },
      'ttft+tbt': {
        passed: o.baselinePass['ttft+tbt'],
        results: [
          { name: 'ttft', source: SLO.ttft.source, value: o.ttftP99, passed: true },
          { name: 'tbt', source: 'tbt p99 <= 25ms (default baseline)', value: 0.02, passed: o.baselinePass['ttft+tbt'] },
        ],
      },
      schedulingDelay: {
        passed: false,
        results: [{ name: 'schedulingDelay', source: 'schedulingDelay p99 <= 0.3s (default baseline)', value: null, passed: false, note: 'needs a predicted prefill time (profile/fit.json)' }],
      },
    },
    metrics: {
      requests: 90,
      succeeded: 90,
      failed: 0,
      durationS: 100 / qps,
      requestThroughputQps: qps * 0.9,
      outputTokensPerS: qps * 0.9 * 64,
      goodputQps: passed ? qps * 0.9 : qps * 0.3,
      percentileMethod: 'nearest-rank',
      ttftS: dist(0.041, o.ttftP99),
      tbtS: dist(0.012, 0.0234),
      fluidity: { count: 90, mean: 0.99, min: 0.5, p50: 0.999, p90: 0.98, p99: o.fluidP99, max: 1 },
      fluidRate: { tokensPerS: 50, tbtDeadlineS: 0.02, percentile: 99, minFluidity: 0.9, resolutionS: 0.0001, search: 'bisection', evaluations: 12 },
    },
    client: {
      clientErrorS: 0.0007,
      toleranceS: 0.002,
      verdict: 'valid',
      reason: 'client error 0.700 ms within tolerance 2.000 ms',
      recvMinusEmit: { p50S: 0.0002, p99S: 0.0007, maxS: 0.0011, samples: 1800, p99OfTbtDeadline: 0.028 },
    },
    tokenDrift: { verdict: index === 2 ? 'drift' : 'ok', multiTokenChunks: index * 5, note: index === 2 ? '3 prompts of 90 drift beyond 5% <x>' : 'prompt and output token counts within 5% of the plan' },
    retried: index === 3 ? 2 : 0,
    serverMetrics: { scrapes: 10 + index, maxRunning: 7 * index, maxWaiting: index - 1, maxKvUsage: 0.1 * index, preemptions: index === 3 ? 4 : 0, cachedPromptTokens: 0 },
    seed: 42 + index,
    engineDied: null,
  };
}

/**
 * Deterministic timelines: one warm-up request, then 40 requests whose first token comes after a
 * prefill growing with the prompt, and 20 decode tokens 10 ms apart that stall more as the rate rises.
 */
function timelines(index: number, qps: number) {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i <= 40; i++) {
    const scheduledS = i / qps;
    const promptTokens = 128 + ((i * 97) % 1900);
    const first = scheduledS + 0.012 + 2.5e-5 * promptTokens + 0.02 * index;
    const chunks: [number, number][] = [[+first.toFixed(6), 1]];
    for (let k = 1; k < 20; k++) {
      const stall = (i + k) % (12 - 2 * qps) === 0 ? 0.02 * qps : 0;
      chunks.push([+(chunks[k - 1][0] + 0.01 + stall).toFixed(6), k % 7 === 0 ? 2 : 1]);
    }
    out.push({ id: `0${index}-${String(i).padStart(4, '0')}`, scheduledS, sentS: scheduledS + 0.0001, promptTokens, maxTokens: 21, outputTokens: 21, chunks, status: i === 7 && qps === 4 ? 'timeout' : 'ok', httpStatus: 200, error: null, ...(i === 0 ? { warmup: true } : {}) });
  }
  return out;
}

/** Writes the run into `dir` (created) and returns it. */
export function writeSyntheticRun(dir: string, opts: SyntheticRunOptions = {}): string {
  const runId = opts.runId ?? 'synthetic-run';
  const capacityQps = opts.capacityQps ?? 3;
  mkdirSync(dir, { recursive: true });
  const probes = [
    { index: 1, qps: 2, passed: true, fluidP99: 0.97, ttftP99: 0.2, earlyStop: null, baselinePass: { fluidity: true, 'ttft+tbt': true } },
    { index: 2, qps: 4, passed: false, fluidP99: 0.61, ttftP99: 1.5, earlyStop: `SLO "${SLO.fluidity.source}" can no longer pass: 9 failing requests already exceed the 8 allowed of 864 (nearest-rank percentile)`, baselinePass: { fluidity: false, 'ttft+tbt': false } },
    { index: 3, qps: 3, passed: true, fluidP99: 0.93, ttftP99: 0.9, earlyStop: null, baselinePass: { fluidity: true, 'ttft+tbt': false } },
  ];
  const capacity = {
    runId,
    capacityQps,
    slo: SLO,
    bracket: { passQps: 3, failQps: 4 },
    ...(opts.minimal
      ? {}
      : {
          decidedBracket: { passQps: 2, failQps: null, passConfidence: 0.973, failConfidence: null },
          ...(opts.interval ? { interval: { estimateQps: 3.4, loQps: 2.6, hiQps: 3.9, level: 0.95, method: 'synthetic interval', probesUsed: 3, loadSeconds: 108, open: 'none' } } : {}),
        }),
    probes: probes.map((p) => ({
      index: p.index,
      qps: p.qps,
      passed: p.passed,
      requests: 90,
      durationS: 100 / p.qps,
      earlyStop: p.earlyStop,
      sloValue: p.fluidP99,
      ...(opts.minimal ? {} : { valid: true, dir: `probes/0${p.index}-qps-${p.qps}` }),
    })),
    gpuSeconds: 1234.5,
    ...(opts.minimal
      ? {}
      : {
          outcome: 'max-probes',
          reason: 'stopped after 3 probes (search.maxProbes)',
          belowMin: false,
          atLeastMax: false,
          tolerance: 0.025,
          baselineCapacityQps: { fluidity: 3, 'ttft+tbt': 2, schedulingDelay: null },
          fluidTokenRateAtCapacity:
            opts.fluidTokensPerS === null
              ? { tokensPerS: null, tbtDeadlineS: null, percentile: 99, minFluidity: 0.9, note: 'no TBT deadline reaches it' }
              : { tokensPerS: opts.fluidTokensPerS ?? 47.6, tbtDeadlineS: 1 / (opts.fluidTokensPerS ?? 47.6), percentile: 99, minFluidity: 0.9, resolutionS: 0.0001, search: 'bisection' },
          warmupFraction: 0.1,
          probeTimeS: 108.3,
          costUsd: 2.1123,
          cost: {
            usdPerHour: 6.16,
            qpsPerUsdPerHour: capacityQps / 6.16,
            outputTokensPerS: capacityQps * 64,
            usdPerMillionOutputTokens: opts.usdPerMillionOutputTokens === undefined ? 8.91 : opts.usdPerMillionOutputTokens,
          },
          gpuProfile: 'h100-sxm-80gb',
          gpuCount: 1,
        }),
  };
  writeFileSync(join(dir, 'capacity.json'), JSON.stringify(capacity, null, 2));
  if (opts.minimal) return dir;
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({
      runId,
      recipeFile: '/recipes/synthetic.yaml',
      recipeSha256: 'ab'.repeat(32),
      toolVersion: '0.1.0',
      gitSha: opts.gitSha ?? '0123456789abcdef0123456789abcdef01234567',
      gitDirty: false,
      node: 'v20.20.2',
      seed: 42,
      startedAt: '2026-01-01T00:00:00.000Z',
      endedAt: '2026-01-01T00:05:00.000Z',
      status: 'completed',
      exitReason: 'stopped after 3 probes (search.maxProbes)',
      plan: { probe: { tokenArrivals: 'engine', continuousUsage: true } },
      prompts: { format: 'token-ids', cache: { mode: 'off' }, nonce: 'n0', tokenIdRange: [1000, 31000], notes: ['token-id prompts: the server adds 0 tokens to each'] },
      recipe: { name: 'synthetic', description: 'a test run <script>alert(1)</script>', target: { engine: 'vllm', model: 'meta-llama/Meta-Llama-3-8B', gpuProfile: 'h100-sxm-80gb', tensorParallel: 1 } },
      host: {
        engine: 'vllm',
        host: 'gpu-box-1',
        access: 'direct',
        image: 'vllm/vllm-openai:v0.6.3',
        imageDigest: 'vllm/vllm-openai@sha256:' + 'cd'.repeat(32),
        dockerVersion: '27.3.1',
        timeToReadyS: 41.2,
        gpu: { available: true, gpus: [{ index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalMiB: 81559, memoryUsedMiB: 3, driverVersion: '550.54.15' }] },
      },
    }),
  );
  mkdirSync(join(dir, 'profile'), { recursive: true });
  writeFileSync(
    join(dir, 'profile', 'fit.json'),
    JSON.stringify({ a: 0.012, b: 2.5e-5, c: 1.5e-9, r2: 0.9987, n: 9, ttftSlackS: 0.3, rmseS: 0.0011, maxRepeatCv: 0.04, lengths: [128, 512, 2048].map((p) => ({ promptTokens: p, count: 3, meanS: 0.012 + 2.5e-5 * p, sdS: 0.0004, cv: 0.02 })) }),
  );
  const prefill = [128, 512, 2048].flatMap((p, i) => [0, 1, 2].map((r) => ({ seq: i * 3 + r, promptTokens: p, warmup: false, repeat: r, prefillS: 0.012 + 2.5e-5 * p + 1.5e-9 * p * p + r * 1e-4, status: 'ok' })));
  writeFileSync(join(dir, 'profile', 'prefill.jsonl'), [{ seq: -1, promptTokens: 2048, warmup: true, prefillS: 9, status: 'ok' }, ...prefill].map((l) => JSON.stringify(l)).join('\n') + '\n');
  for (const p of probes) {
    const pdir = join(dir, 'probes', `0${p.index}-qps-${p.qps}`);
    mkdirSync(pdir, { recursive: true });
    writeFileSync(join(pdir, 'summary.json'), JSON.stringify(summary(p.index, p.qps, p.passed, p)));
    writeFileSync(join(pdir, 'timelines.jsonl'), timelines(p.index, p.qps).map((l) => JSON.stringify(l)).join('\n') + '\n');
    writeFileSync(
      join(pdir, 'server-metrics.jsonl'),
      Array.from({ length: 10 + p.index }, (_, k) => JSON.stringify({ tS: k * 2, running: Math.min(7 * p.index, k * p.index), waiting: k > 5 ? p.index - 1 : 0, kvUsage: Math.min(0.1 * p.index, 0.01 * k * p.index), preemptions: 0, cachedPromptTokens: null })).join('\n') + '\n',
    );
    writeFileSync(
      join(pdir, 'gpu.jsonl'),
      [0, 1].map((t) => JSON.stringify({ tS: t, gpus: [{ index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalMiB: 81559, memoryUsedMiB: 70000 + 100 * p.index + t, utilizationPct: 90 + t, powerW: 600 + p.index }] })).join('\n') + '\n',
    );
  }
  return dir;
}
