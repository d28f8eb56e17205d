// Waiting until a target's GPUs are back near idle memory (before launch: nobody else holds them;
// after stopping: the engine really freed them). Reading nvidia-smi and the clock are injected.
import { busyGpus, type GpuFacts } from './gpuFacts.ts';

export interface GpuIdleQuery {
  hostName: string;
  ids: number[];
  maxUsedMiB: number;
  timeoutS: number;
  /** Words for the message: "before launch", "after stopping". */
  when: string;
  pollS?: number;
}

/** Polls until none of `ids` uses more than maxUsedMiB; a host without nvidia-smi counts as idle. */
export async function waitGpusIdle(
  readFacts: () => Promise<GpuFacts>,
  q: GpuIdleQuery,
  clock: { nowS(): number; sleep(s: number): Promise<void> },
): Promise<{ ok: boolean; message: string }> {
  const t0 = clock.nowS();
  for (;;) {
    const facts = await readFacts();
    if (!facts.available) return { ok: true, message: facts.reason };
    const busy = busyGpus(facts.gpus, q.ids, q.maxUsedMiB);
    if (busy.length === 0) return { ok: true, message: `GPUs ${q.ids.join(',')} idle ${q.when}` };
    if (clock.nowS() - t0 > q.timeoutS) {
      const desc = busy.map((g) => `GPU ${g.index} uses ${g.memoryUsedMiB} MiB`).join(', ');
      return { ok: false, message: `GPUs on ${q.hostName} not idle ${q.when} after ${q.timeoutS} s: ${desc} (over ${q.maxUsedMiB} MiB; another process may hold them)` };
    }
    await clock.sleep(q.pollS ?? 2);
  }
}
