// An SLO named by its short name (fluidity, ttft, tbt, …: its recipe entry's key) where a text
// quotes its full source, so the console, `analyze` and the reports word a reason the same way and
// spell each SLO out once. Pure: text in, text out.

/** What naming needs of an SLO definition: its short name and the user's text. */
export interface NamedSlo {
  name: string;
  source: string;
}

/** `text` with every quoted SLO source (`SLO "<source>"` or `"<source>"`) replaced by its short name. */
export function nameSlos(text: string, defs: readonly NamedSlo[]): string {
  let out = text;
  for (const d of defs) out = out.split(`${d.name} "${d.source}"`).join(d.name).split(`SLO "${d.source}"`).join(d.name).split(`"${d.source}"`).join(d.name);
  return out;
}

const nameOf = (source: string, defs: readonly NamedSlo[]) => defs.find((d) => d.source === source)?.name ?? 'the SLO';

/**
 * An early-stop reason (capacity/earlyStop.ts) in a few words: which SLO can no longer pass and by
 * how much. Unknown wording falls back to the reason with its SLO named.
 */
export function earlyStopBrief(reason: string, defs: readonly NamedSlo[]): string {
  const parts: string[] = [];
  const certain = /SLO "(.*?)" can no longer pass: (\d+) failing (requests|token gaps) already exceed the (\d+) allowed/.exec(reason);
  const diverges = /queueing diverges: the backlog grew from (\d+) to (\d+) requests and the median TTFT from (\S+) to (\S+) s.*?SLO "(.*?)" allows/.exec(reason);
  if (certain) parts.push(`${nameOf(certain[1], defs)} cannot pass (${certain[2]} failing ${certain[3] === 'requests' ? '' : 'gaps '}> ${certain[4]} allowed)`);
  else if (diverges) parts.push(`${nameOf(diverges[5], defs)} cannot pass, the queue grows (${diverges[1]}→${diverges[2]} waiting)`);
  // A run stops a probe only once the sequential test has decided fail too (makeProbeStop), so
  // that half is said only when it is all the reason holds.
  const decided = /decided (fail|pass) after (\d+) requests/.exec(reason);
  if (parts.length === 0 && decided) parts.push(`decided ${decided[1]} at ${decided[2]} req`);
  return parts.length > 0 ? parts.join(', ') : nameSlos(reason, defs);
}
