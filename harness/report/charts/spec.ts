// Turns a Chart (report/doc.ts) into a Vega-Lite spec in fluidcap's style: one data array (every
// row names its layer), layers for bands, reference lines, lines, points, binned densities,
// ranges and labels, and small multiples when the chart has panels. The spec is plain JSON with
// its data inline, saved beside the report so a user can restyle it in any Vega-Lite tool.
// Pure: chart in, JSON out.
import type { Chart, ChartSeries, PointStatus } from '../doc.ts';
import { CAPACITY_COLOR, CONFIG, PANEL, PLOT, SHAPES, STATUS_MARK, THRESHOLD_COLOR } from './style.ts';

type Json = Record<string, unknown>;

/** One row of the chart's data; `layer` says which mark draws it. */
interface Row {
  layer: 'band' | 'vrule' | 'hrule' | 'line' | 'point' | 'density' | 'range' | 'label';
  series?: string;
  legend?: string;
  x?: number;
  y?: number | string;
  x2?: number;
  y2?: number;
  text?: string;
  status?: string;
  hollow?: boolean;
  dashed?: boolean;
  /** A band's index in Chart.bands. */
  band?: number;
  shape?: string;
  panel?: string;
  /** A label's position: 1 above its point, −1 below. */
  side?: number;
}

const finite = (...v: number[]) => v.every(Number.isFinite);

/** What a Chart says that the spec cannot show by itself, for the caption. */
export function chartNotes(chart: Chart): string[] {
  const notes: string[] = [];
  if (chart.yScale === 'log' && chart.series.some((s) => s.points.some(([, y]) => y <= 0))) notes.push('Hollow squares on the bottom edge are values of 0, which a log axis cannot place.');
  return notes;
}

// Rows of one series; on a log axis, y ≤ 0 goes to the floor as a "zero" mark and x ≤ 0 is left out.
function seriesRows(chart: Chart, s: ChartSeries, floorY: number | null): Row[] {
  const legend = s.legend ?? s.name;
  const base = { series: s.name, legend, panel: s.panel, shape: s.shape };
  const rows: Row[] = [];
  s.points.forEach(([x, y0], i) => {
    if (!finite(x, y0) || (chart.xScale === 'log' && x <= 0)) return;
    const zero = floorY !== null && y0 <= 0;
    const y = zero ? floorY! : y0;
    const status: PointStatus | 'zero' = zero ? 'zero' : (s.status?.[i] ?? 'measured');
    const cat = chart.yCategories ? (chart.yCategories[y] ?? String(y)) : y;
    if (s.kind === 'density') {
      rows.push({ layer: 'density', ...base, x, y: cat });
      return;
    }
    if (s.kind === 'range') {
      const x2 = s.x2?.[i];
      if (x2 !== undefined && Number.isFinite(x2)) rows.push({ layer: 'range', ...base, x, x2, y: cat });
    }
    // A line joins only measured values: an early-stopped or invalid probe is not a point of the curve.
    if (s.kind === 'line' && status === 'measured') rows.push({ layer: 'line', ...base, x, y: cat, dashed: s.dashed ?? false });
    const marked = s.kind === 'points' || (s.kind === 'line' && (s.dots || status !== 'measured'));
    if (marked) rows.push({ layer: 'point', ...base, x, y: cat, status: STATUS_MARK[status].words, hollow: STATUS_MARK[status].hollow });
    const text = s.labels?.[i];
    // A range is labelled right of its end; points alternately above and below, so neighbours do not collide.
    if (text) rows.push({ layer: 'label', ...base, x: s.kind === 'range' ? (s.x2?.[i] ?? x) : x, y: cat, text, side: s.kind === 'range' ? 0 : i % 2 === 0 ? 1 : -1 });
  });
  return rows;
}

// The lowest value a log y axis shows: a third of the smallest positive value drawn.
function logFloor(chart: Chart): number | null {
  if (chart.yScale !== 'log') return null;
  const ys = [...chart.series.flatMap((s) => s.points.map(([, y]) => y)), ...chart.hLines.map((l) => l.y)].filter((y) => Number.isFinite(y) && y > 0);
  return ys.length ? Math.min(...ys) / 3 : 1e-6;
}

/** All rows of the chart; rows without a panel are copied into every panel. */
export function chartRows(chart: Chart): Row[] {
  const floorY = logFloor(chart);
  const rows: Row[] = [];
  (chart.bands ?? []).forEach((b, band) => {
    if (finite(b.from, b.to)) rows.push(b.axis === 'x' ? { layer: 'band', band, x: b.from, x2: b.to, text: b.label } : { layer: 'band', band, y: b.from, y2: b.to, text: b.label });
  });
  for (const l of chart.vLines) if (Number.isFinite(l.x) && (chart.xScale !== 'log' || l.x > 0)) rows.push({ layer: 'vrule', x: l.x, text: l.label });
  for (const l of chart.hLines) if (Number.isFinite(l.y) && (chart.yScale !== 'log' || l.y > 0)) rows.push({ layer: 'hrule', y: l.y, text: l.label });
  for (const s of chart.series) rows.push(...seriesRows(chart, s, floorY));
  if (!chart.panels) return rows;
  return rows.flatMap((r) => (r.panel !== undefined ? [r] : chart.panels!.names.map((panel) => ({ ...r, panel }))));
}

const unique = <T>(xs: T[]) => [...new Set(xs)];

// A linear y axis starts at 0 unless every value lies far from it (fluidity between 0.9 and 1):
// then the axis spans the values, so points that differ in the second decimal do not overlap.
function includeZero(chart: Chart): boolean {
  const ys = [...chart.series.flatMap((s) => s.points.map(([, y]) => y)), ...chart.hLines.map((l) => l.y)].filter(Number.isFinite);
  if (ys.length === 0) return true;
  const lo = Math.min(...ys);
  return !(lo > 0 && lo > 0.5 * Math.max(...ys));
}

/** The chart as a Vega-Lite spec (plain JSON, data inline). */
export function chartSpec(chart: Chart): Json {
  const rows = chartRows(chart);
  const faceted = Boolean(chart.panels);
  const size = faceted ? PANEL : PLOT;
  const is = (layer: Row['layer']) => ({ filter: `datum.layer === '${layer}'` });
  const has = (layer: Row['layer']) => rows.some((r) => r.layer === layer);

  // Colour: one legend entry per distinct legend name, in series order, each with its series' colour.
  const legends = unique(chart.series.filter((s) => s.points.length > 0).map((s) => s.legend ?? s.name));
  const colorOf = (name: string) => chart.series.find((s) => (s.legend ?? s.name) === name)!.color;
  const colorScale = { domain: legends, range: legends.map(colorOf) };
  const color = { field: 'legend', type: 'nominal', scale: colorScale, title: null, legend: legends.length > 1 ? { symbolOpacity: 1 } : null };

  // Shape: the chart's own grouping when it has one, else the point status (only when some point is not measured).
  const shapeGroups = unique(chart.series.flatMap((s) => (s.shape !== undefined && s.points.length ? [s.shape] : [])));
  const statuses = unique(rows.flatMap((r) => (r.layer === 'point' && r.status ? [r.status] : [])));
  const statusShape = (words: string) => Object.values(STATUS_MARK).find((m) => m.words === words)!.shape;
  const shape = shapeGroups.length
    ? { field: 'shape', type: 'nominal', scale: { domain: shapeGroups, range: shapeGroups.map((_, i) => SHAPES[i % SHAPES.length]) }, title: chart.shapeTitle ?? null }
    : statuses.length > 1 || (statuses.length === 1 && statuses[0] !== STATUS_MARK.measured.words)
      ? { field: 'status', type: 'nominal', scale: { domain: statuses, range: statuses.map(statusShape) }, title: 'point', legend: { columns: 2, symbolStrokeColor: '#57606a', symbolFillColor: '#ffffff' } }
      : null;

  const xScale = { type: chart.xScale === 'log' ? 'log' : 'linear', ...(chart.xScale === 'log' ? {} : { zero: false }), nice: chart.xScale !== 'log' };
  // Whole-number axes (probe numbers, numbered systems) keep their end marks off the frame.
  const x = { field: 'x', type: 'quantitative', title: chart.xLabel, scale: chart.xWhole ? { ...xScale, padding: 16 } : xScale, axis: { grid: true, tickCount: faceted ? 4 : 8, ...(chart.xWhole ? { tickMinStep: 1, format: 'd' } : {}) } };
  const y = chart.yCategories
    ? { field: 'y', type: 'nominal', title: chart.yLabel || null, sort: chart.yCategories, axis: { labelLimit: 220 } }
    : { field: 'y', type: 'quantitative', title: chart.yLabel, scale: chart.yScale === 'log' ? { type: 'log' } : includeZero(chart) ? { zero: true } : { zero: false, padding: 8 }, axis: { grid: true, tickCount: faceted ? 4 : 6 } };

  const layers: Json[] = [];
  // One layer per band with its colour as a mark property: a colour encoding would join the series' legend.
  (chart.bands ?? []).forEach((b, i) => {
    if (!rows.some((r) => r.band === i)) return;
    const only = { filter: `datum.band === ${i}` };
    const color = b.color ?? CAPACITY_COLOR;
    if (b.axis === 'x') {
      layers.push({ name: `band_${i}`, transform: [only], mark: { type: 'rect', opacity: 0.14, color }, encoding: { x, x2: { field: 'x2' } } });
      layers.push({ transform: [only], mark: { type: 'text', align: 'left', baseline: 'bottom', dx: 3, dy: -3, fontSize: 10, color }, encoding: { x, y: { value: size.height }, text: { field: 'text' } } });
    } else {
      layers.push({ name: `band_${i}`, transform: [only], mark: { type: 'rect', opacity: 0.14, color }, encoding: { y, y2: { field: 'y2' } } });
      layers.push({ transform: [only], mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 3, fontSize: 10, color }, encoding: { x: { value: 0 }, y: { field: 'y2', type: 'quantitative' }, text: { field: 'text' } } });
    }
  });
  if (has('vrule')) {
    layers.push({ name: 'capacity', transform: [is('vrule')], mark: { type: 'rule', color: CAPACITY_COLOR, strokeDash: [3, 3], strokeWidth: 1.5 }, encoding: { x } });
    layers.push({ transform: [is('vrule')], mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 4, color: CAPACITY_COLOR, fontSize: 10 }, encoding: { x, y: { value: 0 }, text: { field: 'text' } } });
  }
  if (has('hrule')) {
    layers.push({ name: 'threshold', transform: [is('hrule')], mark: { type: 'rule', color: THRESHOLD_COLOR, strokeDash: [6, 4], strokeWidth: 1.5 }, encoding: { y } });
    layers.push({ transform: [is('hrule')], mark: { type: 'text', align: 'right', baseline: 'bottom', dx: -4, dy: -3, color: THRESHOLD_COLOR, fontSize: 10 }, encoding: { x: { value: size.width }, y, text: { field: 'text' } } });
  }
  if (has('density')) {
    layers.push({
      name: 'density',
      transform: [is('density')],
      mark: { type: 'rect' },
      encoding: {
        x: { ...x, bin: { maxbins: faceted ? 24 : 40 } },
        y: { ...y, bin: { maxbins: faceted ? 16 : 24 } },
        color: { ...color, legend: null },
        opacity: { aggregate: 'count', type: 'quantitative', title: 'points per cell', scale: { range: [0.15, 1] }, legend: { orient: 'bottom', direction: 'horizontal', gradientLength: 120 } },
      },
    });
  }
  if (has('range')) layers.push({ name: 'range', transform: [is('range')], mark: { type: 'rule', strokeWidth: 4, strokeCap: 'round' }, encoding: { x, x2: { field: 'x2' }, y, color } });
  if (has('line')) {
    layers.push({
      name: 'line',
      transform: [is('line')],
      mark: { type: 'line', interpolate: 'linear' },
      encoding: { x, y, color, detail: { field: 'series', type: 'nominal' }, strokeDash: { field: 'dashed', type: 'nominal', scale: { domain: [false, true], range: [[1, 0], [6, 4]] }, legend: null } },
    });
  }
  if (has('point')) {
    // Two layers, filled and hollow, rather than a fill condition: the legends then draw their symbols
    // (a condition's white would blank the shape legend's symbols).
    const description = { calculate: "datum.series + ': ' + datum.x + ', ' + datum.y + ' (' + datum.status + ')'", as: 'description' };
    const encoding = { x, y, color, ...(shape ? { shape } : {}), description: { field: 'description' } };
    // Each mark's accessible label names its series and values ("pass: 42, 0.95 (measured)"): screen readers and tests read it.
    layers.push({ name: 'points', transform: [is('point'), { filter: '!datum.hollow' }, description], mark: { type: 'point', filled: true, opacity: 1, strokeWidth: 0 }, encoding });
    layers.push({ name: 'points_hollow', transform: [is('point'), { filter: 'datum.hollow' }, description], mark: { type: 'point', filled: false, fill: '#ffffff', opacity: 1 }, encoding });
  }
  if (has('label')) {
    layers.push({
      name: 'labels',
      transform: [is('label'), { filter: 'datum.side > 0' }],
      mark: { type: 'text', align: 'center', baseline: 'bottom', dy: -6, fontSize: 10, color: '#24292f' },
      encoding: { x, y, text: { field: 'text' } },
    });
    layers.push({
      transform: [is('label'), { filter: 'datum.side < 0' }],
      mark: { type: 'text', align: 'center', baseline: 'top', dy: 6, fontSize: 10, color: '#24292f' },
      encoding: { x, y, text: { field: 'text' } },
    });
    layers.push({
      transform: [is('label'), { filter: 'datum.side === 0' }],
      mark: { type: 'text', align: 'left', baseline: 'middle', dx: 7, fontSize: 10, color: '#24292f' },
      encoding: { x, y, text: { field: 'text' } },
    });
  }

  const inner: Json = chart.yCategories ? { width: size.width, height: { step: 30 }, layer: layers } : { width: size.width, height: size.height, layer: layers };
  const title = { text: chart.title };
  const head = { $schema: 'https://vega.github.io/schema/vega-lite/v6.json', description: chart.description, title, config: CONFIG, data: { values: rows } };
  if (!chart.panels) return { ...head, ...inner };
  return {
    ...head,
    facet: { field: 'panel', type: 'nominal', sort: chart.panels.names, title: null },
    columns: chart.panels.columns,
    spec: inner,
  };
}

/** The file stem of a chart's saved spec: its `file`, else its title in lower-case words joined by dashes. */
export function chartSlug(chart: Chart): string {
  return chart.file ?? (chart.title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60) || 'chart');
}
