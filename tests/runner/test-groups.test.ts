/**
 * scripts/test-groups.mjs, in-process: a tier's files are split into groups of
 * decreasing time (shares n + 3 - i), and a group's events are cut into each file's (its tests, its
 * suite's duration, the CPU since the file before it ended); what follows the last
 * file that ended belongs to the file the process did not finish.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { partition, splitGroupEvents } from '../../scripts/test-groups.mjs';

test('groups of decreasing estimated time, longest files first, each group in path order', () => {
  const ms: Record<string, number> = { 'a.ts': 9, 'b.ts': 5, 'c.ts': 4, 'd.ts': 3, 'e.ts': 1 };
  const groups = partition(Object.keys(ms), 2, (f) => ms[f] ?? 0);
  assert.deepEqual(groups, [
    { files: ['a.ts', 'd.ts'], estimateMs: 12 },
    { files: ['b.ts', 'c.ts', 'e.ts'], estimateMs: 10 },
  ]);
  // Shares 5:4 of two groups, 6:5:4 of three: the last groups are the smaller ones.
  const ones = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((name) => `${name}.ts`);
  assert.deepEqual(
    partition(ones, 2, () => 1).map((g) => g.estimateMs),
    [5, 4],
  );
  assert.deepEqual(
    partition([...ones, 'j.ts', 'k.ts', 'l.ts', 'm.ts', 'n.ts', 'o.ts'], 3, () => 1).map((g) => g.estimateMs),
    [6, 5, 4],
  );
  // Never an empty group, never more groups than files.
  assert.deepEqual(
    partition(['x.ts'], 8, () => 1),
    [{ files: ['x.ts'], estimateMs: 1 }],
  );
});

test("a group's events are cut into each file's, with its suite's duration and its CPU", () => {
  const files = ['tests/a.test.ts', 'tests/b.test.ts', 'tests/c.test.ts'];
  const event = (name: string, nesting: number, fields: Record<string, unknown> = {}) => ({
    name,
    nesting,
    suite: false,
    passed: true,
    ...fields,
  });
  const suiteEnd = (name: string, durationMs: number, cpuMs: number) =>
    event(name, 0, { suite: true, durationMs, cpuMs });
  const events = [
    event('a1', 1),
    event('a2', 1),
    suiteEnd('tests/a.test.ts', 120, 900),
    event('b1', 1, { passed: false, why: 'boom' }),
    suiteEnd('tests/b.test.ts', 40, 950),
    event('c1', 1),
  ];
  const split = splitGroupEvents(files, events);
  assert.deepEqual([...split.files.keys()], ['tests/a.test.ts', 'tests/b.test.ts']);
  const a = split.files.get('tests/a.test.ts');
  assert.deepEqual(
    a?.events.map((e) => e.name),
    ['a1', 'a2', 'tests/a.test.ts'],
  );
  assert.equal(a?.durationMs, 120);
  assert.equal(a?.cpuMs, 900, "the first file's CPU includes the process's start");
  const b = split.files.get('tests/b.test.ts');
  assert.deepEqual(
    b?.events.map((e) => e.name),
    ['b1', 'tests/b.test.ts'],
  );
  assert.equal(b?.cpuMs, 50);
  // c never ended: the process stopped while it ran.
  assert.deepEqual(
    split.unfinished.map((e) => e.name),
    ['c1'],
  );
});

test('a test named like a file, inside another file, does not end that file', () => {
  const files = ['tests/a.test.ts', 'tests/b.test.ts'];
  const split = splitGroupEvents(files, [
    { name: 'tests/b.test.ts', nesting: 1, suite: false, passed: true },
    { name: 'tests/a.test.ts', nesting: 0, suite: true, passed: true, durationMs: 5, cpuMs: 10 },
  ]);
  assert.deepEqual([...split.files.keys()], ['tests/a.test.ts']);
  assert.equal(split.files.get('tests/a.test.ts')?.events.length, 2);
});
