/**
 * The flow-control settings of [queue_defaults] and [queues.NAME]
 * (docs/flow-control.md): how they reach the engine, what a burst of 0 means,
 * and the messages that name the key for every mistake.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolveQueueView } from '../../src/engine/queue-registry.ts';
import { assertProblem, loadToml, problemsOf } from './helpers.ts';

test('flow-control settings reach the engine, per queue over the defaults; burst 0 is one period’s worth', () => {
  const config = loadToml(`
[queue_defaults]
group_max_leased = 2

[queues.emails]
max_leased = 5
rate_limit_leases = 100
rate_limit_period_ms = "1s"

[queues.reports]
rate_limit_leases = 30
rate_limit_period_ms = "1m"
rate_limit_burst = 1
group_rate_limit_leases = 3
`);
  const { queueDefaults, queues } = config.engine;
  assert.equal(queueDefaults.maxLeased, 0);
  assert.equal(queueDefaults.groupMaxLeased, 2);
  assert.deepEqual(queueDefaults.rateLimit, { leases: 0, periodMs: 1000, burst: 0 });
  const emails = queues.emails!;
  assert.equal(emails.maxLeased, 5);
  assert.equal(emails.groupMaxLeased, 2, 'inherited from [queue_defaults]');
  // The file layer keeps the burst as written; the engine derives it when it lays the layers together.
  assert.deepEqual(emails.rateLimit, { leases: 100, periodMs: 1000, burst: 0 });
  assert.deepEqual(resolveQueueView(config.engine, {}, 'emails').settings.rateLimit, {
    leases: 100,
    periodMs: 1000,
    burst: 100,
  });
  const reports = queues.reports!;
  assert.deepEqual(reports.rateLimit, { leases: 30, periodMs: 60_000, burst: 1 });
  assert.deepEqual(resolveQueueView(config.engine, {}, 'reports').settings.groupRateLimit, {
    leases: 3,
    periodMs: 1000,
    burst: 3,
  });
});

test('a burst the file does not set follows a rate changed at run time; one it sets stays', () => {
  const config = loadToml(`
[queue_defaults]
group_rate_limit_leases = 4

[queues.emails]
rate_limit_leases = 10

[queues.reports]
rate_limit_leases = 10
rate_limit_burst = 2
`);
  const raised = { rateLimitLeases: 100, groupRateLimitLeases: 40 };
  const emails = resolveQueueView(config.engine, raised, 'emails').settings;
  assert.equal(emails.rateLimit.burst, 100, 'burst 0 = the rate in force, not the file rate');
  assert.equal(emails.groupRateLimit.burst, 40, 'the same for a group rate from [queue_defaults]');
  assert.equal(resolveQueueView(config.engine, raised, 'reports').settings.rateLimit.burst, 2);
});

test('each flow-control mistake is reported under its own key, with what to write instead', () => {
  const problems = problemsOf(`
[queue_defaults]
max_leased = -1

[queues.a]
rate_limit_leases = 2000000
rate_limit_period_ms = 0
group_max_leased = "two"

[queues.b]
rate_limit_burst = 10
group_rate_limit_burst = 5
`);
  assertProblem(problems, 'queue_defaults.max_leased', /^-1 is below the minimum 0/);
  assertProblem(problems, 'queues.a.rate_limit_leases', /^2000000 is above the maximum 1000000/);
  assertProblem(problems, 'queues.a.rate_limit_period_ms', /^0 is below the minimum 1; set a duration/);
  assertProblem(problems, 'queues.a.group_max_leased', /"two"/);
  assertProblem(
    problems,
    'queues.b.rate_limit_burst',
    /^is 10 but rate_limit_leases is 0 \(no rate limit\); set rate_limit_leases .* or remove rate_limit_burst$/,
  );
  assertProblem(problems, 'queues.b.group_rate_limit_burst', /group_rate_limit_leases is 0/);
  assert.equal(problems.length, 6);
});

test('a burst without a rate inherited from [queue_defaults] is blamed there only', () => {
  const problems = problemsOf('[queue_defaults]\nrate_limit_burst = 4\n[queues.x]\nmax_leased = 1\n');
  assertProblem(problems, 'queue_defaults.rate_limit_burst', /rate_limit_leases is 0/);
  assert.equal(problems.length, 1);
});
