import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatDurationMs,
  formatSizeBytes,
  parseDurationMs,
  parseSizeBytes,
} from '../../src/config/units.ts';

test('durations: one number, one unit', () => {
  const cases: [string, number][] = [
    ['250ms', 250],
    ['30s', 30_000],
    ['1.5s', 1500],
    ['5m', 300_000],
    ['12h', 43_200_000],
    ['7d', 604_800_000],
    ['0s', 0],
    [' 10 s ', 10_000],
  ];
  for (const [text, ms] of cases) assert.deepEqual(parseDurationMs(text), { ok: true, value: ms }, text);
  for (const text of ['1h30m', '10', 's', '-1s', '1.5ms', '1w', '2H', '']) {
    assert.equal(parseDurationMs(text).ok, false, text);
  }
});

test('sizes: binary units only', () => {
  const cases: [string, number][] = [
    ['512B', 512],
    ['64KiB', 65_536],
    ['4MiB', 4_194_304],
    ['1GiB', 1_073_741_824],
    ['1.5KiB', 1536],
  ];
  for (const [text, bytes] of cases) assert.deepEqual(parseSizeBytes(text), { ok: true, value: bytes }, text);
  for (const text of ['4MB', '4mb', '4M', '1.1B', '4 megabytes', '4096']) {
    assert.equal(parseSizeBytes(text).ok, false, text);
  }
  const mb = parseSizeBytes('4MB');
  assert.ok(!mb.ok && /use the binary unit "MiB"/.test(mb.message));
});

test('formatting picks the largest exact unit and round-trips', () => {
  assert.equal(formatDurationMs(3_600_000), '1h');
  assert.equal(formatDurationMs(90_000), '90s');
  assert.equal(formatDurationMs(1500), '1500ms');
  assert.equal(formatDurationMs(0), '0ms');
  assert.equal(formatSizeBytes(1_048_576), '1MiB');
  assert.equal(formatSizeBytes(1000), '1000B');
  for (const ms of [0, 1, 999, 1000, 61_000, 86_400_000 * 3650]) {
    assert.deepEqual(parseDurationMs(formatDurationMs(ms)), { ok: true, value: ms });
  }
  for (const bytes of [0, 1, 1023, 1024, 4_259_840, 64 * 1024 ** 3]) {
    assert.deepEqual(parseSizeBytes(formatSizeBytes(bytes)), { ok: true, value: bytes });
  }
});
