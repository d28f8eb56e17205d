// Reads a chart's SVG (drawn by report/charts/) back: the data marks of a series, by the accessible
// label every point carries ("<series>: <x>, <y> (<status>)").
import { escapeXml } from '../../harness/report/escape.ts';

/** The points drawn for `series` (every series when absent), as their labels. */
export function svgPoints(svg: string, series?: string): string[] {
  const labels = [...svg.matchAll(/<path aria-label="([^"]*)" role="graphics-symbol" aria-roledescription="point"/g)].map((m) => m[1]);
  return series === undefined ? labels : labels.filter((l) => l.startsWith(`${escapeXml(series)}: `));
}

/** How many line marks (one per drawn line) the SVG holds. */
export function svgLines(svg: string): number {
  return svg.match(/aria-roledescription="line mark"/g)?.length ?? 0;
}
