// The papers' published numbers, typed into paperNumbers.json with page and figure, and the table
// that puts each beside ours. A number the paper does not print (or that could not be found) stays
// null with its reason, so the table says so instead of comparing against a guess. Pure: the JSON
// comes in already parsed.
import { z } from 'zod';
import { UserError } from '../util/errors.ts';
import { formatIssues } from '../recipe/problems.ts';

const numberEntry = z
  .object({
    key: z.string().min(1),
    quantity: z.string().min(1),
    unit: z.string().min(1),
    value: z.number().nullable(),
    page: z.number().int().positive().nullable(),
    figure: z.string().min(1),
    status: z.enum(['printed', 'not-printed', 'not-found']),
    note: z.string().optional(),
  })
  .superRefine((e, ctx) => {
    // A printed number is only citable with the page it is printed on.
    if (e.status === 'printed' && (e.value === null || e.page === null)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a printed number needs its value and page' });
    }
    if (e.status !== 'printed' && e.value !== null) ctx.addIssue({ code: 'custom', path: ['value'], message: `must be null when status is ${e.status}` });
    if (e.status !== 'printed' && !e.note) ctx.addIssue({ code: 'custom', path: ['note'], message: 'must say why the number is absent' });
  });

const fileSchema = z.object({
  papers: z.record(
    z.string(),
    z.object({ title: z.string(), authors: z.string(), year: z.number(), source: z.string(), searched: z.array(z.string()).optional(), searchNote: z.string().optional() }),
  ),
  figures: z.record(z.string(), z.object({ paper: z.string(), figure: z.string(), setup: z.string(), numbers: z.array(numberEntry) })),
});

export type PaperNumbers = z.infer<typeof fileSchema>;
export type PaperNumber = PaperNumbers['figures'][string]['numbers'][number];

/** Checks the data file: each figure names a known paper, each number its figure and (when printed) its page. */
export function parsePaperNumbers(raw: unknown, file: string): PaperNumbers {
  const r = fileSchema.safeParse(raw);
  if (!r.success) throw new UserError(formatIssues(r.error.issues, raw, file).join('\n'));
  for (const [name, f] of Object.entries(r.data.figures)) {
    if (!r.data.papers[f.paper]) throw new UserError(`${file}: figures.${name}.paper names ${JSON.stringify(f.paper)}, which papers does not list`);
  }
  return r.data;
}

/** One row of the comparison: the paper's number as printed (or why there is none), ours, and ours / theirs. */
export interface ComparisonRow {
  key: string;
  quantity: string;
  unit: string;
  paper: number | null;
  paperSource: string;
  ours: number | null;
  ratio: number | null;
  note: string;
}

/** Pairs each of the figure's paper numbers with our value of the same key. */
export function compareWithPaper(numbers: readonly PaperNumber[], ours: Readonly<Record<string, number | null>>, paperName: string): ComparisonRow[] {
  return numbers.map((n) => {
    const mine = ours[n.key] ?? null;
    const ratio = n.value !== null && mine !== null && n.value !== 0 ? mine / n.value : null;
    return {
      key: n.key,
      quantity: n.quantity,
      unit: n.unit,
      paper: n.value,
      paperSource: `${paperName} ${n.figure}${n.page !== null ? `, p. ${n.page}` : ''}`,
      ours: mine,
      ratio,
      note: n.status === 'printed' ? (n.note ?? '') : `paper number ${n.status.replace('-', ' ')}: ${n.note}`,
    };
  });
}
