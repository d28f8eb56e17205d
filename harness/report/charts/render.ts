// Draws a chart as static SVG when a report is written: the chart's Vega-Lite spec (spec.ts) is
// compiled and rendered headless by Vega. Vega's loader is replaced by one that refuses every file
// and network access, so a chart can only draw the data inlined in its spec and the page stays one
// self-contained file. Vega is imported on first use: commands that draw nothing never load it.
import type { Chart } from '../doc.ts';
import { escapeXml } from '../escape.ts';
import { chartNotes, chartSlug, chartSpec } from './spec.ts';

type Json = Record<string, unknown>;

/** A rendered chart: its SVG and the Vega-Lite spec it was drawn from (saved beside the report). */
export interface RenderedChart {
  slug: string;
  spec: Json;
  svg: string;
  /** What the chart shows and how to read it, in sentences (the figure's caption). */
  caption: string;
}

const refuse = (what: string) => () => Promise.reject(new Error(`a report chart may not load ${what}: its data is inline`));
const NO_ACCESS = { load: refuse('data'), sanitize: refuse('a URI'), http: refuse('a URL'), file: refuse('a file') };

const QUIET = { level: () => QUIET, warn: () => QUIET, info: () => QUIET, debug: () => QUIET, error: (...a: unknown[]) => { throw new Error(a.join(' ')); } };

let engines: Promise<{ vega: typeof import('vega'); compile: typeof import('vega-lite').compile }> | null = null;
function load() {
  engines ??= Promise.all([import('vega'), import('vega-lite')]).then(([vega, vl]) => {
    // Without a canvas Vega guesses a text's width as 0.8 em per character, about half again what
    // the page's sans-serif draws, and lays legends out that much too wide (shrinking the plot).
    // 0.6 em per character still errs wide, so labels never overlap.
    const metrics = (vega as unknown as { textMetrics: { width: (item: { fontSize?: number }, text: unknown) => number } }).textMetrics;
    metrics.width = (item, text) => Math.ceil(0.6 * (text == null ? 0 : String(text).trim().length) * (item.fontSize ?? 11));
    return { vega, compile: vl.compile };
  });
  return engines;
}

/** A Vega-Lite spec drawn as an SVG document string (Vega's own attributes; no CSS needed). */
export async function specToSvg(spec: Json): Promise<string> {
  const { vega, compile } = await load();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  // Vega-Lite's warnings (merged legends and the like) are about the spec's style, not the data: kept out of the console.
  const runtime = vega.parse(compile(spec as any, { logger: QUIET as any }).spec);
  const view = new vega.View(runtime, { renderer: 'none', loader: NO_ACCESS as unknown as ReturnType<typeof vega.loader> });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

// Vega writes fixed width and height; `fluid` keeps only the viewBox so the page scales the chart to its column.
function dress(svg: string, chart: Chart, slug: string, fluid: boolean): string {
  const open = svg.indexOf('>');
  let tag = svg.slice(0, open);
  // Vega declares the xlink namespace whether or not it uses it; an unused one is one more URL in a page that fetches none.
  if (!svg.includes('xlink:')) tag = tag.replace(/\sxmlns:xlink="[^"]*"/, '');
  if (fluid) tag = tag.replace(/\swidth="[\d.]+"/, ' width="100%"').replace(/\sheight="[\d.]+"/, '');
  // Small multiples keep at most their drawn size: scaled up, their many small labels would grow past the text around them.
  const w = /\swidth="([\d.]+)"/.exec(svg.slice(0, open))?.[1];
  tag += ` role="img" aria-label="${escapeXml(chart.title)}" data-chart="${escapeXml(slug)}"${fluid && chart.panels && w ? ` style="max-width:${w}px"` : ''}`;
  return `${tag}><title>${escapeXml(chart.description)}</title>${svg.slice(open + 1)}`;
}

/** The chart's caption: what it shows, how to read it, and what the drawing could not show. */
export function chartCaption(chart: Chart): string {
  return [chart.description, chart.howToRead ?? '', ...chartNotes(chart)].filter(Boolean).join(' ');
}

/** Renders a chart for a page (`fluid`: scales to its column) or as a standalone .svg file. */
export async function renderChart(chart: Chart, o: { fluid: boolean }): Promise<RenderedChart> {
  const slug = chartSlug(chart);
  const spec = chartSpec(chart);
  const svg = dress(await specToSvg(spec), chart, slug, o.fluid);
  return { slug, spec, svg: o.fluid ? svg : `<?xml version="1.0" encoding="UTF-8"?>\n${svg}\n`, caption: chartCaption(chart) };
}
