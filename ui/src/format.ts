/**
 * How numbers, sizes, times and durations read on screen. One time format
 * everywhere: ISO-like, 24 h, local time with its UTC offset
 * (2026-12-03 14:05:09 UTC+1), with a relative time beside it ("12 s ago").
 */

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

/** The zone as an offset from UTC: UTC, UTC+1, UTC-3:30. */
export function fmtZone(date: Date): string {
  const offsetMin = -date.getTimezoneOffset();
  if (offsetMin === 0) return 'UTC';
  const sign = offsetMin > 0 ? '+' : '-';
  const abs = Math.abs(offsetMin);
  return `UTC${sign}${Math.floor(abs / 60)}${abs % 60 === 0 ? '' : `:${pad(abs % 60)}`}`;
}

/**
 * The date `ms` names, or null when no date can hold it (a Date holds at
 * most ±8.64e15 ms): formatting one would print NaN, and toISOString throws.
 */
export function dateOf(ms: number): Date | null {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** What a time no date can hold reads as. */
const outOfRange = (ms: number) => `out of range (${Number.isFinite(ms) ? `${ms} ms` : 'not a number'})`;

/** Local time as 2026-01-01 12:00:03 UTC+1 (— for none). */
export function fmtTime(ms: number | null): string {
  if (ms === null) return '—';
  const d = dateOf(ms);
  if (d === null) return outOfRange(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${fmtZone(d)}`;
}

const isoUtc = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g;

/**
 * Server text with ISO UTC times in it ("cancelled by ops at
 * 2026-12-03T13:05:09.123Z") with those times in the UI's one format, so a
 * page in local time never shows a UTC time that reads like a local one.
 */
export function localTimes(text: string): string {
  return text.replace(isoUtc, (iso) => {
    const ms = Date.parse(iso);
    return Number.isNaN(ms) ? iso : fmtTime(ms);
  });
}

/** Local time of day, 24 h: 14:05. */
export function fmtClock(ms: number): string {
  const d = dateOf(ms);
  if (d === null) return outOfRange(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** How far ahead of now a past event may seem and still read "now": the browser learns the server's clock to about 2 s. */
const pastSkewMs = 60_000;

/**
 * "12 s ago" or "in 5 min" relative to `nowMs`. `past`: the time is of
 * something that has happened (an enqueue, a failure, a worker last heard
 * from), so up to a minute ahead of `nowMs` — two clocks a little apart —
 * reads "now", never "in 2 s"; further ahead it is shown as it is (a clock
 * that far off is worth seeing).
 */
export function fmtRelative(ms: number, nowMs: number, options: { past?: boolean } = {}): string {
  const delta = ms - nowMs;
  if (Math.abs(delta) < 1000 || (options.past === true && delta > 0 && delta < pastSkewMs)) return 'now';
  return delta < 0 ? `${fmtDuration(-delta)} ago` : `in ${fmtDuration(delta)}`;
}

/** A rate per second: 0, 0.25, 3.4, 120, 1.2k. */
export function fmtRate(perSecond: number): string {
  if (perSecond === 0) return '0';
  if (perSecond >= 1000) return `${(perSecond / 1000).toFixed(1)}k`;
  if (perSecond >= 100) return String(Math.round(perSecond));
  if (perSecond >= 10) return perSecond.toFixed(1);
  return perSecond < 0.01 ? '<0.01' : perSecond.toFixed(2);
}

/**
 * The part of a job id that tells jobs apart. Ids are UUIDv7: the first 13
 * hex digits are the creation time, so every job of the same minute starts
 * alike; the last 8 are random. Lists show those with the full id on hover
 * and copy.
 */
export const shortId = (id: string): string => `…${id.slice(-8)}`;

export const humanize = (text: string): string => text.replace(/_/g, ' ');
