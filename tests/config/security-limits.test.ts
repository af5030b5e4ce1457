/**
 * SECURITY.md's "Limits and bounds" table names every configurable limit with
 * its key, default and whether a reload changes it. This holds the table to
 * the config schema: every key exists, its default is the schema's (a
 * `derived` default is one the schema leaves unset and computes), and its
 * "reload"/"restart" is what a reload does with it; the table is not empty; and it lists every
 * server-wide setting named max_….
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { needsRestart } from '../../src/config/config-view.ts';
import { configKeys, sections, snakeCase } from '../../src/config/schema.ts';
import { parseDurationMs, parseSizeBytes } from '../../src/config/units.ts';

const text = readFileSync(new URL('../../SECURITY.md', import.meta.url), 'utf8');

interface Row {
  key: string;
  defaultText: string;
  change: string;
}

function limitRows(): Row[] {
  const start = text.indexOf('## Limits and bounds');
  assert.ok(start >= 0, 'SECURITY.md has a "Limits and bounds" section');
  const end = text.indexOf('\n## ', start + 1);
  const rows: Row[] = [];
  for (const line of text.slice(start, end).split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const key = /^`([a-z_.]+)`$/.exec(cells[2] ?? '')?.[1];
    if (key === undefined) continue;
    rows.push({ key, defaultText: cells[3] ?? '', change: cells[5] ?? '' });
  }
  return rows;
}

/** The schema's default of `section.key`; throws when there is no such setting. */
function schemaDefault(key: string): unknown {
  const dot = key.lastIndexOf('.');
  const path = key.slice(0, dot);
  const name = key.slice(dot + 1);
  const section = sections.find((s) => s.path === path);
  assert.ok(section !== undefined, `${key}: no section [${path}]`);
  const entry = Object.entries(section.spec as Record<string, { default?: unknown }>).find(
    ([camel]) => snakeCase(camel) === name,
  );
  assert.ok(entry !== undefined, `${key}: no such setting in [${path}]`);
  return entry[1].default;
}

/** A default as the table writes it, in config syntax: `1000`, `16MiB`, `10s`. */
function tableValue(key: string, written: string): number {
  const raw = /^`([^`]+)`$/.exec(written)?.[1];
  assert.ok(raw !== undefined, `${key}: the default "${written}" is not one value in backticks`);
  if (/^\d+$/.test(raw)) return Number(raw);
  const parsed = key.endsWith('_ms') ? parseDurationMs(raw) : parseSizeBytes(raw);
  assert.ok(parsed.ok, `${key}: ${raw} does not parse`);
  return parsed.value;
}

test('every limit SECURITY.md names exists in the config schema with that default and reload rule', () => {
  const rows = limitRows();
  assert.ok(rows.length >= 30, `${rows.length} limits listed`);
  for (const { key, defaultText, change } of rows) {
    const schema = schemaDefault(key);
    if (defaultText === 'derived') assert.equal(schema, null, `${key}: a derived default is one left unset`);
    else assert.equal(tableValue(key, defaultText), schema, `${key}: the default`);
    assert.equal(change, needsRestart(key) ? 'restart' : 'reload', `${key}: a reload's effect`);
  }
  assert.equal(new Set(rows.map((r) => r.key)).size, rows.length, 'each key once');
});

test('every server-wide max_ setting is in the table', () => {
  const listed = new Set(limitRows().map((r) => r.key));
  // A queue's and a schedule's own settings are listed once, under queue_defaults, or not at all.
  const bounds = configKeys().filter(
    (key) => !/^(queues|queue_defaults|schedules)\b/.test(key) && /\.max_\w+$/.test(key),
  );
  assert.ok(bounds.includes('store.max_waiting_reads'), `found the bounds: ${bounds.join(', ')}`);
  assert.deepEqual(
    bounds.filter((key) => !listed.has(key)),
    [],
    'SECURITY.md lists these',
  );
});

test('the check refuses a key the schema does not have', () => {
  assert.throws(() => schemaDefault('grpc.max_streams_per_key'), /no such setting/);
  assert.throws(() => schemaDefault('nosuch.max_things'), /no section/);
});
