// What "the same configuration" means across nights, as one string: the results index's key and
// the gate's. The SLO is part of it, spelt from its resolved figures. Pure.

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

const SLO_ORDER = ['fluidity', 'ttft', 'tbt', 'tpot', 'e2e', 'schedulingDelay'];

/**
 * The SLO as one canonical string, from its resolved figures (seconds), never from the text the
 * user wrote: `50ms` and `0.05s` are the same SLO. Null when the run records none.
 */
export function sloKey(rawSlo: unknown): string | null {
  const slo = obj(rawSlo);
  const parts: string[] = [];
  for (const name of SLO_ORDER) {
    if (slo[name] === undefined) continue;
    const e = obj(slo[name]);
    const f = (k: string) => (num(e[k]) === null ? '?' : `${num(e[k])}`);
    parts.push(
      name === 'fluidity'
        ? // A token on its deadline counted missed is another SLO; the default (met) keeps the key runs always had.
          `fluidity p${f('percentile')} >= ${f('minFluidity')} (tbt ${f('tbtDeadlineS')}s, ttft slack ${f('ttftSlackS')}s${e.tieRule === 'missed' ? ', ties missed' : ''})`
        : `${name} p${f('percentile')} <= ${f('maxS')}s`,
    );
  }
  return parts.length ? parts.join('; ') : null;
}

/** The configuration key of a run from its recipe name, engine, model, GPUs and SLO. */
export function configKey(parts: { recipeName: string | null; engine: string | null; model: string | null; gpuProfile: string | null; gpuCount: number | null; slo: string | null }): string {
  const gpu = parts.gpuProfile ? `${parts.gpuProfile}×${parts.gpuCount ?? '?'}` : 'no-gpu-profile';
  return [parts.recipeName ?? 'unnamed', parts.engine ?? '?', parts.model ?? '?', gpu, `slo ${parts.slo ?? '?'}`].join(' | ');
}


/** A configuration key without its SLO: what two runs that differ only by their SLO share. */
export const configWithoutSlo = (config: string): string => config.replace(/ \| slo .*$/, '');
