// What the papers print, typed into paperNumbers.json, and the judge that sets each printed value
// and claim beside ours. An entry is one of four kinds: a value (a number the paper prints), a
// ratio (the quotient of two quantities, e.g. vLLM's capacity ÷ Sarathi-Serve's), an ordering (one
// quantity above, below or about equal to another) and a setup fact (what the paper ran, shown
// beside what we ran). Ratios and orderings hold or not on any engine, so they are checkable on the
// simulated one; an absolute value is only comparable where the paper's trace and hardware are.
// Pure: the JSON comes in already parsed.
import { z } from 'zod';
import { UserError } from '../util/errors.ts';
import { formatIssues } from '../recipe/problems.ts';

/** Why an entry cannot be judged here, by category. */
export const NOT_COMPARABLE_REASONS = ['hardware', 'public endpoint', 'trace', 'model', 'load', 'scope', 'not measured'] as const;

/** Default band of an approximate match: ours ÷ paper within [1 ÷ 1.25, 1.25]. */
export const DEFAULT_TOLERANCE = 0.25;

const key = z.string().regex(/^[A-Za-z0-9_.-]+$/, 'must be a dotted key of letters, digits, _ and -');
const source = z.object({
  /** Printed-numbers row, e.g. M-01, V-S2, Z-07 (M Metron, V Vidur, C SLO chapter, L vLLM metrics doc, Z ZeRO-Inference). */
  id: z.string().regex(/^[MVCLZ]-S?\d+[a-z]?$/, 'must be a row id such as M-01, V-S2 or M-11a'),
  paper: z.string().min(1),
  /** Figure, table or section where it is printed. */
  where: z.string().min(1),
  /** The page, where the document has page numbers (Metron's text has none). */
  page: z.number().int().positive().nullable(),
});

const common = {
  key,
  source,
  /** The setup it was measured under, as the paper prints it. */
  setup: z.string().min(1),
  /** What the entry measures, in words. */
  quantity: z.string().min(1),
  note: z.string().optional(),
  /** What must match for ours to be judged: the workload trace, or real hosts (an absolute value on the paper's hardware). */
  needs: z.object({ trace: z.string().min(1).optional(), hosts: z.string().min(1).optional() }).strict().optional(),
  /** Set when no run of this figure can be held against it. */
  notComparable: z.object({ reason: z.enum(NOT_COMPARABLE_REASONS), why: z.string().min(10) }).strict().optional(),
};

const band = {
  /** about: within the tolerance either way; at-least / at-most: one-sided, ours may exceed the tolerance on the other side. */
  compare: z.enum(['about', 'at-least', 'at-most']).default('about'),
  /** Relative: ours ÷ paper within [1 ÷ (1 + t), 1 + t] (one side for at-least / at-most). */
  tolerance: z.number().positive().max(10).default(DEFAULT_TOLERANCE),
  /** The paper says roughly (≈). */
  approx: z.boolean().default(false),
};

const valueEntry = z.object({ kind: z.literal('value'), ...common, value: z.union([z.number(), z.string().min(1)]), unit: z.string().min(1), ...band }).strict();
const ratioEntry = z
  .object({ kind: z.literal('ratio'), ...common, numerator: key, denominator: key, value: z.number().positive(), ...band })
  .strict()
  .refine((e) => e.numerator !== e.denominator, { path: ['denominator'], message: 'must differ from numerator (a ratio compares two quantities)' });
const orderingEntry = z
  .object({
    kind: z.literal('ordering'),
    ...common,
    left: key,
    relation: z.enum(['greater', 'less', 'about-equal']),
    right: key,
    tolerance: z.number().positive().max(10).default(DEFAULT_TOLERANCE),
  })
  .strict()
  .refine((e) => e.left !== e.right, { path: ['right'], message: 'must differ from left (an ordering compares two quantities)' });
const setupEntry = z.object({ kind: z.literal('setup'), ...common, value: z.union([z.number(), z.string().min(1)]), unit: z.string().min(1).optional() }).strict();

const entry = z.discriminatedUnion('kind', [valueEntry, ratioEntry, orderingEntry, setupEntry]);

const fileSchema = z
  .object({
    about: z.string().min(1),
    papers: z.record(z.string(), z.object({ title: z.string().min(1), authors: z.string().min(1), year: z.number().int(), source: z.string().min(1), note: z.string().optional() }).strict()),
    figures: z.record(z.string(), z.object({ paper: z.string().min(1), figure: z.string().min(1), setup: z.string().min(1), claims: z.array(entry) }).strict()),
  })
  .strict();

export type PaperNumbers = z.infer<typeof fileSchema>;
export type Claim = z.infer<typeof entry>;
export type ClaimKind = Claim['kind'];

/** Checks the data file: every entry typed by its kind, each figure's paper listed, each row id once per figure. */
export function parsePaperNumbers(raw: unknown, file: string): PaperNumbers {
  const r = fileSchema.safeParse(raw);
  if (!r.success) throw new UserError(formatIssues(r.error.issues, raw, file).join('\n'));
  for (const [name, f] of Object.entries(r.data.figures)) {
    if (!r.data.papers[f.paper]) throw new UserError(`${file}: figures.${name}.paper names ${JSON.stringify(f.paper)}, which papers does not list`);
    const seen = new Set<string>();
    f.claims.forEach((c, i) => {
      if (!r.data.papers[c.source.paper]) throw new UserError(`${file}: figures.${name}.claims[${i}].source.paper names ${JSON.stringify(c.source.paper)}, which papers does not list`);
      if (seen.has(c.key)) throw new UserError(`${file}: figures.${name}.claims[${i}].key ${JSON.stringify(c.key)} appears twice in the figure`);
      seen.add(c.key);
    });
  }
  return r.data;
}

/** What the figure ran: the trace of its workload and whether on real hosts. */
export interface ClaimContext {
  trace: string;
  onHosts: boolean;
}

export type Verdict = 'holds' | 'does not hold' | 'not comparable here' | 'setup';

/** One line of a figure's claims file. */
export interface ClaimRow {
  id: string;
  kind: ClaimKind;
  key: string;
  quantity: string;
  /** The paper's value or claim, as text (`0.6 QPS`, `≈ 1`, `vllm.tbtP85S > sarathi.tbtP85S`). */
  paper: string;
  source: string;
  /** Our number for it (for a ratio, the quotient), or null. */
  ours: number | null;
  oursText: string;
  verdict: Verdict;
  /** Why: the band that was applied, or why it is not comparable here. */
  reason: string;
}

export type OurValues = Readonly<Record<string, number | string | null | undefined>>;

const num = (v: number) => String(+v.toPrecision(4));
const show = (v: number | string | null | undefined) => (v === null || v === undefined ? '—' : typeof v === 'number' ? num(v) : v);

// Ours against the paper's number within the entry's band.
function inBand(ours: number, paper: number, compare: 'about' | 'at-least' | 'at-most', tolerance: number): { ok: boolean; text: string } {
  const r = ours / paper;
  const lo = 1 / (1 + tolerance);
  const hi = 1 + tolerance;
  const ok = compare === 'about' ? r >= lo && r <= hi : compare === 'at-least' ? r >= lo : r <= hi;
  const want = compare === 'about' ? `within [${num(lo)}, ${num(hi)}]` : compare === 'at-least' ? `≥ ${num(lo)}` : `≤ ${num(hi)}`;
  return { ok, text: `ours ÷ paper = ${num(r)}, ${ok ? '' : 'not '}${want}` };
}

function notComparableWhy(c: Claim, ctx: ClaimContext): string | null {
  if (c.notComparable) return `${c.notComparable.reason}: ${c.notComparable.why}`;
  if (c.needs?.trace && c.needs.trace !== ctx.trace) return `trace: the paper ran ${c.needs.trace}, this figure ran ${ctx.trace}`;
  if (c.needs?.hosts && !ctx.onHosts) return `hardware: ${c.needs.hosts}; this figure ran on the simulated engine`;
  return null;
}

function paperText(c: Claim): string {
  const about = 'approx' in c && c.approx ? '≈ ' : '';
  const side = 'compare' in c && c.compare !== 'about' ? (c.compare === 'at-least' ? 'at least ' : 'up to ') : '';
  switch (c.kind) {
    case 'value':
      return `${side}${about}${show(c.value)} ${c.unit}`;
    case 'ratio':
      return `${c.numerator} ÷ ${c.denominator} = ${side}${about}${num(c.value)}`;
    case 'ordering':
      return `${c.left} ${c.relation === 'greater' ? '>' : c.relation === 'less' ? '<' : '≈'} ${c.right}`;
    case 'setup':
      return `${show(c.value)}${c.unit ? ` ${c.unit}` : ''}`;
  }
}

function judge(c: Claim, ours: OurValues, ctx: ClaimContext): Pick<ClaimRow, 'ours' | 'oursText' | 'verdict' | 'reason'> {
  const of = (k: string) => ours[k];
  const numOf = (k: string) => (typeof ours[k] === 'number' && Number.isFinite(ours[k]) ? (ours[k] as number) : null);
  if (c.kind === 'setup') {
    const v = of(c.key);
    return { ours: typeof v === 'number' ? v : null, oursText: show(v), verdict: 'setup', reason: v === undefined || v === null ? 'ours: not stated by this figure' : String(v) === String(c.value) ? 'same as the paper' : 'differs from the paper' };
  }
  const blocked = notComparableWhy(c, ctx);
  if (c.kind === 'value') {
    const v = of(c.key);
    const base = { ours: typeof v === 'number' ? v : null, oursText: show(v) };
    if (blocked) return { ...base, verdict: 'not comparable here', reason: blocked };
    if (v === null || v === undefined) return { ...base, verdict: 'not comparable here', reason: 'not measured: this run has no value for it' };
    if (typeof c.value === 'string' || typeof v === 'string') {
      const ok = String(v) === String(c.value);
      return { ...base, verdict: ok ? 'holds' : 'does not hold', reason: ok ? 'the same' : `ours is ${show(v)}` };
    }
    const b = inBand(v, c.value, c.compare, c.tolerance);
    return { ...base, verdict: b.ok ? 'holds' : 'does not hold', reason: b.text };
  }
  if (c.kind === 'ratio') {
    const a = numOf(c.numerator);
    const b = numOf(c.denominator);
    const r = a !== null && b !== null && b !== 0 ? a / b : null;
    const base = { ours: r, oursText: r === null ? `${show(a)} ÷ ${show(b)}` : `${num(r)} (${show(a)} ÷ ${show(b)})` };
    if (blocked) return { ...base, verdict: 'not comparable here', reason: blocked };
    if (r === null) return { ...base, verdict: 'not comparable here', reason: `not measured: ${a === null ? c.numerator : c.denominator} has no value in this run` };
    const m = inBand(r, c.value, c.compare, c.tolerance);
    return { ...base, verdict: m.ok ? 'holds' : 'does not hold', reason: m.text };
  }
  const l = numOf(c.left);
  const rr = numOf(c.right);
  const base = { ours: l !== null && rr !== null && rr !== 0 ? l / rr : null, oursText: `${show(l)} vs ${show(rr)}` };
  if (blocked) return { ...base, verdict: 'not comparable here', reason: blocked };
  if (l === null || rr === null) return { ...base, verdict: 'not comparable here', reason: `not measured: ${l === null ? c.left : c.right} has no value in this run` };
  const ok = c.relation === 'greater' ? l > rr : c.relation === 'less' ? l < rr : inBand(l, rr, 'about', c.tolerance).ok;
  const text = c.relation === 'about-equal' ? `left ÷ right = ${rr === 0 ? '—' : num(l / rr)} (about equal: within ${c.tolerance * 100}% either way)` : `${show(l)} ${l > rr ? '>' : l < rr ? '<' : '='} ${show(rr)}`;
  return { ...base, verdict: ok ? 'holds' : 'does not hold', reason: text };
}

/** Sets each of a figure's entries beside our values (by key) and judges it in the figure's context. */
export function judgeClaims(claims: readonly Claim[], ours: OurValues, ctx: ClaimContext, papers: PaperNumbers['papers']): ClaimRow[] {
  return claims.map((c) => ({
    id: c.source.id,
    kind: c.kind,
    key: c.key,
    quantity: c.quantity,
    paper: paperText(c),
    source: `${citation(papers[c.source.paper])}, ${c.source.where}${c.source.page !== null ? `, p. ${c.source.page}` : ''}`,
    ...judge(c, ours, ctx),
  }));
}

/** "Agrawal et al. 2024": how a row names its paper. */
export function citation(p: { authors: string; year: number }): string {
  return `${p.authors.split(',')[0]}${p.authors.includes(',') ? ' et al.' : ''} ${p.year}`;
}

/** What a figure needs to judge its claims: its entries, the papers they cite, what it ran, and setup facts of ours by key. */
export interface FigurePaper {
  claims: readonly Claim[];
  papers: PaperNumbers['papers'];
  context: ClaimContext;
  /** Our side of setup entries and of values the figure's own computation does not produce (e.g. the request count). */
  facts: OurValues;
}

/** The figure's entries of the data file, ready to judge. */
export function figurePaper(data: PaperNumbers, figure: string, context: ClaimContext, facts: OurValues = {}): FigurePaper {
  const f = data.figures[figure];
  if (!f) throw new Error(`paperNumbers.json has no figure ${figure}`);
  return { claims: f.claims, papers: data.papers, context, facts };
}

/** Judges the figure's claims against our values (the figure's computed ones over its facts). */
export function judgeFigure(p: FigurePaper, ours: OurValues): ClaimRow[] {
  return judgeClaims(p.claims, { ...p.facts, ...ours }, p.context, p.papers);
}
