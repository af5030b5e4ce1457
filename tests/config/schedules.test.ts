/** `[[schedules]]`: read into the engine's specs, and every problem named by its key before the server starts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertProblem, loadToml, problemsOf } from './helpers.ts';

test('[[schedules]] tables become the engine config schedules, with units and defaults', () => {
  const config = loadToml(`
[[schedules]]
name = "nightly-report"
cron = "30 2 * * *"
timezone = "Europe/Berlin"
queue = "reports"
type = "nightly"
payload = '{"kind": "daily"}'
content_type = "application/json"
priority = 5
metadata = { team = "billing" }
max_attempts = 3
lease_ms = "2h"
misfire = "catch_up"
catch_up_max = 4
overlap = "skip"
jitter_ms = "30s"
start_at = 2026-01-01T00:00:00Z
end_at = "2099-01-01T00:00:00+01:00"

[[schedules]]
name = "sync"
interval_ms = "15m"
queue = "sync"
type = "pull"
`);
  const [nightly, sync] = config.engine.schedules;
  assert.deepEqual(
    { ...nightly, template: { ...nightly?.template, payload: undefined } },
    {
      name: 'nightly-report',
      cron: '30 2 * * *',
      timezone: 'Europe/Berlin',
      template: {
        queue: 'reports',
        type: 'nightly',
        payload: undefined,
        contentType: 'application/json',
        priority: 5,
        metadata: { team: 'billing' },
        maxAttempts: 3,
        leaseMs: 7_200_000,
      },
      misfire: 'catch_up',
      catchUpMax: 4,
      overlap: 'skip',
      jitterMs: 30_000,
      startAtMs: Date.UTC(2026, 0, 1),
      endAtMs: Date.UTC(2098, 11, 31, 23),
    },
  );
  assert.equal(Buffer.from(nightly?.template.payload ?? []).toString(), '{"kind": "daily"}');
  assert.deepEqual(sync, {
    name: 'sync',
    intervalMs: 900_000,
    timezone: 'UTC',
    template: {
      queue: 'sync',
      type: 'pull',
      payload: Buffer.alloc(0),
      contentType: 'application/octet-stream',
      priority: 0,
    },
    misfire: 'run_latest',
    overlap: 'allow',
    jitterMs: 0,
  });
});

test('a bad schedule is named by its key, as the engine would refuse it', () => {
  const problems = problemsOf(`
[engine]
strict_queues = true

[queues.reports]
allowed_types = ["nightly"]

[[schedules]]
name = "bad-cron"
cron = "61 * * * *"
queue = "reports"
type = "nightly"

[[schedules]]
name = "bad-zone"
cron = "0 3 * * *"
timezone = "Mars/Olympus"
queue = "reports"
type = "nightly"

[[schedules]]
name = "undeclared"
cron = "0 3 * * *"
queue = "other"
type = "nightly"

[[schedules]]
name = "wrong-type"
cron = "0 3 * * *"
queue = "reports"
type = "weekly"

[[schedules]]
name = "no-timing"
queue = "reports"
type = "nightly"

[[schedules]]
cron = "0 3 * * *"
type = "nightly"

[[schedules]]
name = "bad-cron"
interval_ms = "1h"
queue = "reports"
type = "nightly"
misfire = "often"
start_at = "tomorrow"
colour = "red"
`);
  assertProblem(
    problems,
    'schedules[0].cron',
    /"61 \* \* \* \*" is not a cron expression sepp reads: Invalid value for minute/,
  );
  assertProblem(problems, 'schedules[1].timezone', /"Mars\/Olympus" is not an IANA timezone/);
  assertProblem(problems, 'schedules[2].queue', /queue other is not declared and strict_queues is on/);
  assertProblem(problems, 'schedules[3].type', /job type weekly is not allowed on queue reports/);
  assertProblem(problems, 'schedules[4].cron', /is missing: give a cron expression .* or an interval/);
  assertProblem(
    problems,
    'schedules[5].name',
    /is missing; every \[\[schedules\]\] needs name, queue and type/,
  );
  assertProblem(problems, 'schedules[5].queue', /is missing/);
  assertProblem(problems, 'schedules[6].misfire', /"often"/);
  assertProblem(problems, 'schedules[6].start_at', /"tomorrow" has no offset; write an RFC 3339 time/);
  assertProblem(problems, 'schedules[6].colour', /unknown setting/);
});

/** A minimal [[schedules]] table. */
const table = (name: string, timing: string) =>
  `[[schedules]]\nname = "${name}"\n${timing}\nqueue = "q"\ntype = "t"\n`;

test('schedule names are unique, [[schedules]] must be tables, and there are at most limits.max_schedules', () => {
  const problems = problemsOf(table('a', 'cron = "0 3 * * *"') + table('a', 'interval_ms = "1m"'));
  assertProblem(
    problems,
    'schedules[1].name',
    /"a" is already used by schedules\[0\]; schedule names must be unique/,
  );
  assertProblem(problemsOf('schedules = "daily"'), 'schedules', /must be a list of tables/);
  const tooMany = problemsOf(
    `[limits]\nmax_schedules = 1\n\n${table('a', 'cron = "0 3 * * *"')}${table('b', 'cron = "0 4 * * *"')}`,
  );
  assertProblem(tooMany, 'limits.max_schedules', /is 1 but the config declares 2 \[\[schedules\]\]/);
});

test('a schedule whose end has passed is valid: its time is over, the server must still start', () => {
  const [ended] = loadToml(`${table('ended', 'cron = "0 3 * * *"')}end_at = 2020-01-01T00:00:00Z\n`).engine
    .schedules;
  assert.equal(ended?.endAtMs, Date.UTC(2020, 0, 1));
});

test('every problem of one schedule, not only the first: its own keys and what the engine checks', () => {
  const problems = problemsOf(`
[[schedules]]
name = "nightly"
queue = "reports"
type = "build"
cron = "61 * * * *"
timezone = "Mars/Olympus"
jitter_ms = "2d"
priority = 12
`);
  assert.deepEqual(problems.map((p) => p.key).sort(), [
    'schedules[0].cron',
    'schedules[0].jitter_ms',
    'schedules[0].priority',
    'schedules[0].timezone',
  ]);
  assertProblem(problems, 'schedules[0].cron', /"61 \* \* \* \*" is not a cron expression/);
  assertProblem(problems, 'schedules[0].timezone', /"Mars\/Olympus" is not an IANA timezone/);
});
