#!/usr/bin/env node
// Runs tests/**/*.test.ts in node processes with tsx as the loader and node:test's spec
// reporter, two processes at a time (three in the system tier; SEPP_TEST_CONCURRENCY), and ends with a summary:
// the slowest files, the counts, and every file that failed, was cancelled or could not
// run with the first line of why. The exit code is 0 exactly when that summary says
// "passed". With --tier the files of the tier share up to SEPP_TEST_GROUPS (default 4 in
// the fast tier, 6 in the system tier; 0 for none) processes (scripts/test-groups.mjs), but those that must run alone
// (scripts/test-tiers.mjs); otherwise each file runs in a process of its own.
//
// Usage: node scripts/run-tests.mjs [--tier fast|system]... [--checks] [substring filter...]
//   --tier    only the files of that tier (scripts/test-tiers.mjs says which and why);
//             given twice, both tiers in one queue (`npm test`)
//   --checks  also the type check and the lint (`npm run typecheck`, `npm run lint`),
//             run beside the files and summed up with them
//   filters   only the files whose path contains one of them
//
// - A file's output is printed whole when it ends, so two files never interleave, under a
//   heading that says when in the run it ran; the summary says where the slots went (idle,
//   waiting for the run's builds, the tail) and the CPU the run's processes used against the cores.
// - Files start longest first, by the durations of earlier runs on this machine
//   (node_modules/.cache/sepp-tests/durations.json), so the longest does not start last.
// - When a selected file drives Chromium, the admin UI is built first if stale (its files
//   would otherwise each check, and two groups' first files rebuild it at once).
// - When a selected file starts `sepp` processes, the server and CLI are bundled once
//   (build.mjs --bundle-only; with the single executable when a file runs that:
//   SEPP_SEA_BINARY) and every test uses that bundle (SEPP_TEST_BUNDLE,
//   tests/helpers/test-run.ts) instead of compiling the sources under tsx each time,
//   through a loader with a V8 code cache (scripts/code-cache.mjs; SEPP_TEST_CODE_CACHE=0
//   for none). When a selected file reads the SDK's npm pack tarball, the run packs it once
//   beside the build (SEPP_TEST_SDK_TARBALL).
// - A file's or group's process still running after SEPP_TEST_TIMEOUT_MINUTES (default
//   20) is killed with every process it started, and fails with the files it held.
// - Each file's process gets its tier in SEPP_TEST_TIER: the helpers that start a
//   process or a browser refuse in a fast-tier file.
// - Every server the tests start logs into a fresh directory (SEPP_TEST_LOG_DIR), where
//   the tests also register every secret they use; after the run, no captured line may
//   hold one (scripts/secret-grep.mjs), and a whole tier must have captured lines,
//   servers and secrets at all.
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { writeCodeCacheLoader } from './code-cache.mjs';
import { checkCapturedLogs } from './secret-grep.mjs';
import { partition, splitGroupEvents, writeGroupEntry } from './test-groups.mjs';
import { checkResult, cpuLine, fileResult, plural, seconds, slotLines, summary } from './test-report.mjs';
import {
  needsBundle,
  needsExecutable,
  needsSdkPackage,
  runsAlone,
  startsChromium,
  tierOf as tierOfFile,
  tiers,
} from './test-tiers.mjs';

const root = new URL('..', import.meta.url).pathname;
const { values: flags, positionals: filters } = parseArgs({
  allowPositionals: true,
  options: {
    tier: { type: 'string', multiple: true },
    checks: { type: 'boolean', default: false },
  },
});
for (const tier of flags.tier ?? []) {
  if (tiers.includes(tier)) continue;
  console.error(`--tier ${tier}: the tiers are ${tiers.join(' and ')}`);
  process.exit(2);
}
/** The tiers asked for, in the order of `tiers`; none: every file, one process each. */
const tiersRun = tiers.filter((t) => flags.tier?.includes(t));
// The tests to run; SEPP_TEST_DIR lets tests/runner/run-tests.test.ts run this on fixtures.
const fixtures = process.env.SEPP_TEST_DIR !== undefined;
const testsDir = process.env.SEPP_TEST_DIR ?? join(root, 'tests');
/** The fixtures' system-tier files, by name: those its system-tier.json lists. */
const fixtureSystemTier =
  fixtures && existsSync(join(testsDir, 'system-tier.json'))
    ? JSON.parse(readFileSync(join(testsDir, 'system-tier.json'), 'utf8'))
    : [];
/** `fast` or `system` (scripts/test-tiers.mjs). */
const tierOf = (file) => (fixtureSystemTier.includes(basename(file)) ? 'system' : tierOfFile(file));

function collect(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    if (name === 'artifacts' || name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...collect(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

const files = collect(testsDir)
  .map((f) => relative(root, f))
  .filter((f) => tiersRun.length === 0 || tiersRun.includes(tierOf(f)))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  const asked = [...tiersRun.map((t) => `--tier ${t}`), ...filters].join(' ');
  console.error(`no test files match ${asked}`);
  process.exit(1);
}

const label =
  tiersRun.length === 0 ? 'tests' : `the ${tiersRun.join(' and ')} tier${tiersRun.length > 1 ? 's' : ''}`;
// The system tier's files mostly wait (real ticks, kill moments, browsers, a Python suite):
// three at a time on 2 cores took its wall from 369 to 311 s on a quiet machine (one run
// each, 2026-12-06), while the fast tier's files use their CPU and gain nothing from a third.
const defaultConcurrency = tiersRun.includes('system') ? 3 : 2;
const concurrency = Math.max(
  1,
  Number(process.env.SEPP_TEST_CONCURRENCY ?? defaultConcurrency) || defaultConcurrency,
);
const started = performance.now();
const machineAtStart = machineTicks();
const work = mkdtempSync(join(tmpdir(), 'sepp-test-run-'));
const logDir = join(work, 'logs');
mkdirSync(logDir);

/** Durations (ms) of earlier runs, to start the longest files first. */
const durationsFile = join(root, 'node_modules', '.cache', 'sepp-tests', 'durations.json');
const known = existsSync(durationsFile) ? JSON.parse(readFileSync(durationsFile, 'utf8')) : {};
/**
 * Without a run of its own on record (a fresh clone: CI), a file's duration from a quiet
 * run kept in the repository (scripts/test-durations.json); without that either (a new
 * file), system-tier files (processes, builds) go first.
 */
const baseline = fixtures
  ? {}
  : JSON.parse(readFileSync(join(root, 'scripts', 'test-durations.json'), 'utf8'));
const estimate = (f) => known[f] ?? baseline[f] ?? (tierOf(f) === 'system' ? 60_000 : 5_000);

/** The type check and the lint, when asked for: multi-threaded, so they start first. */
const checks = flags.checks
  ? ['typecheck', 'lint'].map((script) => ({ check: `npm run ${script}`, script }))
  : [];
/**
 * With --tier each tier's files share a few processes: at most SEPP_TEST_GROUPS groups
 * per tier (0: none), of 10 files or more. The rest, and a run without --tier, one each.
 * Every file and group of every tier asked for is in one queue, longest first.
 * By default 4 groups of the fast tier and 6 of the system tier: each group's process loads
 * tsx, the server and the SDK again (~3 s of CPU). In a quiet `npm test` (2026-12-06, one run
 * each) 8 and 8 took 463 s of CPU and 4 min 42 s; 4 and 4 took 418 s but 4 min 35 s, its last
 * system group (124 s) ending 41 s after the others: system groups stay smaller. 4 and 6:
 * 394 s of CPU and 4 min 4 s, the slots emptying within 1 s of each other.
 */
const defaultGroups = { fast: 4, system: 6 };
const maxGroups =
  process.env.SEPP_TEST_GROUPS === undefined ? undefined : Number(process.env.SEPP_TEST_GROUPS);
const grouped =
  maxGroups !== 0 && tiersRun.length > 0 ? files.filter((f) => !Object.hasOwn(runsAlone, f)) : [];
const groups = tiersRun.flatMap((tier) => {
  const tierFiles = grouped.filter((f) => tierOf(f) === tier);
  const count = Math.min(Math.max(1, maxGroups || defaultGroups[tier]), Math.ceil(tierFiles.length / 10));
  return partition(tierFiles, count, estimate).map((group, i, all) => ({
    group: {
      ...group,
      tier,
      label: `${tiersRun.length > 1 ? `${tier} ` : ''}group ${i + 1} of ${all.length}`,
    },
    estimateMs: group.estimateMs,
  }));
});
const jobs = [
  ...files.filter((f) => !grouped.includes(f)).map((file) => ({ file, estimateMs: estimate(file) })),
  ...groups,
];
const queue = [...checks, ...jobs.sort((a, b) => b.estimateMs - a.estimateMs)];

let bundleDir;
// The files report to this run's reporters, whoever started the run: node:test sets
// NODE_TEST_CONTEXT in the files it runs (`npx tsx --test` on tests/runner/run-tests.test.ts,
// which runs this on fixtures), and a file that inherits it writes node:test's binary protocol
// to stdout for a parent runner instead of the spec reporter's text.
const { NODE_TEST_CONTEXT: _parentRunner, ...inherited } = process.env;
const env = { ...inherited, SEPP_TEST_LOG_DIR: logDir };
const cleanUp = () => {
  if (bundleDir !== undefined) rmSync(bundleDir, { recursive: true, force: true });
};
/** SIGKILL to a process group; nothing when it has ended. */
function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {}
}
// Ctrl-C, or CI cancelling the job: the processes run in groups of their own (see run), so
// a signal to the runner's group would not reach them; they go with the runner.
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
]) {
  process.on(signal, () => abort(code));
}

/** Ends the run now: every running process group killed, the bundle removed, `message` said. */
function abort(code, message) {
  for (const pid of runningGroups) killGroup(pid);
  cleanUp();
  if (message !== undefined) console.error(message);
  process.exit(code);
}

/**
 * A process (a file, a group, a check) still running after this long is killed with the
 * processes it started, and fails: a hung test must not hang the run (or CI). 20 minutes
 * by default (SEPP_TEST_TIMEOUT_MINUTES): the longest group takes about 2 minutes on a
 * quiet machine, 10 under heavy load.
 */
const timeoutMinutes = Number(process.env.SEPP_TEST_TIMEOUT_MINUTES ?? '20') || 20;
/** The running processes' ids, each its own process group's leader (see run). */
const runningGroups = new Set();

/**
 * Runs a command with its output collected; resolves once it has exited. It leads a
 * process group of its own, so the timeout and Ctrl-C end what it started too.
 */
function run(command, args, childEnv) {
  const child = spawn(command, args, {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  runningGroups.add(child.pid);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, timeoutMinutes * 60_000);
  let output = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
    stderr += chunk;
  });
  const startedMs = performance.now();
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      runningGroups.delete(child.pid);
      // Its group: whatever it started and left behind (a server, a browser) goes with it.
      killGroup(child.pid);
      resolve({
        code,
        signal: timedOut
          ? `SIGKILL: still running after ${timeoutMinutes} min (SEPP_TEST_TIMEOUT_MINUTES)`
          : signal,
        output,
        stderr,
        durationMs: performance.now() - startedMs,
      });
    });
  });
}

/**
 * The server and CLI built once for the run: bundled (build.mjs --bundle-only) when a
 * selected file runs `sepp`, and the single executable too (build.mjs, what `npm run
 * build` runs; its first step is the same bundle) when one runs that (SEPP_SEA_BINARY,
 * unless given). Built beside the checks and the first files; the system tier's files and
 * groups start once it is there. When it cannot be built, the run stops.
 */
async function build({ ui, bundle, executable }) {
  // The browser files serve ui/dist (tests/helpers/browser.ts): built here when stale, once,
  // not by the first browser file of two groups at the same moment (a rebuild empties ui/dist).
  const step = async (what, args) => {
    const ran = await run(process.execPath, args, process.env);
    if (ran.code !== 0) abort(1, `${ran.output}\nbuilding ${what} failed (node ${args.join(' ')})`);
  };
  if (ui) {
    await step('the admin UI for the browser tests', [join(root, 'scripts', 'build-ui.mjs'), '--if-stale']);
    // The browser files' own check (tests/helpers/browser.ts buildUi) has nothing left to do.
    env.SEPP_TEST_UI_BUILT = '1';
  }
  if (!bundle && !executable) return;
  bundleDir = join(root, 'dist', `test-bundle-run-${process.pid}`);
  await step('sepp for the tests', [
    join(root, 'build.mjs'),
    ...(executable ? [] : ['--bundle-only']),
    '--out-dir',
    bundleDir,
  ]);
  if (executable) env.SEPP_SEA_BINARY = join(bundleDir, 'sepp');
  // sepp.cjs through a loader with a V8 code cache (scripts/code-cache.mjs).
  if (bundle) {
    env.SEPP_TEST_BUNDLE =
      process.env.SEPP_TEST_CODE_CACHE === '0'
        ? join(bundleDir, 'sepp.cjs')
        : writeCodeCacheLoader(bundleDir, root);
  }
}
/**
 * The SDK's package, packed once for the run (`npm pack clients/typescript`, whose prepack
 * builds it into clients/typescript/dist), beside the build: the files that read its tarball
 * take it from SEPP_TEST_SDK_TARBALL instead of packing it again each (about 3 s of CPU; and
 * two packs at once in two groups rebuilt that dist/ under each other).
 */
async function packSdk() {
  const dest = join(work, 'sdk-package');
  mkdirSync(dest);
  const args = ['pack', join(root, 'clients', 'typescript'), '--pack-destination', dest, '--silent'];
  const ran = await run('npm', args, process.env);
  const tarball = readdirSync(dest).find((name) => name.endsWith('.tgz'));
  if (ran.code !== 0 || tarball === undefined) {
    abort(1, `${ran.output}\npacking the SDK failed (npm ${args.join(' ')})`);
  }
  env.SEPP_TEST_SDK_TARBALL = join(dest, tarball);
}
const builds = {
  ui: files.some(startsChromium),
  bundle: files.some(needsBundle) && process.env.SEPP_TEST_BUNDLE === undefined,
  executable: files.some(needsExecutable) && process.env.SEPP_SEA_BINARY === undefined,
  sdkPackage: files.some(needsSdkPackage) && process.env.SEPP_TEST_SDK_TARBALL === undefined,
};
const built = builds.ui || builds.bundle || builds.executable ? build(builds) : undefined;
/** Only the jobs that read the tarball wait for it, not every system-tier job. */
const packed = builds.sdkPackage ? packSdk() : undefined;
let builtDone = built === undefined;
built?.then(() => {
  builtDone = true;
});
let packedDone = packed === undefined;
packed?.then(() => {
  packedDone = true;
});

/**
 * What node imports before a test file: tsx, which compiles TypeScript. The runner's own
 * tests (tests/runner/run-tests.test.ts) give a lighter loader for their fixtures, plain
 * JavaScript in .test.ts files: tsx is ~0.3 s of a fixture process's ~0.4 s of CPU.
 */
const testImport = process.env.SEPP_TEST_IMPORT ?? 'tsx';

/**
 * Runs `module` (a test file, or a group's entry) in a process of its own; resolves with
 * how it ended, its events and the reporter's last line (CPU, time after the last test).
 */
async function runTests(module, index, tier) {
  const eventsFile = join(work, `events-${index}.jsonl`);
  const reporter = join(root, 'scripts', 'test-events-reporter.mjs');
  const ran = await run(
    process.execPath,
    [
      '--import',
      testImport,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${reporter}`,
      `--test-reporter-destination=${eventsFile}`,
      module,
    ],
    { ...env, SEPP_TEST_TIER: tier },
  );
  const lines = existsSync(eventsFile)
    ? readFileSync(eventsFile, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line))
    : [];
  const last = lines.find((e) => e.name === undefined);
  return { ran, last, events: lines.filter((e) => e !== last) };
}

/** Runs one test file in its own process. */
async function runFile(file, index) {
  const { ran, last, events } = await runTests(file, index, tierOf(file));
  const result = fileResult({
    ...ran,
    file,
    cpuMs: last?.cpuMs,
    afterLastTestMs: last?.afterLastTestMs,
    events,
  });
  return { output: ran.output, heading: headingOf(result), results: [result] };
}

/**
 * Runs a group of one tier's files in one process (scripts/test-groups.mjs): a result per
 * file, from its suite; a file the process did not finish fails with how it ended; and
 * when the process failed with every file passing (an error after the last test), a
 * result for the group says so.
 */
async function runGroup(group, index) {
  const entry = join(work, `group-${index}.mjs`);
  writeGroupEntry(entry, group.files, root);
  const { ran, last, events } = await runTests(entry, index, group.tier);
  const split = splitGroupEvents(group.files, events);
  const ended = ran.signal !== null ? `killed by ${ran.signal}` : `exit code ${ran.code}`;
  const running = group.files.find((f) => !split.files.has(f));
  const results = group.files.map((file) => {
    const done = split.files.get(file);
    if (done !== undefined) {
      const passed = done.events.at(-1)?.passed === true;
      return fileResult({ ...done, file, code: passed ? 0 : 1, signal: null, stderr: '' });
    }
    if (file === running) {
      // The one that was running when the process ended: its events so far, the process's end.
      return fileResult({ ...ran, file, durationMs: 0, cpuMs: undefined, events: split.unfinished });
    }
    const notRun = fileResult({ ...ran, file, durationMs: 0, cpuMs: undefined, events: [] });
    return { ...notRun, why: `not run: its group's process ended (${ended}) while ${running} ran` };
  });
  const lastFile = results.findLast((r) => split.files.has(r.file));
  if (lastFile !== undefined) lastFile.afterLastTestMs = last?.afterLastTestMs;
  if ((ran.code !== 0 && results.every((r) => r.ok)) || ran.signal?.startsWith('SIGKILL: still running')) {
    results.push(
      checkResult({ ...ran, file: `${group.label} (${group.files.join(', ')})`, output: ran.stderr }),
    );
  }
  const failed = results.filter((r) => !r.ok).length;
  const heading = [
    `${group.label}, ${plural(group.files.length, 'file')}: ${failed === 0 ? 'ok' : `${failed} FAILED`}, ${seconds(ran.durationMs)}`,
    ...results.map((r) => `   ${headingOf(r)}`),
  ].join('\n');
  return { output: ran.output, heading, results };
}

/** `file: ok, 1.2 s` or `file: FAILED (why), 1.2 s`. */
const headingOf = (result) =>
  `${result.file}: ${result.ok ? 'ok' : `FAILED (${result.problems.join(', ')})`}, ${seconds(result.durationMs)}`;

/** Runs `npm run SCRIPT` (the type check, the lint). */
async function runCheck(check, script) {
  const ran = await run('npm', ['run', '--silent', script], env);
  const result = checkResult({ ...ran, file: check });
  return { output: ran.output, heading: headingOf(result), results: [result] };
}

/** What the system tier runs may start `sepp`: from the run's build. */
const waitsForBuild = (job) => (job.group?.tier ?? (job.file && tierOf(job.file))) === 'system';
/** A job holding a file that reads the SDK's tarball: it waits for the run's pack too. */
const waitsForPack = (job) =>
  (job.group?.files ?? [job.file]).some((f) => f !== undefined && needsSdkPackage(f));
/** True while the job would wait for a build or the pack that has not ended. */
const blocked = (job) => (!builtDone && waitsForBuild(job)) || (!packedDone && waitsForPack(job));
/** The next job of the queue: while the build or the pack runs, the first that does not wait for it. */
function next() {
  const i = queue.findIndex((job) => !blocked(job));
  return queue.splice(Math.max(i, 0), 1)[0];
}

/**
 * The busy and total ticks of the whole machine so far (/proc/stat's first line: every
 * process's, not only the run's); undefined where there is no /proc.
 */
function machineTicks() {
  try {
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((sum, t) => sum + t, 0);
    // idle and iowait are the 4th and 5th.
    return { busy: total - ticks[3] - (ticks[4] ?? 0), total };
  } catch {
    return undefined;
  }
}

/** CPU ms of the processes this one has waited for (cutime and cstime of /proc/self/stat). */
function childrenCpuMs() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16-17 of stat(5); `fields` starts at field 3. Linux counts 100 ticks a second.
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

const results = [];
/** When each job took its slot, waited for the build, and ended: the slots' use, after the run. */
const timeline = [];
let startedJobs = 0;
await Promise.all(
  Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
    for (let job = next(); job !== undefined; job = next()) {
      const index = startedJobs++;
      const startMs = performance.now() - started;
      // Only a job that found its build or pack unfinished waited: under heavy load the
      // runner can be descheduled between two readings of the clock for 50 ms and more,
      // which is no wait for a build (the slots line would say so).
      const waited = blocked(job);
      if (waitsForBuild(job)) await built;
      if (waitsForPack(job)) await packed;
      const buildWaitMs = waited ? performance.now() - started - startMs : 0;
      const {
        output,
        heading,
        results: ended,
      } = job.file !== undefined
        ? await runFile(job.file, index)
        : job.group !== undefined
          ? await runGroup(job.group, index)
          : await runCheck(job.check, job.script);
      const endMs = performance.now() - started;
      timeline.push({ label: job.file ?? job.group?.label ?? job.check, startMs, buildWaitMs, endMs });
      // When it ran, on its first line (a group's next lines are its files).
      const at = ` (at ${(startMs / 1000).toFixed(1)}–${(endMs / 1000).toFixed(1)} s of the run)`;
      process.stdout.write(`\n── ${heading.replace(/\n|$/, (end) => `${at}${end}`)}\n${output}`);
      results.push(...ended);
    }
  }),
);
cleanUp();

if (!fixtures) {
  for (const r of results) if (r.events !== undefined) known[r.file] = Math.round(r.durationMs);
  mkdirSync(dirname(durationsFile), { recursive: true });
  writeFileSync(durationsFile, `${JSON.stringify(known, null, 1)}\n`);
}

// A whole tier (no filter) must have captured something for the secret check to mean anything.
const secrets = checkCapturedLogs(logDir, { requireEvidence: filters.length === 0 && !fixtures });
if (secrets.ok) rmSync(work, { recursive: true, force: true });
/** `the fast tier: 1054 tests in 160 files, their processes' CPU 84.3 s`, in a run of two. */
function tierLine(tier) {
  const ofTier = results.filter((r) => r.events !== undefined && tierOf(r.file) === tier);
  const tests = ofTier.reduce((sum, r) => sum + r.counts.tests, 0);
  const cpuMs = ofTier.reduce((sum, r) => sum + (r.cpuMs ?? 0), 0);
  return `the ${tier} tier: ${plural(tests, 'test')} in ${plural(ofTier.length, 'file')}, their processes' CPU ${seconds(cpuMs)}`;
}
const wallMs = performance.now() - started;
const machineAtEnd = machineTicks();
const runCpuMs = childrenCpuMs();
const usage = [
  ...slotLines(timeline, { concurrency, wallMs }),
  ...(runCpuMs === undefined
    ? []
    : [
        cpuLine({
          cpuMs: runCpuMs,
          wallMs,
          cores: availableParallelism(),
          machineBusy:
            machineAtStart === undefined || machineAtEnd === undefined
              ? undefined
              : (machineAtEnd.busy - machineAtStart.busy) / (machineAtEnd.total - machineAtStart.total),
          load: loadavg()[0],
        }),
      ]),
];
const report = summary(results, {
  wallMs,
  label,
  slowest: Number(process.env.SEPP_TEST_SLOWEST ?? '15') || 15,
  extra: [...(tiersRun.length > 1 ? tiersRun.map(tierLine) : []), ...usage, secrets.summary],
  extraProblems: secrets.ok
    ? []
    : [
        ...secrets.problems.map((p) => `secret check: ${p}`),
        `secret check: the captured logs are kept in ${logDir}`,
      ],
});
console.log(`\n${report.lines.join('\n')}`);
process.exit(report.ok ? 0 : 1);
