/**
 * Durations and sizes as people write them. A setting whose name ends in `_ms`
 * takes an integer of milliseconds or a string with exactly one unit ("30s",
 * "12h"); one ending in `_bytes` takes an integer of bytes or a string with a
 * binary unit ("512KiB", "4MiB"). One number and one unit only: "1h30m" and
 * decimal "MB" are refused, so no value can be read two ways.
 */

/** Durations are shown as the engine's messages show them: one rendering for both layers. */
export { formatDurationMs } from '../engine/checks.ts';

const durationUnitsMs: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const sizeUnitsBytes: Readonly<Record<string, number>> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

/** What a size unit written another way most likely meant. */
const binaryUnitFor: Readonly<Record<string, string>> = {
  b: 'B',
  k: 'KiB',
  kb: 'KiB',
  kib: 'KiB',
  m: 'MiB',
  mb: 'MiB',
  mib: 'MiB',
  g: 'GiB',
  gb: 'GiB',
  gib: 'GiB',
};

export type UnitParse = { ok: true; value: number } | { ok: false; message: string };

const quantityRe = /^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$/;

function parseQuantity(
  text: string,
  units: Readonly<Record<string, number>>,
  what: { noun: string; base: string; example: string; hint: (unit: string) => string | undefined },
): UnitParse {
  const match = quantityRe.exec(text.trim());
  const unitList = Object.keys(units).join(', ');
  const usage = `write one number with one unit (${unitList}), e.g. "${what.example}", or an integer of ${what.base}`;
  if (match === null) return { ok: false, message: `"${text}" is not a ${what.noun}; ${usage}` };
  const [, digits = '', unit = ''] = match;
  const factor = units[unit];
  if (factor === undefined) {
    const hint = what.hint(unit);
    return { ok: false, message: `"${text}" has an unknown unit "${unit}"; ${hint ?? usage}` };
  }
  const value = Number(digits) * factor;
  if (!Number.isSafeInteger(value)) {
    return { ok: false, message: `"${text}" is not a whole number of ${what.base}; ${usage}` };
  }
  return { ok: true, value };
}

/** Parses "250ms", "30s", "5m", "12h", "7d" (and "1.5s") into milliseconds. */
export function parseDurationMs(text: string): UnitParse {
  return parseQuantity(text, durationUnitsMs, {
    noun: 'duration',
    base: 'milliseconds',
    example: '30s',
    hint: (unit) => {
      const lower = unit.toLowerCase();
      if (durationUnitsMs[lower] !== undefined) return `units are lower case: use "${lower}"`;
      return undefined;
    },
  });
}

/** Parses "512B", "64KiB", "4MiB", "1GiB" into bytes. */
export function parseSizeBytes(text: string): UnitParse {
  return parseQuantity(text, sizeUnitsBytes, {
    noun: 'size',
    base: 'bytes',
    example: '4MiB',
    hint: (unit) => {
      // KB/MB/GB mean powers of 1000 to some people and of 1024 to others;
      // only the binary units are accepted so the value is never in doubt.
      const suggestion = binaryUnitFor[unit.toLowerCase()];
      if (suggestion !== undefined) return `use the binary unit "${suggestion}" (powers of 1024)`;
      return undefined;
    },
  });
}

/** The shortest exact rendering of a size: 1048576 → "1MiB", 1000 → "1000B". */
export function formatSizeBytes(bytes: number): string {
  for (const [unit, factor] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return `${bytes}B`;
}
