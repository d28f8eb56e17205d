// Whether a run may take another run's prefill fit (D_p) instead of profiling the engine again.
// A confirming probe of the gate is a run of its own, pinned to one rate, of the configuration a
// night measured minutes before. Profiling again costs a minute of isolated prefills and, on a busy
// host, can be refused, so that no confirming probe runs at all; and a fit measured again on a
// loaded host moves every TTFT deadline, so the confirming probe would be judged against other
// deadlines than the night's probes it is pooled with. The night's fit is the right one, but only
// for the same engine under the same recipe: the check below compares everything but the search
// (which pinning changes) and where the recipe file lies, the engine's identity as launched (kind,
// host, image and its content id, what it said it runs, its GPUs), the prompts as prepared (what
// the profile's prompts were made of) and the tool's version (what a fit means). Pure: parsed
// manifests in, the first difference out.

/** What a run's manifest says that its prefill fit depends on (as read: any field may be missing). */
export interface FitSource {
  toolVersion?: string;
  recipe?: object;
  host?: Record<string, unknown> | null;
  prompts?: { format?: unknown; model?: unknown; tokenIdRange?: unknown; idOverheadTokens?: unknown; extraBody?: unknown; cache?: unknown } | null;
}

/** null when `target` may reuse `source`'s fit; else the first difference, in words. */
export function fitReuseMismatch(source: FitSource, target: FitSource): string | null {
  if (source.toolVersion === undefined || source.toolVersion !== target.toolVersion) return `the tool version differs (${source.toolVersion ?? 'unknown'} vs ${target.toolVersion ?? 'unknown'})`;
  if (!source.recipe || !target.recipe) return 'the resolved recipe of one run is missing';
  const { search: _s, source: _f, ...recipeA } = source.recipe as Record<string, unknown>;
  const { search: _t, source: _g, ...recipeB } = target.recipe as Record<string, unknown>;
  for (const key of new Set([...Object.keys(recipeA), ...Object.keys(recipeB)])) {
    if (canonical(recipeA[key]) !== canonical(recipeB[key])) return `the recipe's ${key} section differs`;
  }
  if (!source.host || !target.host) return 'the engine facts of one run are missing';
  const a = engineIdentity(source.host);
  const b = engineIdentity(target.host);
  for (const key of Object.keys(a) as (keyof typeof a)[]) {
    if (canonical(a[key]) !== canonical(b[key])) return `the engine's ${key} differs (${canonical(a[key])} vs ${canonical(b[key])})`;
  }
  const pa = promptIdentity(source.prompts);
  const pb = promptIdentity(target.prompts);
  if (canonical(pa) !== canonical(pb)) return 'the prompts were prepared differently (format, model, token range or overhead)';
  return null;
}

// What identifies the launched engine; what varies per launch (base URL, pid, container name and
// id, start times, readiness time) is left out.
function engineIdentity(h: Record<string, unknown>) {
  const gpu = h.gpu as { gpus?: { name?: unknown; uuid?: unknown }[] } | null | undefined;
  const image = h.engineImage as { family?: unknown; version?: unknown } | null | undefined;
  return {
    engine: h.engine ?? null,
    launch: h.launch ?? null,
    host: h.host ?? null,
    image: h.image ?? null,
    imageId: h.imageId ?? null,
    imageDigest: h.imageDigest ?? null,
    runtime: h.engineRuns ?? null,
    version: image ? [image.family ?? null, image.version ?? null] : null,
    gpus: Array.isArray(gpu?.gpus) ? gpu.gpus.map((g) => g.uuid ?? g.name ?? null) : null,
  };
}

// The prompts' nonce and checks differ per run by design; what they were made of may not.
function promptIdentity(p: FitSource['prompts']) {
  if (!p) return null;
  return { format: p.format, model: p.model, tokenIdRange: p.tokenIdRange ?? null, idOverheadTokens: p.idOverheadTokens ?? null, extraBody: p.extraBody ?? null, cache: p.cache ?? null };
}

/** JSON with object keys sorted, so two equal values compare equal whatever their key order. */
function canonical(v: unknown): string {
  return JSON.stringify(v ?? null, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, (x as Record<string, unknown>)[k]])) : x));
}
