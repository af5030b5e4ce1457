// What one test file's run amounts to, and the closing summary of a run
// (scripts/run-tests.mjs): counts, the slowest files, the files whose process ran on
// long after their last test, and — last, where whoever
// ran it looks — every file that failed, was cancelled or could not run, with
// the first line of why.

/**
 * One file's verdict from its process's exit and the events of
 * scripts/test-events-reporter.mjs.
 * @param {{ file: string, code: number | null, signal: string | null, durationMs: number,
 *   cpuMs: number | undefined, afterLastTestMs?: number, events: Array<Record<string, unknown>>,
 *   stderr: string }} run
 */
export function fileResult(run) {
  const tests = run.events.filter((e) => !e.suite);
  const count = (predicate) => tests.filter(predicate).length;
  const cancelled = (e) => !e.passed && e.failureType === 'cancelledByParent';
  const counts = {
    tests: tests.length,
    passed: count((e) => e.passed && e.skip === undefined && e.todo === undefined),
    failed: count((e) => !e.passed && !cancelled(e) && e.todo === undefined),
    cancelled: count(cancelled),
    skipped: count((e) => e.passed && e.skip !== undefined),
    todo: count((e) => e.todo !== undefined),
  };
  const skips = tests
    .filter((e) => e.passed && e.skip !== undefined)
    .map((e) => `${e.name}${e.skip === '' ? '' : `: ${e.skip}`}`);
  const problems = [];
  if (counts.failed > 0) problems.push(`${counts.failed} failed`);
  if (counts.cancelled > 0) problems.push(`${counts.cancelled} cancelled`);
  if (run.signal !== null) problems.push(`killed by ${run.signal}`);
  else if (run.code !== 0) problems.push(`exit code ${run.code}`);
  if (problems.length === 0 && counts.tests === 0) problems.push('ran no test');
  return {
    ...run,
    counts,
    skips,
    ok: problems.length === 0,
    problems,
    why: problems.length > 0 ? why(run) : '',
  };
}

const noCounts = { tests: 0, passed: 0, failed: 0, cancelled: 0, skipped: 0, todo: 0 };

/**
 * A check's verdict (the type check, the lint): its exit code, and as why the first
 * line of its output that names an error.
 * @param {{ file: string, code: number | null, signal: string | null, durationMs: number, output: string }} run
 */
export function checkResult(run) {
  const ok = run.code === 0 && run.signal === null;
  const lines = run.output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const why = lines.find((l) => /\berror\b|✖|×/i.test(l)) ?? lines.at(-1) ?? 'no output';
  return {
    file: run.file,
    durationMs: run.durationMs,
    cpuMs: undefined,
    counts: noCounts,
    skips: [],
    ok,
    problems: ok ? [] : [run.signal !== null ? `killed by ${run.signal}` : `exit code ${run.code}`],
    why: ok ? '' : why,
  };
}

/**
 * The first reason: a failure of the file's own (a test, a hook, a suite) before a
 * cancellation, which usually only follows from one; without any, what the process
 * printed when it could not run.
 */
function why(run) {
  const failures = run.events.filter((e) => !e.passed && e.todo === undefined);
  const own = failures.find((e) => e.failureType !== 'cancelledByParent') ?? failures[0];
  if (own !== undefined) return `${own.name}: ${own.why || own.failureType || 'failed'}`;
  const lines = run.stderr.split('\n').map((l) => l.trim());
  const error = lines.find((l) => /^([A-Z]\w*)?Error\b|^\w+Error:/.test(l));
  const ended = run.signal !== null ? `killed by ${run.signal}` : `exit code ${run.code}`;
  return (
    error ??
    lines.filter((l) => l !== '').at(-1) ??
    `the process ended (${ended}) before reporting a test, and printed nothing on stderr`
  );
}

export const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Past this, a file's process running on after its last test is listed: an `after` hook
 * that takes long, or a timer or handle left open (a guard timeout never cleared) that
 * node:test waits for, time nobody sees in the test's own duration.
 */
export const lingerListedMs = 2000;
export const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The closing lines of a run, the verdict last.
 * @param {ReturnType<typeof fileResult>[]} results
 * @param {{ wallMs: number, label: string, slowest?: number, extra?: string[], extraProblems?: string[] }} run
 */
export function summary(results, { wallMs, label, slowest = 15, extra = [], extraProblems = [] }) {
  const total = { ...noCounts };
  for (const r of results) for (const key of Object.keys(total)) total[key] += r.counts[key];
  const testFiles = results.filter((r) => r.events !== undefined).length;
  const cpuMs = results.reduce((sum, r) => sum + (r.cpuMs ?? 0), 0);
  const lines = [];
  const byDuration = [...results].sort((a, b) => b.durationMs - a.durationMs).slice(0, slowest);
  lines.push(`slowest ${byDuration.length} of ${plural(results.length, 'file')} (wall time, CPU time):`);
  for (const r of byDuration) {
    const cpu = r.cpuMs === undefined ? '' : seconds(r.cpuMs);
    lines.push(`  ${seconds(r.durationMs).padStart(8)} ${cpu.padStart(8)}  ${r.file}`);
  }
  const lingering = results
    .filter((r) => (r.afterLastTestMs ?? 0) > lingerListedMs)
    .sort((a, b) => b.afterLastTestMs - a.afterLastTestMs);
  if (lingering.length > 0) {
    lines.push('ran on after their last test (after hooks, or timers and handles left open):');
    for (const r of lingering) lines.push(`  ${seconds(r.afterLastTestMs).padStart(8)}  ${r.file}`);
  }
  const skips = results.flatMap((r) => r.skips.map((s) => `  ${r.file} › ${s}`));
  if (skips.length > 0) lines.push(`skipped (a skipped test checks nothing):`, ...skips);
  lines.push(...extra);
  lines.push(
    `${label}: ${plural(total.tests, 'test')} in ${plural(testFiles, 'file')}, ${seconds(wallMs)} ` +
      `(their processes' CPU ${seconds(cpuMs)}): ` +
      `${total.passed} passed, ${total.failed} failed, ${total.cancelled} cancelled, ` +
      `${total.skipped} skipped, ${total.todo} todo`,
  );
  const failed = results.filter((r) => !r.ok);
  const ok = failed.length === 0 && extraProblems.length === 0;
  if (!ok) {
    lines.push(
      `FAILED: ${plural(failed.length, 'file')} of ${results.length}${extraProblems.length > 0 ? ', and' : ''}`,
    );
    for (const r of failed) lines.push(`  ${r.file} (${r.problems.join(', ')}): ${r.why}`);
    for (const p of extraProblems) lines.push(`  ${p}`);
  } else lines.push(`passed: every file of ${label}`);
  return { ok, lines };
}

/**
 * Where a run's slots went (scripts/run-tests.mjs runs `concurrency` jobs at a time): the
 * slot time idle — no job, or a job waiting for the run's build — and the tail, after the
 * last job started, when the slots empty one by one.
 * @param {Array<{ label: string, startMs: number, buildWaitMs: number, endMs: number }>} jobs
 *   times since the run started; `startMs` when the job took its slot
 * @param {{ concurrency: number, wallMs: number }} run
 */
export function slotLines(jobs, { concurrency, wallMs }) {
  if (jobs.length === 0) return [];
  const busyMs = jobs.reduce((sum, j) => sum + (j.endMs - j.startMs - j.buildWaitMs), 0);
  const waitMs = jobs.reduce((sum, j) => sum + j.buildWaitMs, 0);
  const slotMs = concurrency * wallMs;
  const idleMs = slotMs - busyMs;
  const percent = (ms) => `${Math.round((100 * ms) / slotMs)} %`;
  const lastStart = Math.max(...jobs.map((j) => j.startMs));
  const tail = jobs.filter((j) => j.endMs > lastStart).sort((a, b) => a.endMs - b.endMs);
  const last = tail.at(-1);
  const at = (ms) => `${(ms / 1000).toFixed(1)}`;
  return [
    `slots (${concurrency}): idle ${seconds(idleMs)} of ${seconds(slotMs)} (${percent(idleMs)})` +
      `${waitMs >= 50 ? `, ${seconds(waitMs)} of it waiting for the run's builds` : ''}; the last job started at ${at(lastStart)} s, ` +
      `then the slots emptied at ${tail.map((j) => at(j.endMs)).join(', ')} s` +
      `${last === undefined ? '' : ` (the last: ${last.label}, ${seconds(last.endMs - last.startMs)})`}`,
  ];
}

/**
 * The CPU a run used against what it had: its processes' (those it waited for: not a server
 * daemonised away from it, such as PostgreSQL under pg_ctl) over `cores` × the wall, and how
 * busy the whole machine was meanwhile, from /proc/stat (others' work too: a run on a loaded
 * machine says so here).
 * @param {{ cpuMs: number, wallMs: number, cores: number, machineBusy?: number, load?: number }} run
 *   machineBusy: the machine's busy fraction over the run, 0 to 1
 */
export function cpuLine({ cpuMs, wallMs, cores, machineBusy, load }) {
  const used = Math.round((100 * cpuMs) / wallMs);
  return (
    `CPU: the run's processes ${seconds(cpuMs)} in ${seconds(wallMs)}: ${used} % (of ${cores * 100} % on ${plural(cores, 'core')})` +
    `${machineBusy === undefined ? '' : `; the machine was ${Math.round(100 * machineBusy)} % busy meanwhile`}` +
    `${load === undefined ? '' : `, load ${load.toFixed(1)} at the end`}`
  );
}
