// Lays the report's blocks out as one self-contained HTML page (report.html): inline CSS, inline
// SVG charts, no scripts and nothing fetched, so it opens offline and can be archived as is.
import type { Block, Inline } from './doc.ts';
import { escapeXml, renderSvg } from './svg.ts';
import { REPORT_CSV } from '../runDir/layout.ts';
import { printableDocument } from '../util/errors.ts';

const CSS = `
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #24292f; max-width: 1180px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; border-bottom: 1px solid #d0d7de; padding-bottom: .3em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #eaeef2; padding-bottom: .2em; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: .1em .3em; border-radius: 4px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
.csv { font-size: .8em; color: #57606a; margin-top: -.4em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.figures { display: flex; flex-wrap: wrap; gap: 0 1.5em; }
figure { margin: 1em 0; flex: 1 1 520px; max-width: 720px; }
td.nowrap { white-space: nowrap; }
figcaption { font-size: .85em; color: #57606a; }
svg text { font: 12px system-ui, sans-serif; fill: #24292f; }
svg .chart-title { font-size: 14px; font-weight: 600; }
svg .tick { fill: #57606a; }
svg .axis { font-size: 13px; }
svg .grid { stroke: #eaeef2; }
svg .frame { fill: none; stroke: #8c959f; }
svg .threshold { stroke: #bc4c00; stroke-dasharray: 6 4; stroke-width: 1.5; }
svg .capacity { stroke: #8250df; stroke-dasharray: 2 3; stroke-width: 1.5; }
svg .mark { fill: #57606a; font-size: 11px; }
`;

/** Escapes text for HTML (element content and attribute values). */
export const escapeHtml = escapeXml;

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

/** report.html's text; `title` goes into <title>. */
export function renderHtml(blocks: Block[], title: string): string {
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
        // Consecutive charts share a row when the page is wide enough.
        const fig = `<figure>\n${renderSvg(b.chart)}\n<figcaption>${escapeHtml(b.chart.description)}</figcaption>\n</figure>`;
        if (body.at(-1)?.endsWith('</figure>\n</div>')) body[body.length - 1] = body.at(-1)!.replace(/<\/div>$/, `${fig}\n</div>`);
        else body.push(`<div class="figures">\n${fig}\n</div>`);
        break;
      }
    }
  }
  // Control characters are not allowed in HTML; a recipe's text may hold them (ESC, BEL).
  return printableDocument([
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
}
