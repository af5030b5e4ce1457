/**
 * A time-series chart of job rates (jobs per second per finished bucket) over
 * the chosen window, drawn by uPlot on a canvas. The chart is created once and
 * fed new data on every poll; it follows its container's width. Its legend is
 * the current rates as numbers (uPlot's own legend shows values only under
 * the cursor).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { fmtClock, fmtRate } from '../format.ts';
import type { RateSnapshot } from '../types.ts';

export interface Series {
  key: keyof RateSnapshot['series'];
  label: string;
  color: string;
}

const height = 190;

function toData(snapshot: RateSnapshot, series: readonly Series[]): uPlot.AlignedData {
  const perSecond = 1000 / snapshot.bucketMs;
  const xs = snapshot.series.enqueued.map((_, i) => (snapshot.startMs + i * snapshot.bucketMs) / 1000);
  // null (a bucket before the server started) stays null: uPlot leaves a gap, no data rather than zero.
  return [xs, ...series.map((s) => snapshot.series[s.key].map((n) => (n === null ? null : n * perSecond)))];
}

const windowWords = { '5m': 'last 5 minutes', '1h': 'last hour', '24h': 'last day' } as const;

/**
 * Exactly what the rates cover: "last hour" only when the server ran the whole hour,
 * otherwise "since 21:40, when sepp started" (the rates are over that time only).
 */
export function ratesCover(
  snapshot: Pick<RateSnapshot, 'window' | 'windowMs' | 'coveredMs' | 'coveredFromMs' | 'bucketMs'>,
): string {
  if (snapshot.coveredMs + snapshot.bucketMs >= snapshot.windowMs) return windowWords[snapshot.window];
  return `since ${fmtClock(snapshot.coveredFromMs)}, when sepp started (no data before)`;
}

/** Whether the system asks for dark mode, following changes. */
function useDarkMode(): boolean {
  const query = '(prefers-color-scheme: dark)';
  const [dark, setDark] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const list = window.matchMedia(query);
    const onChange = () => setDark(list.matches);
    list.addEventListener('change', onChange);
    return () => list.removeEventListener('change', onChange);
  }, []);
  return dark;
}

export function RateChart({
  title,
  snapshot,
  series,
}: {
  title: string;
  snapshot: RateSnapshot;
  series: readonly Series[];
}) {
  const holder = useRef<HTMLDivElement>(null);
  const dark = useDarkMode();
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = holder.current;
    if (el === null) return;
    // Axis and grid colours follow the page's theme (light or dark).
    const css = getComputedStyle(document.documentElement);
    const muted = css.getPropertyValue('--muted').trim() || '#5b6472';
    const grid = css.getPropertyValue('--border').trim() || '#eef0f3';
    const options: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      cursor: { drag: { x: false, y: false } },
      legend: { show: false },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        {
          stroke: muted,
          grid: { stroke: grid },
          ticks: { stroke: grid },
          // The UI's one time format: 24 h local time.
          values: (_u, ticks) => ticks.map((t) => fmtClock(t * 1000)),
        },
        {
          stroke: muted,
          grid: { stroke: grid },
          ticks: { stroke: grid },
          size: 48,
          values: (_u, ticks) =>
            ticks.map((t) => (t >= 1000 ? `${(t / 1000).toFixed(1)}k` : String(+t.toFixed(2)))),
        },
      ],
      series: [
        { label: 'time' },
        ...series.map((s) => ({
          label: `${s.label} /s`,
          stroke: s.color,
          width: 2,
          fill: `${s.color}1a`,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? '—' : v.toFixed(2)),
        })),
      ],
    };
    plot.current = new uPlot(options, toData(snapshot, series), el);
    const resize = new ResizeObserver(() => {
      plot.current?.setSize({ width: Math.max(200, el.clientWidth), height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // Created once per colour scheme; data updates go through setData below.
  }, [dark]);

  useEffect(() => {
    plot.current?.setData(toData(snapshot, series));
  }, [snapshot, series]);

  const label = series.map((s) => s.label).join(', ');
  const windowText = ratesCover(snapshot);
  return (
    <figure class="chart card">
      <figcaption>
        {title} <span class="muted">per second, {windowText}</span>
        <span class="chart-legend">
          {series.map((s) => (
            <span key={s.key} class="chart-legend-item">
              <span class="chart-swatch" data-color={s.key} aria-hidden="true" />
              {s.label}{' '}
              <strong data-testid={`rate-${s.key}`}>{fmtRate(snapshot.current.perSecond[s.key])}</strong>/s
            </span>
          ))}
        </span>
      </figcaption>
      <div
        ref={holder}
        class="chart-canvas"
        role="img"
        aria-label={`${title}: ${label} per second, ${windowText}`}
      />
    </figure>
  );
}
