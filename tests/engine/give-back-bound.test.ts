/**
 * A give-back grows the job's budget by one (attempt_base + 1) and its next lease takes the next
 * attempt number, so a worker that gives the same job back forever would drive both past int32,
 * which the proto (LeasedJob.attempt, max_attempts) and PostgreSQL's columns hold: the give-back
 * that would is refused, the lease stays its worker's. Real engine on SQLite, the job's attempt
 * set near the edge directly (tests/helpers/give-back-bound.ts; on PostgreSQL:
 * give-back-bound-postgres.test.ts).
 */
import { test } from 'node:test';
import { withEngine } from '../helpers/engine.ts';
import { giveBackBound } from '../helpers/give-back-bound.ts';

test('give_back: the budget never grows past int32; the give-back that would is refused, the lease kept', async () => {
  await withEngine({}, async ({ engine, db }) => {
    await giveBackBound(engine, (jobId, attempt) => {
      db.prepare('UPDATE jobs SET attempt = ?, attempt_base = ? WHERE id = ?').run(attempt, attempt, jobId);
    });
  });
});
