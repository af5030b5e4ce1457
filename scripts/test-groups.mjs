// The fast tier's files run in a few processes, not one each (scripts/run-tests.mjs
// --tier fast). A group's process imports its files one after another, each inside a
// suite named by its path, so a file's hooks and tests stay its own (node:test scopes
// what a module registers to the suite that imports it), while the module graph — the
// server, the SDK, the sources tsx compiled — loads once per group instead of once per
// file: that loading was most of the fast tier's CPU.
//
// What a file changes for the whole process (process-wide handlers, OpenTelemetry's
// globals) would reach the files after it: such a file runs alone (`runsAlone` in
// scripts/test-tiers.mjs, with the reason).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * `files` in `count` groups of decreasing estimated time, longest files first, each onto the
 * group least full for its share; a group lists its files in path order. Group i of n gets
 * the share n + 3 - i (4 groups: 7:6:5:4; 6: 9:8:7:6:5:4), not equal ones: the runner
 * starts the longest job first, so the first and largest groups take the slots while the run
 * waits for its build, and the queue ends with the smaller ones, which fill the slots that
 * empty first instead of one group of the same size as the rest running on alone. A
 * simulation of the run's schedule on a quiet run's durations, with each file's time off by
 * up to 25 % (300 draws; /work/wt/status-cold-32.md), put the tail (the last slot emptying
 * after the others) at 2 s instead of 26 s and the end 16 s earlier.
 * @param {readonly string[]} files
 * @param {number} count
 * @param {(file: string) => number} estimateMs
 */
export function partition(files, count, estimateMs) {
  const n = Math.max(1, Math.min(count, files.length));
  const groups = Array.from({ length: n }, (_, i) => ({ files: [], estimateMs: 0, share: n + 3 - i }));
  for (const file of [...files].sort((a, b) => estimateMs(b) - estimateMs(a))) {
    const lightest = groups.reduce((a, b) => (b.estimateMs / b.share < a.estimateMs / a.share ? b : a));
    lightest.files.push(file);
    lightest.estimateMs += estimateMs(file);
  }
  return groups
    .filter((g) => g.files.length > 0)
    .map((g) => ({ files: g.files.sort(), estimateMs: g.estimateMs }));
}

/**
 * Writes a group's entry module: one suite per file, named by its path, importing it, with a
 * last `after` hook that records the process's CPU as the file ends (recordSuiteEnd in
 * scripts/test-events-reporter.mjs: the reporter itself would sample late after tests that
 * run synchronously); and a last hook that runs what the files registered for the group's
 * end (`sepp.test.groupEnd`).
 */
export function writeGroupEntry(path, files, root) {
  const reporter = pathToFileURL(join(import.meta.dirname, 'test-events-reporter.mjs')).href;
  const suites = files.map((file) => {
    const name = JSON.stringify(file);
    const url = JSON.stringify(pathToFileURL(join(root, file)).href);
    // Registered after the file's own `after` hooks, so it runs after them.
    return `describe(${name}, async () => {\n  try {\n    await import(${url});\n  } finally {\n    after(() => recordSuiteEnd(${name}));\n  }\n});`;
  });
  // What the files share for the whole group (tests/helpers/browser.ts: one Chromium) is closed
  // by the functions they push here, after the group's last file.
  const groupEnd =
    "const groupEnd = [];\nglobalThis[Symbol.for('sepp.test.groupEnd')] = groupEnd;\n" +
    'after(async () => {\n  for (const end of groupEnd) await end();\n});';
  const imports = `import { after, describe } from 'node:test';\nimport { recordSuiteEnd } from ${JSON.stringify(reporter)};`;
  writeFileSync(path, `${imports}\n${groupEnd}\n${suites.join('\n')}\n`);
}

/**
 * A group's events (scripts/test-events-reporter.mjs) cut into each file's. The files run
 * one after another and a suite ends after its tests, so a file's events are those since
 * the previous file's suite ended, up to its own suite's end (the last of them). A file's
 * CPU is the process's CPU at its suite's end less that at the previous one's (the first
 * file's includes the process's start).
 * @param {readonly string[]} files
 * @param {ReadonlyArray<Record<string, any>>} events
 * @returns {{ files: Map<string, { events: object[], durationMs: number, cpuMs: number | undefined }>,
 *   unfinished: object[] }} the files whose suite ended, and the events after the last such end
 *   (of a file the process never finished)
 */
export function splitGroupEvents(files, events) {
  const names = new Set(files);
  const ended = new Map();
  let pending = [];
  let cpuBefore = 0;
  for (const event of events) {
    pending.push(event);
    if (event.nesting !== 0 || !event.suite || !names.has(event.name) || ended.has(event.name)) continue;
    const cpuMs = event.cpuMs === undefined ? undefined : event.cpuMs - cpuBefore;
    cpuBefore = event.cpuMs ?? cpuBefore;
    ended.set(event.name, { events: pending, durationMs: event.durationMs ?? 0, cpuMs });
    pending = [];
  }
  return { files: ended, unfinished: pending };
}
