// Draws a report chart as inline SVG text: axes with round ticks, point and line series, labelled
// threshold lines and a legend. Self-contained (no fonts or scripts fetched), every label escaped.
import type { Chart } from './doc.ts';

const W = 640;
const H = 320;
const M = { left: 64, right: 20, top: 34, bottom: 50 };

/** Escapes text for HTML and SVG content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const fmtTick = (v: number) => String(+v.toPrecision(4));

// Round tick values (1, 2, 5 × 10^k steps) covering [lo, hi].
function linearTicks(lo: number, hi: number): number[] {
  const raw = (hi - lo) / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

// Rates get powers of two inside [lo, hi] (the search doubles rates); small quantities such as
// deadlines in seconds get 1-2-5 steps per decade. Thinned to at most eight.
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  if (lo < 0.5) {
    for (let e = Math.floor(Math.log10(lo)); 10 ** e <= hi; e++) {
      for (const m of [1, 2, 5]) {
        const v = +(m * 10 ** e).toPrecision(6);
        if (v >= lo && v <= hi) out.push(v);
      }
    }
  } else {
    for (let k = Math.ceil(Math.log2(lo)); 2 ** k <= hi; k++) out.push(2 ** k);
  }
  const every = Math.ceil(out.length / 8);
  return out.filter((_, i) => i % every === 0);
}

// Legend entries flow left to right and wrap, so a chart with one series per probe stays legible.
function legendRows(chart: Chart, width: number): { name: string; color: string; line: boolean; x: number; row: number }[] {
  const out: { name: string; color: string; line: boolean; x: number; row: number }[] = [];
  let x = 0;
  let row = 0;
  for (const s of chart.series) {
    const w = 26 + s.name.length * 6.6;
    if (x > 0 && x + w > width) {
      x = 0;
      row += 1;
    }
    out.push({ name: s.name, color: s.color, line: s.kind === 'line', x, row });
    x += w + 10;
  }
  return out;
}

/** The chart as an <svg> element string, `width` 100% so it scales with the page. */
export function renderSvg(chart: Chart): string {
  const pw = W - M.left - M.right;
  const legend = legendRows(chart, pw);
  const legendLines = legend.length ? legend[legend.length - 1].row + 1 : 0;
  const top = M.top + legendLines * 16;
  const height = H + (top - M.top);
  const xs = [...chart.series.flatMap((s) => s.points.map((p) => p[0])), ...chart.vLines.map((l) => l.x)].filter(Number.isFinite);
  const ys = [...chart.series.flatMap((s) => s.points.map((p) => p[1])), ...chart.hLines.map((l) => l.y)].filter(Number.isFinite);
  const log = chart.xScale === 'log' && xs.length > 0 && xs.every((x) => x > 0);
  let x0 = log ? Math.min(...xs) / 1.3 : Math.min(0, ...xs);
  let x1 = log ? Math.max(...xs) * 1.3 : Math.max(...xs, 0) * 1.05;
  if (!(x1 > x0)) [x0, x1] = log ? [x0 / 2, x0 * 2] : [x0, x0 + 1];
  const y0 = Math.min(0, ...ys);
  let y1 = Math.max(0, ...ys) * 1.1;
  if (!(y1 > y0)) y1 = y0 + 1;
  const ph = height - top - M.bottom;
  const sx = (x: number) => M.left + (log ? (Math.log(x / x0) / Math.log(x1 / x0)) * pw : ((x - x0) / (x1 - x0)) * pw);
  const sy = (y: number) => top + ph - ((y - y0) / (y1 - y0)) * ph;
  const r = (v: number) => v.toFixed(1);

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${height}" width="100%" role="img" aria-label="${escapeXml(chart.title)}" data-series="${chart.series.length}">`,
    `<title>${escapeXml(chart.description)}</title>`,
    `<text x="${M.left}" y="20" class="chart-title">${escapeXml(chart.title)}</text>`,
  );
  for (const t of log ? logTicks(x0, x1) : linearTicks(x0, x1)) {
    const x = sx(t);
    parts.push(`<line x1="${r(x)}" y1="${top}" x2="${r(x)}" y2="${top + ph}" class="grid"/>`);
    parts.push(`<text x="${r(x)}" y="${top + ph + 16}" text-anchor="middle" class="tick">${escapeXml(fmtTick(t))}</text>`);
  }
  for (const t of linearTicks(y0, y1)) {
    const y = sy(t);
    parts.push(`<line x1="${M.left}" y1="${r(y)}" x2="${M.left + pw}" y2="${r(y)}" class="grid"/>`);
    parts.push(`<text x="${M.left - 6}" y="${r(y + 4)}" text-anchor="end" class="tick">${escapeXml(fmtTick(t))}</text>`);
  }
  parts.push(`<rect x="${M.left}" y="${top}" width="${pw}" height="${ph}" class="frame"/>`);
  parts.push(`<text x="${M.left + pw / 2}" y="${height - 10}" text-anchor="middle" class="axis">${escapeXml(chart.xLabel)}${log ? ' (log scale)' : ''}</text>`);
  parts.push(
    `<text transform="translate(16 ${top + ph / 2}) rotate(-90)" text-anchor="middle" class="axis">${escapeXml(chart.yLabel)}</text>`,
  );
  for (const l of chart.hLines) {
    const y = sy(l.y);
    parts.push(`<line x1="${M.left}" y1="${r(y)}" x2="${M.left + pw}" y2="${r(y)}" class="threshold"/>`);
    parts.push(`<text x="${M.left + pw - 4}" y="${r(y - 5)}" text-anchor="end" class="mark">${escapeXml(l.label)}</text>`);
  }
  for (const l of chart.vLines) {
    const x = sx(l.x);
    parts.push(`<line x1="${r(x)}" y1="${top}" x2="${r(x)}" y2="${top + ph}" class="capacity"/>`);
    // Near the right edge the label goes on the line's left so it is not cut off.
    const left = x > M.left + pw * 0.7;
    parts.push(`<text x="${r(left ? x - 4 : x + 4)}" y="${top + 14}"${left ? ' text-anchor="end"' : ''} class="mark">${escapeXml(l.label)}</text>`);
  }
  for (const [si, s] of chart.series.entries()) {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!log || x > 0));
    if (s.kind === 'line' && pts.length > 0) {
      const d = pts.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${r(sx(x))} ${r(sy(y))}`).join(' ');
      parts.push(`<path d="${d}" fill="none" stroke="${escapeXml(s.color)}" stroke-width="2" class="series" data-s="${si}"/>`);
    }
    if (s.kind === 'points' || s.dots) {
      const radius = s.kind === 'points' ? 4.5 : 3;
      for (const [x, y] of pts) {
        parts.push(`<circle cx="${r(sx(x))}" cy="${r(sy(y))}" r="${radius}" fill="${escapeXml(s.color)}" class="series" data-s="${si}"><title>${escapeXml(`${s.name}: ${fmtTick(x)}, ${fmtTick(y)}`)}</title></circle>`);
      }
    }
  }
  for (const item of legend) {
    const x = M.left + item.x;
    const y = M.top - 4 + item.row * 16;
    const mark = item.line
      ? `<line x1="${r(x)}" y1="${y}" x2="${r(x + 14)}" y2="${y}" stroke="${escapeXml(item.color)}" stroke-width="2"/>`
      : `<circle cx="${r(x + 7)}" cy="${y}" r="4.5" fill="${escapeXml(item.color)}"/>`;
    parts.push(mark, `<text x="${r(x + 20)}" y="${y + 4}" class="tick">${escapeXml(item.name)}</text>`);
  }
  parts.push('</svg>');
  return parts.join('\n');
}
