// A node:test reporter that writes one JSON line per finished test or suite (a
// top-level one with the process's CPU time so far, which cuts a group's CPU into its
// files: scripts/test-groups.mjs), for
// scripts/run-tests.mjs: it counts them and, when a file fails, names the first
// reason in the run's closing summary; and, once the file's tests are done, a last
// line with the CPU time its process and the processes it waited for used, and how
// long the process ran on after its last top-level test ended (its `after` hooks, and
// any timer or handle left open, which node:test waits for before it ends). The
// person reading the run sees the spec reporter; this one goes to a file
// (--test-reporter-destination).
import { readFileSync } from 'node:fs';

/** The first line of what went wrong: a hook's or test's own error, not node:test's wrapper. */
function firstLine(error) {
  if (error === undefined || error === null) return '';
  const inner = error.code === 'ERR_TEST_FAILURE' && error.cause !== undefined ? error.cause : error;
  const text = inner instanceof Error ? `${inner.message}` : String(inner);
  return text.split('\n').find((line) => line.trim() !== '') ?? text;
}

/**
 * CPU milliseconds of this process and of its waited-for children (utime, stime,
 * cutime, cstime of /proc/self/stat, in Linux's 100 ticks a second); undefined
 * elsewhere.
 */
function cpuMs() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14-17 of stat(5); `fields` starts at field 3.
    return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) * 10;
  } catch {
    return undefined;
  }
}

/**
 * The CPU at a group's file's end, taken by the group's entry in an `after` hook of the
 * file's suite (scripts/test-groups.mjs), by suite name. This reporter reads its events
 * from a stream, so it samples late whenever the tests keep the thread busy: a file whose
 * tests run synchronously had its CPU counted to the file before it (config-fuzz: 0.0 s).
 * The hook runs as the suite ends, before the next file starts. A global, not this
 * module's state: the entry and node:test may load this module under different URLs.
 */
const suiteEnds = Symbol.for('sepp.test.suiteEndCpuMs');

/** Records the CPU now as suite `name`'s end (a group entry's hook). */
export function recordSuiteEnd(name) {
  globalThis[suiteEnds] ??= new Map();
  globalThis[suiteEnds].set(name, cpuMs());
}

/** The CPU at top-level test or suite `name`'s end: recorded by its hook, else now. */
function cpuAtEnd(name) {
  return globalThis[suiteEnds]?.get(name) ?? cpuMs();
}

export default async function* eventsReporter(source) {
  let lastTestEndedMs;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    if (data.nesting === 0) lastTestEndedMs = performance.now();
    const error = data.details?.error;
    yield `${JSON.stringify({
      passed: event.type === 'test:pass',
      name: data.name,
      nesting: data.nesting,
      suite: data.details?.type === 'suite',
      skip: data.skip === undefined ? undefined : data.skip === true ? '' : String(data.skip),
      todo: data.todo === undefined ? undefined : data.todo === true ? '' : String(data.todo),
      durationMs: data.details?.duration_ms,
      cpuMs: data.nesting === 0 ? cpuAtEnd(data.name) : undefined,
      failureType: error?.failureType,
      why: error === undefined ? undefined : firstLine(error),
    })}\n`;
  }
  const afterLastTestMs =
    lastTestEndedMs === undefined ? undefined : Math.round(performance.now() - lastTestEndedMs);
  yield `${JSON.stringify({ cpuMs: cpuMs(), afterLastTestMs })}\n`;
}
