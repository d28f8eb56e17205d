// fluidcap's chart style: one Vega-Lite config shared by every chart (report, history, figures), so
// fonts, colours and sizes are decided once. A user restyling a saved spec edits its `config`.
import type { PointStatus } from '../doc.ts';

export const FONT = 'system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif';
const INK = '#24292f';
const MUTED = '#57606a';
const GRID = '#eaeef2';

/** Verdict colours, the same in every chart and table legend. */
export const VERDICT_COLOR = { pass: '#1a7f37', fail: '#cf222e', invalid: '#8c959f', undecided: '#9a6700' } as const;

/** Series colours in order (colour-blind-safe enough for up to ten series). */
export const PALETTE = ['#0969da', '#cf222e', '#1a7f37', '#8250df', '#bc4c00', '#1b7c83', '#bf3989', '#57606a', '#953800', '#4d2d00'];

/** Reference lines: an SLO threshold (orange, dashed), a capacity or estimate (purple, dotted). */
export const THRESHOLD_COLOR = '#bc4c00';
export const CAPACITY_COLOR = '#8250df';

/** Size of one chart's plotting area in SVG pixels (the page scales the SVG to its column). */
export const PLOT = { width: 520, height: 240 };
/** Size of one panel of small multiples. */
export const PANEL = { width: 170, height: 110 };

/** How each point status is drawn: its shape, whether it is hollow, and its words in the legend. */
export const STATUS_MARK: Record<PointStatus | 'zero', { shape: string; hollow: boolean; words: string }> = {
  measured: { shape: 'circle', hollow: false, words: 'measured' },
  'early-stopped': { shape: 'triangle-down', hollow: true, words: 'stopped early (not a full measurement)' },
  invalid: { shape: 'cross', hollow: true, words: 'invalid (client error too large)' },
  undecided: { shape: 'diamond', hollow: true, words: 'undecided (could fall either side)' },
  zero: { shape: 'square', hollow: true, words: '0 (drawn on the log axis floor)' },
};

/** Shapes for a chart's `shape` grouping, in order. */
export const SHAPES = ['circle', 'square', 'triangle-up', 'diamond', 'cross', 'triangle-down', 'wedge', 'stroke'];

/** The shared Vega-Lite config. */
export const CONFIG = {
  background: '#ffffff',
  padding: 8,
  font: FONT,
  view: { stroke: '#d0d7de' },
  title: { anchor: 'start', fontSize: 14, fontWeight: 600, color: INK, offset: 10, subtitleColor: MUTED, subtitleFontSize: 11 },
  axis: {
    labelColor: MUTED,
    labelFontSize: 11,
    titleColor: INK,
    titleFontSize: 12,
    titleFontWeight: 500,
    gridColor: GRID,
    domainColor: '#8c959f',
    tickColor: '#8c959f',
    labelFlush: true,
    labelOverlap: true,
  },
  legend: {
    orient: 'bottom',
    direction: 'horizontal',
    // Legends stack under the plot instead of side by side, so a chart keeps the width of its plot.
    layout: { bottom: { anchor: 'start', direction: 'vertical', margin: 6 } },
    columns: 2,
    labelFontSize: 11,
    labelColor: INK,
    labelLimit: 400,
    titleFontSize: 11,
    titleColor: MUTED,
    symbolSize: 60,
    symbolStrokeWidth: 1.5,
    rowPadding: 3,
    columnPadding: 14,
  },
  header: { labelFontSize: 11, labelColor: INK, labelFontWeight: 600, title: null },
  point: { size: 55, strokeWidth: 1.6 },
  line: { strokeWidth: 2 },
  text: { fontSize: 10, color: MUTED },
  facet: { spacing: 12 },
} as const;
