/** How numbers, sizes, times and durations read on screen. */

export const fmtNum = (n: number): string => n.toLocaleString('en-US');

export function fmtBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** 850 ms, 12 s, 5 min 3 s, 2 h 10 min, 3 d 4 h. */
export function fmtDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Local time as 2026-01-01 12:00:03. */
export function fmtTime(ms: number | null): string {
  if (ms === null) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** "12 s ago" or "in 5 min" relative to `nowMs`. */
export function fmtRelative(ms: number, nowMs: number): string {
  const delta = ms - nowMs;
  if (Math.abs(delta) < 1000) return 'now';
  return delta < 0 ? `${fmtDuration(-delta)} ago` : `in ${fmtDuration(delta)}`;
}

export const shortId = (id: string): string => `${id.slice(0, 8)}…${id.slice(-4)}`;

export const humanize = (text: string): string => text.replace(/_/g, ' ');
