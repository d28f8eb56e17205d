// GPU telemetry while probes run: one JSON line per sample (seconds since start, wall-clock time,
// the target's GPUs) until stopped. nvidia-smi, the file and the clock are injected.
import type { GpuFacts } from './gpuFacts.ts';

export interface TelemetryDeps {
  readFacts(): Promise<GpuFacts>;
  appendLine(file: string, line: string): Promise<void>;
  nowS(): number;
  isoNow(): string;
  sleep(s: number): Promise<void>;
}

/** Samples every intervalS into `file` until the returned stop (or `halted()`) ends it; stop waits for the last write. */
export function sampleGpuTelemetry(
  file: string,
  opts: { intervalS: number; gpuIds: number[]; halted(): boolean },
  deps: TelemetryDeps,
): () => Promise<void> {
  let running = true;
  const t0 = deps.nowS();
  const loop = (async () => {
    while (running && !opts.halted()) {
      // A failed read skips one sample; telemetry must never end a probe.
      const facts = await deps.readFacts().catch(() => null);
      if (facts?.available) {
        const gpus = opts.gpuIds.length > 0 ? facts.gpus.filter((g) => opts.gpuIds.includes(g.index)) : facts.gpus;
        await deps.appendLine(file, JSON.stringify({ tS: +(deps.nowS() - t0).toFixed(3), at: deps.isoNow(), gpus }) + '\n');
      }
      if (running) await deps.sleep(opts.intervalS);
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}
