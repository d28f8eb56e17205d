// Lays the report's blocks out as one self-contained HTML page (report.html): inline CSS, inline
// SVG charts (drawn when the page is written), no scripts and nothing fetched, so it opens offline
// and can be archived as is. Tables wrap their cells to fit the page at any width down to a phone's.
import type { Block, Inline } from './doc.ts';
import { escapeXml } from './escape.ts';
import { renderChart, type RenderedChart } from './charts/render.ts';
import { REPORT_CSV, reportChartSpec } from '../runDir/layout.ts';
import { printableDocument } from '../util/errors.ts';

const CSS = `
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #24292f; max-width: 1180px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; border-bottom: 1px solid #d0d7de; padding-bottom: .3em; overflow-wrap: anywhere; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #eaeef2; padding-bottom: .2em; }
p, li { overflow-wrap: anywhere; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: .1em .3em; border-radius: 4px; overflow-wrap: anywhere; }
.table-wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; max-width: 100%; }
th, td { border: 1px solid #d0d7de; padding: .3em .5em; vertical-align: top; overflow-wrap: break-word; }
td code { overflow-wrap: anywhere; }
th { background: #f6f8fa; text-align: left; font-weight: 600; }
.csv { font-size: .8em; color: #57606a; margin-top: -.4em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.nowrap { white-space: nowrap; }
.figures { display: flex; flex-wrap: wrap; gap: 0 2em; }
figure { margin: 1em 0; flex: 1 1 480px; min-width: 0; max-width: 680px; }
figure.wide { flex-basis: 100%; max-width: 100%; }
figure svg { display: block; height: auto; }
figcaption { font-size: .85em; color: #57606a; max-width: 720px; }
@media (max-width: 900px) { body { font-size: 14px; } table { font-size: .82em; } th, td { padding: .25em .35em; } }
`;

/** Escapes text for HTML (element content and attribute values). */
export const escapeHtml = escapeXml;
export { escapeXml };

function inline(parts: Inline[]): string {
  return parts
    .map((p) =>
      typeof p === 'string'
        ? escapeHtml(p)
        : 'strong' in p
          ? `<strong>${escapeHtml(p.strong)}</strong>`
          : 'code' in p
            ? `<code>${escapeHtml(p.code)}</code>`
            : `<a href="${escapeHtml(p.href)}">${escapeHtml(p.link)}</a>`,
    )
    .join('');
}

/** A page and the charts drawn on it (their specs are saved beside the page). */
export interface RenderedPage {
  html: string;
  charts: RenderedChart[];
}

/** report.html's text; `title` goes into <title>. */
export async function renderHtml(blocks: Block[], title: string): Promise<string> {
  return (await renderPage(blocks, title)).html;
}

/** The page and its charts; `specFile` names where each chart's spec is saved (null: not saved, no link). */
export async function renderPage(blocks: Block[], title: string, specFile: ((slug: string) => string) | null = reportChartSpec): Promise<RenderedPage> {
  const charts: RenderedChart[] = [];
  const slugs = new Set<string>();
  const body: string[] = [];
  for (const b of blocks) {
    switch (b.kind) {
      case 'heading':
        body.push(`<h${b.level}>${escapeHtml(b.text)}</h${b.level}>`);
        break;
      case 'paragraph':
        body.push(`<p>${inline(b.parts)}</p>`);
        break;
      case 'list':
        body.push(`<ul>\n${b.items.map((i) => `<li>${inline(i)}</li>`).join('\n')}\n</ul>`);
        break;
      case 'table': {
        const head = `<tr>${b.columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('')}</tr>`;
        const cls = (i: number) => (b.numeric[i] ? ' class="num"' : b.nowrap?.[i] ? ' class="nowrap"' : '');
        const rows = b.rows.map((r) => `<tr>${r.map((cell, i) => `<td${cls(i)}>${inline([cell])}</td>`).join('')}</tr>`);
        body.push(`<div class="table-wrap"><table>\n<thead>${head}</thead>\n<tbody>\n${rows.join('\n')}\n</tbody>\n</table></div>`);
        if (b.csv) body.push(`<p class="csv">CSV: <a href="${escapeHtml(REPORT_CSV[b.csv.name])}">${escapeHtml(REPORT_CSV[b.csv.name])}</a></p>`);
        break;
      }
      case 'chart': {
        const drawn = await renderChart(b.chart, { fluid: true });
        // Two charts of one title get distinct spec files.
        let slug = drawn.slug;
        for (let k = 2; slugs.has(slug); k++) slug = `${drawn.slug}-${k}`;
        slugs.add(slug);
        charts.push({ ...drawn, slug });
        const spec = specFile ? ` <a class="spec" href="${escapeHtml(specFile(slug))}">Vega-Lite spec</a>` : '';
        const wide = b.chart.panels ? ' class="wide"' : '';
        // Consecutive charts share a row when the page is wide enough.
        const fig = `<figure${wide}>\n${drawn.svg}\n<figcaption>${escapeHtml(drawn.caption)}${spec}</figcaption>\n</figure>`;
        if (body.at(-1)?.endsWith('</figure>\n</div>')) body[body.length - 1] = body.at(-1)!.replace(/<\/div>$/, `${fig}\n</div>`);
        else body.push(`<div class="figures">\n${fig}\n</div>`);
        break;
      }
    }
  }
  // Control characters are not allowed in HTML; a recipe's text may hold them (ESC, BEL).
  const html = printableDocument([
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    // Nothing may be fetched or run: the report is one file that opens the same offline.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${CSS}</style>`,
    '</head>',
    '<body>',
    ...body,
    '</body>',
    '</html>',
    '',
  ].join('\n'));
  return { html, charts };
}
