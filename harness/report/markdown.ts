// Lays the report's blocks out as GitHub-flavoured Markdown (report.md). Charts are left to
// report.html (a line says so): every number they plot is already in a table here.
import type { Block, Inline } from './doc.ts';
import { RUN_FILES } from '../runDir/layout.ts';
import { printableDocument } from '../util/errors.ts';

// Characters Markdown would read as markup or raw HTML in running text.
const MD_SPECIAL = /[\\`*[\]<]/g;

/** Escapes text so Markdown shows it literally (no emphasis, links or HTML). */
export function escapeMarkdown(text: string): string {
  return text.replace(MD_SPECIAL, (c) => `\\${c}`);
}

// A code span that survives backticks in its content (CommonMark: a longer fence, padded).
function codeSpan(text: string): string {
  const runs = text.match(/`+/g) ?? [];
  const fence = '`'.repeat(Math.max(0, ...runs.map((r) => r.length)) + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

function inline(parts: Inline[], inTable = false): string {
  const text = parts
    .map((p) =>
      typeof p === 'string'
        ? escapeMarkdown(p)
        : 'strong' in p
          ? `**${escapeMarkdown(p.strong)}**`
          : 'code' in p
            ? codeSpan(p.code)
            : `[${escapeMarkdown(p.link)}](<${p.href.replace(/[<>\n]/g, encodeURIComponent)}>)`,
    )
    .join('');
  // A table cell ends at an unescaped pipe and at a newline, code spans included.
  return inTable ? text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ') : text;
}

/** report.md's text. */
export function renderMarkdown(blocks: Block[]): string {
  const out: string[] = [];
  for (const b of blocks) {
    switch (b.kind) {
      case 'heading':
        out.push(`${'#'.repeat(b.level)} ${escapeMarkdown(b.text)}`);
        break;
      case 'paragraph':
        out.push(inline(b.parts));
        break;
      case 'list':
        out.push(b.items.map((item) => `- ${inline(item)}`).join('\n'));
        break;
      case 'table':
        out.push(
          [
            `| ${b.columns.map((c) => inline([c], true)).join(' | ')} |`,
            `|${b.numeric.map((n) => (n ? '---:' : ':---')).join('|')}|`,
            ...b.rows.map((r) => `| ${r.map((cell) => inline([cell], true)).join(' | ')} |`),
          ].join('\n'),
        );
        break;
      case 'chart':
        // The plotted numbers are in the tables above; say where the picture is.
        out.push(`*Chart in ${RUN_FILES.reportHtml}: ${escapeMarkdown(b.chart.title)}.*`);
        break;
    }
  }
  // Text from a recipe (its description) may hold ESC or BEL: shown as escapes, never passed on to
  // the terminal or viewer that displays the file.
  return printableDocument(out.join('\n\n') + '\n');
}
