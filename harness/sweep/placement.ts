// Where each run of a sweep goes: a host (every host of a named group takes its share) and a GPU
// set on it, with one engine port per GPU set so runs side by side never ask for the same port.
// Runs sharing a GPU take turns (the executor locks each GPU); the placement spreads runs so that
// turns are few. Pure: host names come in through `hostsOf`, nothing is contacted.

/** What placement needs to know about one run. */
export interface PlacementRequest {
  id: string;
  /** `target.host`: a host, a group, or `local`. */
  hostOrGroup: string;
  /** `target.gpus` as the recipe gives it. */
  gpus: number[];
  /** GPUs the run occupies (its tensor parallelism, or its GPU list when longer). */
  gpuCount: number;
  /** Nothing to place for an existing endpoint; a container needs a port, a local process picks its own. */
  /** `container` also stands for an engine run as a process on a host (placed the same way). */
  launch: 'container' | 'local-process' | 'endpoint';
}

export interface Placement {
  id: string;
  host: string;
  gpus: number[];
  /** Engine port on the host; null when the engine picks its own or nothing is launched. */
  port: number | null;
  /** The GPU set's name, `gpu1#0,1`: runs of one set run one after another. */
  slot: string;
}

export interface PlacementOptions {
  /** Hosts a host or group name stands for (a group: all its hosts, in inventory order). */
  hostsOf: (hostOrGroup: string) => string[];
  /** GPUs per host, cut into sets of each run's size; absent: each run keeps its recipe's GPU ids. */
  gpusPerHost?: number;
  /** Port of the first GPU set; each further set (over all hosts) the next port. */
  portBase: number;
}

export type PlacementResult = { ok: true; placements: Placement[]; slots: string[] } | { ok: false; problems: string[] };

/** The GPU sets of `gpuCount` GPUs a host offers a run. */
function gpuSets(req: PlacementRequest, gpusPerHost: number | undefined): number[][] {
  if (gpusPerHost === undefined) return [req.gpus];
  const sets: number[][] = [];
  for (let first = 0; first + req.gpuCount <= gpusPerHost; first += req.gpuCount) {
    sets.push(Array.from({ length: req.gpuCount }, (_, i) => first + i));
  }
  return sets;
}

/** Places every run; all problems (a run larger than a host, an unknown host) at once. */
export function placeRuns(requests: PlacementRequest[], opts: PlacementOptions): PlacementResult {
  const problems: string[] = [];
  const slotLoad = new Map<string, number>();
  const hostLoad = new Map<string, number>();
  const slotOrder: string[] = [];
  const placements: Placement[] = [];
  for (const req of requests) {
    if (req.launch === 'endpoint') {
      const slot = `endpoint#${req.id}`;
      slotOrder.push(slot);
      placements.push({ id: req.id, host: req.hostOrGroup, gpus: req.gpus, port: null, slot });
      continue;
    }
    let hosts: string[];
    try {
      hosts = opts.hostsOf(req.hostOrGroup);
    } catch (err) {
      problems.push(`${req.id}: ${(err as Error).message}`);
      continue;
    }
    const sets = gpuSets(req, opts.gpusPerHost);
    if (sets.length === 0) {
      problems.push(`${req.id}: needs ${req.gpuCount} GPUs, more than gpusPerHost (${opts.gpusPerHost})`);
      continue;
    }
    let best: { host: string; gpus: number[]; slot: string; load: number; hostLoad: number } | null = null;
    for (const host of hosts) {
      for (const gpus of sets) {
        const slot = `${host}#${gpus.join(',')}`;
        // A set's load counts every run already on any GPU it shares (sets of other sizes overlap).
        const load = [...slotLoad.entries()].filter(([s]) => overlaps(s, host, gpus)).reduce((t, [, n]) => t + n, 0);
        const hl = hostLoad.get(host) ?? 0;
        if (best === null || load < best.load || (load === best.load && hl < best.hostLoad)) best = { host, gpus, slot, load, hostLoad: hl };
      }
    }
    const chosen = best!;
    if (!slotLoad.has(chosen.slot)) slotOrder.push(chosen.slot);
    slotLoad.set(chosen.slot, (slotLoad.get(chosen.slot) ?? 0) + 1);
    hostLoad.set(chosen.host, (hostLoad.get(chosen.host) ?? 0) + 1);
    placements.push({ id: req.id, host: chosen.host, gpus: chosen.gpus, port: null, slot: chosen.slot });
  }
  if (problems.length > 0) return { ok: false, problems: mergeSame(problems) };
  // Ports are numbered over all sets, not per host: two inventory hosts may share one network.
  const containerSlots = slotOrder.filter((s) => !s.startsWith('endpoint#'));
  for (const [i, p] of placements.entries()) {
    if (requests[i].launch === 'container') p.port = opts.portBase + containerSlots.indexOf(p.slot);
  }
  return { ok: true, placements, slots: slotOrder };
}

function overlaps(slot: string, host: string, gpus: number[]): boolean {
  const [h, ids] = [slot.slice(0, slot.lastIndexOf('#')), slot.slice(slot.lastIndexOf('#') + 1)];
  return h === host && ids.split(',').some((id) => gpus.includes(Number(id)));
}

/** The locks a run holds while it runs: each of its GPUs on its host. */
export function gpuLocks(p: Placement): string[] {
  if (p.slot.startsWith('endpoint#')) return [];
  return p.gpus.map((g) => `${p.host}#${g}`).sort();
}

/** `c01: X` and `c02: X` become `c01, c02: X`: an unknown group is one problem, not one per run. */
function mergeSame(problems: string[]): string[] {
  const byMessage = new Map<string, string[]>();
  for (const p of problems) {
    const at = p.indexOf(': ');
    const [id, message] = [p.slice(0, at), p.slice(at + 2)];
    byMessage.set(message, [...(byMessage.get(message) ?? []), id]);
  }
  return [...byMessage.entries()].map(([message, ids]) => `${ids.join(', ')}: ${message}`);
}
