/**
 * scripts/run-tests.mjs, run on fixture test files: whatever went wrong in a file
 * (a failed assertion, a `before` hook that cancels its suite, a module that cannot
 * load, a process that exits midway) is named in the last lines of the output with
 * the first line of why, the exit code agrees with those lines, the slowest files
 * are listed, a skipped test is listed with its reason, a tier holds only its
 * own files, and in a group of files sharing a process (--tier fast) each file is
 * reported as if it ran alone, and what the files register for the group's end runs
 * after the last one.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runsAlone, systemTier, tierOf } from '../../scripts/test-tiers.mjs';
import { repoRoot } from '../helpers/cli.ts';

const fixtures: Record<string, string> = {
  'pass.test.ts': [
    "import { test } from 'node:test';",
    'test("waits a little", async () => { await new Promise((r) => setTimeout(r, 100)); });',
  ].join('\n'),
  'fail.test.ts': [
    "import assert from 'node:assert/strict';",
    "import { test } from 'node:test';",
    'test("adds", () => { assert.equal(1 + 1, 3, "one and one make three"); });',
  ].join('\n'),
  'hook.test.ts': [
    "import { before, describe, test } from 'node:test';",
    'describe("clients/python", () => {',
    '  before(() => { throw new Error("python3 lacks pytest (apt-get install python3-pytest)\\nmore"); });',
    '  test("one", () => {});',
    '  test("two", () => {});',
    '});',
  ].join('\n'),
  'broken.test.ts': "import { missing } from './no-such-module.ts';\nmissing();",
  'exits.test.ts': "import { test } from 'node:test';\ntest('exits midway', () => { process.exit(3); });",
  'skip.test.ts': [
    "import { test } from 'node:test';",
    'test("needs sqlite3", { skip: "sqlite3 is not installed" }, () => {});',
    'test("runs", () => {});',
  ].join('\n'),
};

/**
 * The loader the runner gives the fixtures' processes instead of tsx (SEPP_TEST_IMPORT): they
 * are plain JavaScript in .test.ts files, and tsx was ~0.3 s of each one's ~0.4 s of CPU (16
 * processes). One run keeps tsx, as every real run has it (the group of five below).
 */
const fixtureLoader = [
  "import { register } from 'node:module';",
  `register(${JSON.stringify(
    `data:text/javascript,${encodeURIComponent(
      'export function load(url, context, next) { return next(url, url.endsWith(".ts") ? { ...context, format: "module" } : context); }',
    )}`,
  )});`,
].join('\n');
let loader = '';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  lastLines: string[];
}

function runner(dir: string, args: string[] = [], env: Record<string, string> = {}): Promise<Run> {
  // The report's length is the runner's default here, whatever the caller's npm test was asked for.
  const { SEPP_TEST_SLOWEST: _slowest, ...inherited } = process.env;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/run-tests.mjs', ...args],
      {
        cwd: repoRoot,
        // NODE_TEST_CONTEXT as node:test sets it in the files it runs (`npx tsx --test` on
        // this file): the runner's files must still report to the runner, alone or in `npm test`.
        env: {
          ...inherited,
          NODE_TEST_CONTEXT: 'child-v8',
          SEPP_TEST_DIR: dir,
          SEPP_TEST_IMPORT: loader,
          ...env,
        },
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr, lastLines: stdout.trimEnd().split('\n').slice(-6) });
      },
    );
  });
}

/** The verdict of a run's last `count` lines, and the line naming each failed file. */
function failures(run: Run, count: number): { verdict: string | undefined; line: (name: string) => string } {
  const [verdict, ...failed] = run.lastLines.slice(-count);
  return {
    verdict,
    line: (name) => failed.find((l) => l.includes(`/${name} (`)) ?? `no line for ${name}`,
  };
}

/** fail.test.ts and hook.test.ts are named with why, alone or in a group. */
function assertFailAndHook(line: (name: string) => string): void {
  assert.match(line('fail.test.ts'), /\(1 failed, exit code 1\): adds: one and one make three$/);
  assert.match(
    line('hook.test.ts'),
    /\(2 cancelled, exit code 1\): clients\/python: python3 lacks pytest \(apt-get install python3-pytest\)$/,
  );
}

/** A file that passes, then one whose test starts `sleep 600`, writes its pid, and never ends. */
function hangFixtures(): { hangDir: string; pidFile: string } {
  const hangDir = mkdtempSync(join(tmpdir(), 'sepp-runner-hang-'));
  const pidFile = join(hangDir, 'child.pid');
  writeFileSync(join(hangDir, 'a-pass.test.ts'), `${fixtures['pass.test.ts']}\n`);
  writeFileSync(
    join(hangDir, 'b-hangs.test.ts'),
    [
      "import { spawn } from 'node:child_process';",
      "import { writeFileSync } from 'node:fs';",
      "import { test } from 'node:test';",
      'test("hangs", async () => {',
      "  const child = spawn('sleep', ['600'], { stdio: 'ignore' });",
      `  writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));`,
      '  await new Promise(() => {});',
      '});',
    ].join('\n'),
  );
  return { hangDir, pidFile };
}

/** The process ends (gone, or a zombie nobody waits for: its parent was killed too); a SIGKILL lands at once, 5 s is a hang guard. */
async function assertEnded(pid: number): Promise<void> {
  const stat = `/proc/${pid}/stat`;
  let state = '';
  for (let waited = 0; waited < 5000; waited += 50) {
    state = existsSync(stat) ? (readFileSync(stat, 'utf8').split(' ')[2] ?? '') : 'gone';
    if (state === 'gone' || state === 'Z') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`process ${pid} still runs (state ${state})`);
}

// The tests run at once: each runs the runner on fixtures of its own (or reads the shared ones),
// and mostly waits for its processes — one at a time they took 37 s, most of it waiting.
describe('scripts/run-tests.mjs', { timeout: 180_000, concurrency: true }, () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-runner-'));
    for (const [name, text] of Object.entries(fixtures)) writeFileSync(join(dir, name), `${text}\n`);
    loader = join(dir, 'loader.mjs');
    writeFileSync(loader, `${fixtureLoader}\n`);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('every file that failed, was cancelled or could not run is in the last lines, and the exit code is 1', async () => {
    const run = await runner(dir);
    assert.equal(run.code, 1, run.stdout);
    const { verdict, line } = failures(run, 5);
    assert.equal(verdict, 'FAILED: 4 files of 6', run.stdout);
    assertFailAndHook(line);
    assert.match(
      line('broken.test.ts'),
      /\(exit code 1\): Error \[ERR_MODULE_NOT_FOUND\]: Cannot find module '\S+\/no-such-module\.ts' imported from \S+\/broken\.test\.ts$/,
    );
    assert.match(
      line('exits.test.ts'),
      /\(exit code 3\): the process ended \(exit code 3\) before reporting a test/,
    );
    assert.match(
      run.stdout,
      /\ntests: 6 tests in 6 files, [\d.]+ s \(their processes' CPU [\d.]+ s\): 2 passed, 1 failed, 2 cancelled, 1 skipped, 0 todo\n/,
    );
    assert.match(
      run.stdout,
      /\nskipped \(a skipped test checks nothing\):\n {2}\S+\/skip\.test\.ts › needs sqlite3: sqlite3 is not installed\n/,
    );
    // The files by duration, slowest first; each file's output is printed whole, under its name.
    const slowest =
      run.stdout.split('\nslowest 6 of 6 files (wall time, CPU time):\n')[1]?.split('\n').slice(0, 6) ?? [];
    // Wall time, then CPU time (none for a file whose process ended before its reporter did).
    const seconds = slowest.map((l) => Number(/^ +([\d.]+) s +(?:[\d.]+ s)? {2}\S+\.test\.ts$/.exec(l)?.[1]));
    assert.deepEqual(
      slowest.map((l) => l.replace(/.*\//, '')).sort(),
      Object.keys(fixtures).sort(),
      run.stdout,
    );
    assert.deepEqual(
      seconds,
      [...seconds].sort((a, b) => b - a),
    );
    // With when it ran in the run, for the summary's account of the slots.
    assert.match(
      run.stdout,
      /\n── \S+\/fail\.test\.ts: FAILED \(1 failed, exit code 1\), [\d.]+ s \(at [\d.]+–[\d.]+ s of the run\)\n/,
    );
    // Where the slots and the CPU went (two slots: no --tier).
    assert.match(
      run.stdout,
      /\nslots \(2\): idle [\d.]+ s of [\d.]+ s \(\d+ %\); the last job started at [\d.]+ s, then the slots emptied at [\d.]+, [\d.]+ s \(the last: \S+\.test\.ts, [\d.]+ s\)\n/,
    );
    assert.match(
      run.stdout,
      /\nCPU: the run's processes [\d.]+ s in [\d.]+ s: \d+ % \(of \d+ % on \d+ cores?\); the machine was \d+ % busy meanwhile, load [\d.]+ at the end\n/,
    );
  });

  test('a run where every file passes says so last and exits 0', async () => {
    const run = await runner(dir, ['pass.test', 'skip.test']);
    assert.equal(run.code, 0, run.stdout);
    assert.equal(run.lastLines.at(-1), 'passed: every file of tests');
    assert.match(
      run.lastLines.at(-2) ?? '',
      /^tests: 3 tests in 2 files, [\d.]+ s \(their processes' CPU [\d.]+ s\): 2 passed, 0 failed, 0 cancelled, 1 skipped/,
    );
  });

  test('in one process (--tier fast groups the files), each file is reported as if it ran alone', async () => {
    // Through tsx, as a real run: a group's entry imports its .ts files.
    const run = await runner(
      dir,
      ['--tier', 'fast', 'pass.test', 'fail.test', 'hook.test', 'broken.test', 'skip.test'],
      { SEPP_TEST_IMPORT: 'tsx' },
    );
    assert.equal(run.code, 1, run.stdout);
    assert.match(
      run.stdout,
      /\n── group 1 of 1, 5 files: 3 FAILED, [\d.]+ s \(at [\d.]+–[\d.]+ s of the run\)\n/,
    );
    const { verdict, line } = failures(run, 4);
    assert.equal(verdict, 'FAILED: 3 files of 5', run.stdout);
    assertFailAndHook(line);
    assert.match(line('broken.test.ts'), /Cannot find module '\.\/no-such-module\.ts'/);
    assert.match(
      run.stdout,
      /\nthe fast tier: 6 tests in 5 files, [\d.]+ s \(their processes' CPU [\d.]+ s\): 2 passed, 1 failed, 2 cancelled, 1 skipped, 0 todo\n/,
    );
    assert.match(run.stdout, /\n {3}\S+\/pass\.test\.ts: ok, [\d.]+ s\n/);
  });

  test("in a group, a file whose tests keep the thread busy gets its own CPU, not the file's before it", async () => {
    // The events reporter reads from a stream, so it used to sample a file's end only once the
    // next file's synchronous tests let it run: config-fuzz was listed at 0.0 s. Its own dir:
    // the other tests run every fixture in theirs.
    const busyDir = mkdtempSync(join(tmpdir(), 'sepp-runner-busy-'));
    try {
      writeFileSync(join(busyDir, 'a-pass.test.ts'), `${fixtures['pass.test.ts']}\n`);
      writeFileSync(
        join(busyDir, 'b-busy.test.ts'),
        [
          "import { test } from 'node:test';",
          '// 300 ms of CPU without yielding, counted by the process itself (not by the clock).',
          'test("busy", () => {',
          '  const start = process.cpuUsage();',
          '  for (let used = 0; used < 300_000; ) { const u = process.cpuUsage(start); used = u.user + u.system; }',
          '});',
        ].join('\n'),
      );
      const run = await runner(busyDir, ['--tier', 'fast']);
      assert.equal(run.code, 0, run.stdout);
      assert.match(run.stdout, /\n── group 1 of 1, 2 files: ok/, run.stdout);
      const cpu = (name: string) =>
        Number(new RegExp(` ([\\d.]+) s {2}\\S+/${name}\\n`).exec(run.stdout)?.[1] ?? Number.NaN);
      // At least its 300 ms (the list shows tenths of a second; /proc counts 10 ms ticks).
      assert.ok(cpu('b-busy.test.ts') >= 0.25, run.stdout);
    } finally {
      rmSync(busyDir, { recursive: true, force: true });
    }
  });

  test("a file that ends its group's process fails, and so does every file after it, not run", async () => {
    // In path order: exits.test.ts runs first and ends the process (process.exit(3)).
    const run = await runner(dir, ['--tier', 'fast', 'pass.test', 'exits.test', 'skip.test']);
    assert.equal(run.code, 1, run.stdout);
    const { verdict, line } = failures(run, 4);
    assert.equal(verdict, 'FAILED: 3 files of 3', run.stdout);
    assert.match(
      line('exits.test.ts'),
      /\(exit code 3\): the process ended \(exit code 3\) before reporting a test/,
    );
    for (const name of ['pass.test.ts', 'skip.test.ts']) {
      assert.match(
        line(name),
        /\(exit code 3\): not run: its group's process ended \(exit code 3\) while \S+\/exits\.test\.ts ran$/,
      );
    }
  });

  test("a process still running at the timeout is killed with what it started, and its group's files are named", async () => {
    const { hangDir, pidFile } = hangFixtures();
    try {
      // 0.2 minutes: long enough for both files to start on a loaded machine.
      const run = await runner(hangDir, ['--tier', 'fast'], { SEPP_TEST_TIMEOUT_MINUTES: '0.2' });
      assert.equal(run.code, 1, run.stdout);
      const killed = 'killed by SIGKILL: still running after 0.2 min (SEPP_TEST_TIMEOUT_MINUTES)';
      assert.match(run.stdout, /\n {3}\S+\/a-pass\.test\.ts: ok, [\d.]+ s\n/);
      // The file that hung, and the group with every file it held.
      const { verdict, line } = failures(run, 3);
      assert.equal(verdict, 'FAILED: 2 files of 3', run.stdout);
      assert.ok(line('b-hangs.test.ts').includes(`(${killed})`), run.stdout);
      const group = run.lastLines.find((l) => l.trim().startsWith('group 1 of 1 (')) ?? '';
      assert.match(group, /^ *group 1 of 1 \(\S+\/a-pass\.test\.ts, \S+\/b-hangs\.test\.ts\) /);
      assert.ok(group.includes(`(${killed})`), run.stdout);
      await assertEnded(Number(readFileSync(pidFile, 'utf8')));
    } finally {
      rmSync(hangDir, { recursive: true, force: true });
    }
  });

  test('SIGTERM to the runner (a cancelled CI job) ends the processes it started, and theirs', async () => {
    const { hangDir, pidFile } = hangFixtures();
    try {
      const runner = spawn(process.execPath, ['scripts/run-tests.mjs', '--tier', 'fast'], {
        cwd: repoRoot,
        env: { ...process.env, SEPP_TEST_DIR: hangDir, SEPP_TEST_IMPORT: loader },
        stdio: 'ignore',
      });
      const exited = new Promise<number | null>((resolve) => runner.on('exit', (code) => resolve(code)));
      // The hanging test has started its child once the file holds a pid (a hang guard of 120 s).
      for (let waited = 0; !existsSync(pidFile) || readFileSync(pidFile, 'utf8') === ''; waited += 50) {
        assert.ok(waited < 120_000, 'the hanging test never started');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      runner.kill('SIGTERM');
      assert.equal(await exited, 143);
      await assertEnded(Number(readFileSync(pidFile, 'utf8')));
    } finally {
      rmSync(hangDir, { recursive: true, force: true });
    }
  });

  test('both tiers in one run (npm test): one queue, longest first, each group in its own tier', async () => {
    const both = mkdtempSync(join(tmpdir(), 'sepp-runner-tiers-'));
    try {
      // Each file checks the tier its process was given (the helpers refuse processes in the fast tier).
      const checksTier = (tier: string) =>
        [
          "import assert from 'node:assert/strict';",
          "import { test } from 'node:test';",
          `test("runs in the ${tier} tier", () => { assert.equal(process.env.SEPP_TEST_TIER, "${tier}"); });`,
        ].join('\n');
      writeFileSync(join(both, 'a-fast.test.ts'), `${checksTier('fast')}\n`);
      writeFileSync(join(both, 'b-fast.test.ts'), `${checksTier('fast')}\n`);
      writeFileSync(join(both, 'c-system.test.ts'), `${checksTier('system')}\n`);
      writeFileSync(join(both, 'system-tier.json'), '["c-system.test.ts"]\n');
      // One at a time, so the order the groups ran in is the order they are printed in.
      const run = await runner(both, ['--tier', 'fast', '--tier', 'system'], { SEPP_TEST_CONCURRENCY: '1' });
      assert.equal(run.code, 0, run.stdout);
      const headings = run.stdout.split('\n').filter((l) => l.startsWith('── '));
      // Without a duration on record a system-tier file is estimated longer: its group starts first.
      assert.deepEqual(
        headings.map((h) => h.replace(/, [\d.]+ s \(at [\d.]+–[\d.]+ s of the run\)$/, '')),
        ['── system group 1 of 1, 1 file: ok', '── fast group 1 of 1, 2 files: ok'],
        run.stdout,
      );
      assert.match(run.stdout, /\nthe fast tier: 2 tests in 2 files, their processes' CPU [\d.]+ s\n/);
      assert.match(run.stdout, /\nthe system tier: 1 test in 1 file, their processes' CPU [\d.]+ s\n/);
      assert.match(
        run.stdout,
        /\nthe fast and system tiers: 3 tests in 3 files, [\d.]+ s .*: 3 passed, 0 failed/,
      );
      assert.equal(run.lastLines.at(-1), 'passed: every file of the fast and system tiers');
    } finally {
      rmSync(both, { recursive: true, force: true });
    }
  });

  test("what a group's files register for the group's end runs after its last file; alone, there is none", async () => {
    const groupDir = mkdtempSync(join(tmpdir(), 'sepp-runner-group-end-'));
    try {
      const log = join(groupDir, 'log');
      const append = (line: string) =>
        `appendFileSync(${JSON.stringify(log)}, ${JSON.stringify(`${line}\n`)})`;
      writeFileSync(
        join(groupDir, 'a-shares.test.ts'),
        [
          "import { appendFileSync } from 'node:fs';",
          "import { test } from 'node:test';",
          "const groupEnd = globalThis[Symbol.for('sepp.test.groupEnd')];",
          `test('a', () => { if (Array.isArray(groupEnd)) groupEnd.push(() => ${append('end')}); else ${append('alone')}; ${append('a')}; });`,
        ].join('\n'),
      );
      writeFileSync(
        join(groupDir, 'b-after.test.ts'),
        `import { appendFileSync } from 'node:fs';\nimport { test } from 'node:test';\ntest('b', () => { ${append('b')}; });\n`,
      );
      const grouped = await runner(groupDir, ['--tier', 'fast']);
      assert.equal(grouped.code, 0, grouped.stdout);
      assert.match(grouped.stdout, /\n── group 1 of 1, 2 files: ok/);
      assert.equal(readFileSync(log, 'utf8'), 'a\nb\nend\n');
      rmSync(log);
      const alone = await runner(groupDir, ['a-shares']);
      assert.equal(alone.code, 0, alone.stdout);
      assert.equal(readFileSync(log, 'utf8'), 'alone\na\n');
    } finally {
      rmSync(groupDir, { recursive: true, force: true });
    }
  });

  test('an unknown tier is refused with the tiers there are', async () => {
    const run = await runner(dir, ['--tier', 'quick']);
    assert.equal(run.code, 2);
    assert.equal(run.stderr, '--tier quick: the tiers are fast and system\n');
  });

  test('the system tier lists only test files that exist, and the rest is the fast tier', () => {
    const all: string[] = [];
    const walk = (at: string) => {
      for (const name of readdirSync(join(repoRoot, at))) {
        const path = `${at}/${name}`;
        if (name === 'artifacts') continue;
        if (statSync(join(repoRoot, path)).isDirectory()) walk(path);
        else if (name.endsWith('.test.ts')) all.push(path);
      }
    };
    walk('tests');
    const listed = [...Object.keys(systemTier), ...Object.keys(runsAlone)];
    assert.deepEqual(
      listed.filter((f) => !all.includes(f)),
      [],
      'scripts/test-tiers.mjs names files that do not exist',
    );
    assert.ok(all.some((f) => tierOf(f) === 'fast') && all.some((f) => tierOf(f) === 'system'));
    // The durations a fresh clone (CI) orders its first run by: of files that exist.
    const baseline = JSON.parse(readFileSync(join(repoRoot, 'scripts', 'test-durations.json'), 'utf8'));
    assert.deepEqual(
      Object.keys(baseline).filter((f) => !all.includes(f)),
      [],
      'scripts/test-durations.json names files that do not exist',
    );
    assert.equal(tierOf('tests/runner/run-tests.test.ts'), 'system', 'this file starts processes');
  });
});
