import type { BenchReport } from './results.ts';
import { jobsPerSec, phaseRuns } from './select.ts';
import { w4Levels } from './tables.ts';

/**
 * Two small hand-written SVG charts (no charting dependency): throughput by system for
 * each phase of W1 and W3, and W4's concurrency scaling.
 */

const palette = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf', '#7f7f7f'];
const font = (sizePx = 12) => `font-family="sans-serif" font-size="${sizePx}"`;

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A round axis maximum (1, 2 or 5 × 10^k) at or above `v`, and its tick step. */
function niceScale(v: number): { max: number; step: number } {
  if (v <= 0) return { max: 1, step: 0.2 };
  const exp = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * exp >= v) return { max: m * exp, step: (m * exp) / 5 };
  }
  return { max: 10 * exp, step: 2 * exp };
}

const kilo = (v: number) =>
  v >= 1000 ? `${(v / 1000).toFixed(v >= 10_000 ? 0 : 1)}k` : Math.round(v).toString();

interface Frame {
  readonly width: number;
  readonly height: number;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

/** Title, y axis with grid lines, and the legend; returns the SVG parts and a y mapper. */
function axes(
  frame: Frame,
  title: string,
  yMaxValue: number,
  legend: readonly { label: string; colour: string; dash?: boolean }[],
) {
  const { max, step } = niceScale(yMaxValue);
  const plotH = frame.height - frame.top - frame.bottom;
  const y = (v: number) => frame.top + plotH - (v / max) * plotH;
  const parts = [
    `<text x="${frame.width / 2}" y="20" text-anchor="middle" ${font(15)} font-weight="bold">${esc(title)}</text>`,
  ];
  for (let v = 0; v <= max + step / 2; v += step) {
    parts.push(
      `<line x1="${frame.left}" x2="${frame.width - frame.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${frame.left - 6}" y="${y(v) + 4}" text-anchor="end" ${font()}>${kilo(v)}</text>`,
    );
  }
  parts.push(
    `<text transform="translate(14 ${frame.top + plotH / 2}) rotate(-90)" text-anchor="middle" ${font()}>jobs/s</text>`,
  );
  legend.forEach((item, i) => {
    const ly = 40 + i * 17;
    const lx = frame.width - frame.right + 12;
    parts.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${item.colour}" stroke-width="${item.dash === undefined ? 10 : 2.5}"${item.dash ? ' stroke-dasharray="5 3"' : ''}/>`,
      `<text x="${lx + 28}" y="${ly}" ${font()}>${esc(item.label)}</text>`,
    );
  });
  return { parts, y };
}

function svg(frame: Frame, parts: readonly string[]): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${frame.width}" height="${frame.height}" viewBox="0 0 ${frame.width} ${frame.height}">\n` +
    `<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`
  );
}

/** Grouped bars: one group per workload phase, one bar per system. */
export function throughputChart(report: BenchReport): string | undefined {
  const groups = (['W1', 'W3'] as const).flatMap((w) =>
    (['enqueue', 'drain'] as const).map((phase) => ({ w, phase })),
  );
  const present = groups.filter((g) => report.systems.some((s) => phaseRuns(s, g.w, g.phase).length > 0));
  if (present.length === 0) return undefined;
  const value = (i: number, g: (typeof groups)[number]) =>
    jobsPerSec(phaseRuns(report.systems[i]!, g.w, g.phase)) ?? 0;
  const maxV = Math.max(...present.flatMap((g) => report.systems.map((_, i) => value(i, g))));
  const frame: Frame = { width: 980, height: 440, left: 60, right: 300, top: 40, bottom: 50 };
  const legend = report.systems.map((s, i) => ({ label: s.label, colour: palette[i % palette.length]! }));
  const { parts, y } = axes(frame, 'Throughput by system (jobs/s, higher is better)', maxV, legend);
  const plotW = frame.width - frame.left - frame.right;
  const groupW = plotW / present.length;
  const barW = Math.min(40, (groupW * 0.8) / report.systems.length);
  present.forEach((g, gi) => {
    const x0 = frame.left + gi * groupW + (groupW - barW * report.systems.length) / 2;
    report.systems.forEach((_, si) => {
      const v = value(si, g);
      const x = x0 + si * barW;
      parts.push(
        `<rect x="${x}" y="${y(v)}" width="${barW - 2}" height="${y(0) - y(v)}" fill="${palette[si % palette.length]}"/>`,
        `<text x="${x + barW / 2 - 1}" y="${y(v) - 3}" text-anchor="middle" ${font(10)}>${kilo(v)}</text>`,
      );
    });
    parts.push(
      `<text x="${frame.left + gi * groupW + groupW / 2}" y="${frame.height - frame.bottom + 18}" text-anchor="middle" ${font()}>${g.w} ${g.phase}</text>`,
    );
  });
  return svg(frame, parts);
}

/** Lines of jobs/s against concurrency: solid for enqueue, dashed for drain. */
export function scalingChart(report: BenchReport): string | undefined {
  const levels = w4Levels(report);
  if (levels.length === 0) return undefined;
  const series = report.systems.flatMap((s, i) =>
    (['enqueue', 'drain'] as const).map((phase) => ({
      label: `${s.label} ${phase}`,
      colour: palette[i % palette.length]!,
      dash: phase === 'drain',
      points: levels.map((c) => jobsPerSec(phaseRuns(s, 'W4', phase, c))),
    })),
  );
  const maxV = Math.max(0, ...series.flatMap((s) => s.points.map((p) => p ?? 0)));
  const frame: Frame = { width: 980, height: 440, left: 60, right: 340, top: 40, bottom: 50 };
  const { parts, y } = axes(frame, 'W4: throughput by concurrency (jobs/s)', maxV, series);
  const plotW = frame.width - frame.left - frame.right;
  const x = (i: number) => frame.left + (levels.length === 1 ? plotW / 2 : (i / (levels.length - 1)) * plotW);
  levels.forEach((c, i) => {
    parts.push(
      `<text x="${x(i)}" y="${frame.height - frame.bottom + 18}" text-anchor="middle" ${font()}>c=${c}</text>`,
    );
  });
  for (const s of series) {
    const pts = s.points.flatMap((v, i) =>
      v === undefined ? [] : [`${x(i).toFixed(1)},${y(v).toFixed(1)}`],
    );
    parts.push(
      `<polyline points="${pts.join(' ')}" fill="none" stroke="${s.colour}" stroke-width="2.5"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>`,
      ...pts.map((p) => `<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="3" fill="${s.colour}"/>`),
    );
  }
  return svg(frame, parts);
}
