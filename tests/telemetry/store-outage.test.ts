/**
 * The maintenance loop's log in an outage (src/app-store-outage.ts): the first failure at once,
 * then at most one `maintenance.failed` a minute with the failures since the last line, one
 * `maintenance.recovered` when a pass works again; and the store's health the dashboard shows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreOutage } from '../../src/app-store-outage.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { createLogger, type Logger } from '../../src/telemetry/logger.ts';

/** A logger on `clock` whose JSON lines, parsed, land in `lines`. */
function jsonLog(clock: FakeClock): { lines: Record<string, unknown>[]; logger: Logger } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'info',
    format: 'json',
    write: (line) => lines.push(JSON.parse(line)),
    nowMs: () => clock.nowMs(),
  });
  return { lines, logger };
}

test('an outage logs its first failure, a line a minute with a count, and its end once', () => {
  const clock = new FakeClock();
  const startMs = clock.nowMs();
  const { lines, logger } = jsonLog(clock);
  const outage = new StoreOutage(logger, clock);
  const refused = { message: 'storage unavailable, nothing was written: connect ECONNREFUSED' };

  outage.passed();
  assert.equal(lines.length, 0, 'a pass with nothing failed says nothing');
  assert.deepEqual(outage.health(), {
    available: true,
    unavailableSinceMs: null,
    lastError: null,
    failures: 0,
  });

  // Maintenance retries each second: 150 failures over 2.5 minutes.
  for (let i = 0; i < 150; i++) {
    outage.failed(refused);
    clock.advance(1000);
  }
  const failed = lines.filter((l) => l.event === 'maintenance.failed');
  assert.deepEqual(
    failed.map((l) => [l.failures, l.failing_for_ms]),
    [
      [1, 0],
      [60, 60_000],
      [60, 120_000],
    ],
  );
  assert.equal(failed[0]?.level, 'warn');
  assert.equal(failed[0]?.error, refused.message);
  assert.deepEqual(outage.health(), {
    available: false,
    unavailableSinceMs: startMs,
    lastError: refused.message,
    failures: 150,
  });

  outage.passed();
  outage.passed();
  const recovered = lines.filter((l) => l.event === 'maintenance.recovered');
  assert.equal(recovered.length, 1, 'one line when it works again');
  assert.equal(recovered[0]?.level, 'info');
  assert.equal(recovered[0]?.failures, 150);
  assert.equal(recovered[0]?.failed_for_ms, 150_000);
  assert.equal(outage.health().available, true);

  // A new outage starts its count and its first line afresh.
  outage.failed({ message: 'again' });
  assert.deepEqual(lines.at(-1)?.failures, 1);
  assert.equal(outage.health().unavailableSinceMs, clock.nowMs());
});

test("a failure whose words name no address gets the store's in its detail, once", () => {
  const clock = new FakeClock();
  const { lines, logger } = jsonLog(clock);
  const outage = new StoreOutage(logger, clock, () => '10.0.0.7:5432');
  outage.failed({ message: 'PostgreSQL: terminating connection due to administrator command' });
  clock.advance(61_000);
  outage.failed({ message: 'PostgreSQL: connect ECONNREFUSED 10.0.0.7:5432' });
  const details = lines.filter((l) => l.event === 'maintenance.failed').map((l) => l.detail);
  assert.deepEqual(details, [
    'PostgreSQL: terminating connection due to administrator command (the store at 10.0.0.7:5432)',
    undefined, // the words say where already (no StorageFailure here: no separate log message)
  ]);
});
