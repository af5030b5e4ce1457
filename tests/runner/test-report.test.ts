/**
 * scripts/test-report.mjs, in-process: a check that fails (the type check, the lint)
 * is named in the summary with the first line of its output that names an error; a
 * file whose exit code says it failed fails even when every test it reported passed;
 * a file that ran no test fails; the slowest list is cut at its length; a file whose
 * process ran on after its last test is listed, longest first; the slots' idle time and
 * the run's tail, and its CPU against its cores, are summed up.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkResult,
  cpuLine,
  fileResult,
  lingerListedMs,
  slotLines,
  summary,
  type TestEvent,
} from '../../scripts/test-report.mjs';

const passed = (name: string): TestEvent => ({ passed: true, name, nesting: 0, suite: false });
const file = (name: string, durationMs: number, events: TestEvent[], code = 0) =>
  fileResult({ file: name, code, signal: null, durationMs, cpuMs: durationMs / 2, events, stderr: '' });

test('a failed check is named last, with the first line that names an error', () => {
  const typecheck = checkResult({
    file: 'npm run typecheck',
    code: 2,
    signal: null,
    durationMs: 9000,
    output:
      'Checking...\nsrc/engine/x.ts(3,7): error TS2322: Type "string" is not assignable to type "number".\n',
  });
  const lint = checkResult({
    file: 'npm run lint',
    code: 0,
    signal: null,
    durationMs: 4000,
    output: 'Checked 5 files\n',
  });
  const report = summary([typecheck, lint, file('tests/a.test.ts', 100, [passed('a')])], {
    wallMs: 9500,
    label: 'the fast tier',
  });
  assert.equal(report.ok, false);
  assert.deepEqual(report.lines.slice(-2), [
    'FAILED: 1 file of 3',
    '  npm run typecheck (exit code 2): src/engine/x.ts(3,7): error TS2322: Type "string" is not assignable to type "number".',
  ]);
  // The checks count no tests and no test files.
  assert.match(
    report.lines.at(-3) ?? '',
    /^the fast tier: 1 test in 1 file, 9\.5 s \(their processes' CPU 0\.1 s\): 1 passed/,
  );
});

test('an exit code that says failed fails the file, whatever its tests reported', () => {
  const r = file('tests/b.test.ts', 100, [passed('b')], 1);
  assert.equal(r.ok, false);
  assert.deepEqual(r.problems, ['exit code 1']);
});

test('a file that ran no test fails', () => {
  const r = file('tests/c.test.ts', 100, []);
  assert.equal(r.ok, false);
  assert.deepEqual(r.problems, ['ran no test']);
});

test('the slowest list is the longest files, longest first, cut at its length', () => {
  const results = [10, 30, 20].map((s) => file(`tests/${s}.test.ts`, s * 1000, [passed('x')]));
  const report = summary(results, { wallMs: 60_000, label: 'tests', slowest: 2 });
  assert.deepEqual(report.lines.slice(0, 3), [
    'slowest 2 of 3 files (wall time, CPU time):',
    '    30.0 s   15.0 s  tests/30.test.ts',
    '    20.0 s   10.0 s  tests/20.test.ts',
  ]);
  assert.equal(report.lines.at(-1), 'passed: every file of tests');
});

test('a file whose process ran on after its last test is listed, longest first; one that ended soon is not', () => {
  const ranOn = (name: string, afterLastTestMs: number) => ({
    ...file(name, 90_000, [passed('x')]),
    afterLastTestMs,
  });
  const results = [
    ranOn('tests/timer.test.ts', 60_000),
    ranOn('tests/quick.test.ts', lingerListedMs - 1),
    ranOn('tests/hook.test.ts', 3_000),
  ];
  const report = summary(results, { wallMs: 90_000, label: 'tests' });
  const at = report.lines.indexOf(
    'ran on after their last test (after hooks, or timers and handles left open):',
  );
  assert.ok(at > 0, report.lines.join('\n'));
  assert.deepEqual(report.lines.slice(at + 1, at + 3), [
    '    60.0 s  tests/timer.test.ts',
    '     3.0 s  tests/hook.test.ts',
  ]);
  // The list ends there: the file that ended soon after its last test is not in it.
  assert.match(report.lines[at + 3] ?? '', /^tests: 3 tests in 3 files/);
});

test("the slots' idle time counts the waits for the build; the tail lists when each slot emptied", () => {
  // Two slots over 10 s: a check 0–4 s, a group that waited 0–2 s for the build then ran to
  // 9 s, a file 4–6 s (the last to start): busy 4 + 7 + 2 s, idle 20 - 13 = 7 s, 2 s of it waiting.
  const lines = slotLines(
    [
      { label: 'npm run lint', startMs: 0, buildWaitMs: 0, endMs: 4000 },
      { label: 'system group 1 of 1', startMs: 0, buildWaitMs: 2000, endMs: 9000 },
      { label: 'tests/a.test.ts', startMs: 4000, buildWaitMs: 0, endMs: 6000 },
    ],
    { concurrency: 2, wallMs: 10_000 },
  );
  assert.deepEqual(lines, [
    "slots (2): idle 7.0 s of 20.0 s (35 %), 2.0 s of it waiting for the run's builds; the last job started at 4.0 s, then the slots emptied at 6.0, 9.0 s (the last: system group 1 of 1, 9.0 s)",
  ]);
  assert.deepEqual(slotLines([], { concurrency: 2, wallMs: 1000 }), []);
});

test("the run's CPU is put against its cores, with how busy the machine was and its load", () => {
  assert.equal(
    cpuLine({ cpuMs: 577_000, wallMs: 352_000, cores: 2, machineBusy: 0.874, load: 2.04 }),
    "CPU: the run's processes 577.0 s in 352.0 s: 164 % (of 200 % on 2 cores); the machine was 87 % busy meanwhile, load 2.0 at the end",
  );
  assert.equal(
    cpuLine({ cpuMs: 500, wallMs: 1000, cores: 1 }),
    "CPU: the run's processes 0.5 s in 1.0 s: 50 % (of 100 % on 1 core)",
  );
});
