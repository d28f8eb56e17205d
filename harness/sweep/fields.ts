// Which recipe field a sweep's matrix key sets: a short name for the fields operators sweep most,
// or a dotted path into a recipe section. Shared by the sweep file's validation and the expansion.

/** Short names for the fields operators sweep most; anything else is written as a dotted path. */
export const FIELD_ALIASES: Readonly<Record<string, string>> = {
  model: 'target.model',
  engine: 'target.engine',
  image: 'target.image',
  gpuProfile: 'target.gpuProfile',
  host: 'target.host',
  gpus: 'target.gpus',
  tensorParallel: 'target.tensorParallel',
  pipelineParallel: 'target.pipelineParallel',
  maxNumSeqs: 'target.engineArgs.maxNumSeqs',
  maxNumBatchedTokens: 'target.engineArgs.maxNumBatchedTokens',
  maxModelLen: 'target.engineArgs.maxModelLen',
  chunkSize: 'target.engineArgs.chunkSize',
  gpuMemoryUtilization: 'target.engineArgs.gpuMemoryUtilization',
  scheduler: 'target.sim.scheduler',
  timeScale: 'target.sim.timeScale',
};

const SECTIONS = ['target', 'workload', 'profile', 'search', 'slo'];
/** Fields the sweep sets itself: sweeping them would fight the placement. */
const RESERVED = ['target.port'];
const SEGMENT_RE = /^[A-Za-z][A-Za-z0-9_+-]*$/;

/** A matrix key as the recipe path it sets, or the reason it cannot be one. */
export function resolveField(key: string): { ok: true; path: string[] } | { ok: false; message: string } {
  const dotted = FIELD_ALIASES[key] ?? key;
  const path = dotted.split('.');
  if (!SECTIONS.includes(path[0]) || path.length < 2 || !path.every((s) => SEGMENT_RE.test(s))) {
    return { ok: false, message: `must name a recipe field: one of ${Object.keys(FIELD_ALIASES).join(', ')} or a dotted path under ${SECTIONS.join(', ')} (e.g. target.engineArgs.maxNumSeqs)` };
  }
  if (RESERVED.includes(dotted)) return { ok: false, message: 'is set by the sweep (each GPU set of a host gets its own port: use ports.base)' };
  return { ok: true, path };
}

