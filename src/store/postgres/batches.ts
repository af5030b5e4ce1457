/**
 * The PostgreSQL store's batches: a set of jobs with a completion job (issue 33), the
 * batch half of the `dependencies` capability (dependencies.ts composes it with the
 * edges between jobs). A batch's row holds its counts; a member's end counts it in the
 * unit that ends it, and the UPDATE that moves a sealed batch with nothing pending to
 * `ended` decides its end once across servers (schema/postgres/0008). As for the edges
 * (dependencies.ts, READ COMMITTED, a decision made by the statement that changes a row):
 *
 * - **A batch ends once.** A member's end decrements `pending` with an UPDATE of the
 *   batch's row (`memberEnded`: the member's row and the batch's in one statement), and
 *   `endBatch` is `UPDATE … SET state = 'ended' WHERE state = 'sealed' AND pending = 0`:
 *   two servers ending the last two members at once are serialised on the batch's row,
 *   the first sees 1 pending, the second (after the first's commit) 0, and only the unit
 *   whose statement moved the batch to `ended` enqueues the completion jobs, in the same
 *   transaction. The seal is the same UPDATE shape, so a seal racing the last member's end
 *   ends the batch in whichever of the two commits second. A read of the batch inside a
 *   write locks its row (`FOR UPDATE`), so an add sees the seal of another server.
 */
import {
  afterEveryBatchId,
  type BatchMemberRow,
  type BatchRow,
  batchMember,
  type Dependencies,
  type MemberState,
} from '../dependencies.ts';
import { type Connection, changes, firstRow, rows, sendAhead, statement, value, writing } from './sql.ts';

const batchSql = 'SELECT * FROM batches WHERE id = $1';
const batch = statement(batchSql);
/** In a write: the batch's row locked, so a decision from it holds until commit. */
const batchLocked = statement(`${batchSql} FOR UPDATE`);
const pendingMembers = statement(
  `SELECT job_id AS v FROM batch_members
    WHERE batch_id = $1 AND state = 'pending' ORDER BY position LIMIT $2`,
);
const batchMembers = statement(
  `SELECT m.job_id, m.position, m.state AS member_state, j.state AS job_state
     FROM batch_members m LEFT JOIN jobs j ON j.id = m.job_id
    WHERE m.batch_id = $1 AND m.position > $2 ORDER BY m.position LIMIT $3`,
);
const membership = statement('SELECT batch_id, state FROM batch_members WHERE job_id = $1');
const unendedBatches = statement("SELECT count(*) AS v FROM batches WHERE state <> 'ended'");
const createBatch = statement(
  `INSERT INTO batches (id, state, created_at_ms, on_complete_json, on_success_json, owner, on_death_json)
   VALUES ($1, 'open', $2, $3, $4, $5, $6)`,
);
/** The advisory-lock class of batch owners: two servers creating one key's batches count one after the other. */
const ownerLockClass = 24221;
const lockOwner = statement(`SELECT pg_advisory_xact_lock(${ownerLockClass}, hashtext($1))`);
const unendedBatchesOf = statement(
  `SELECT count(*) AS v FROM (SELECT 1 FROM batches WHERE owner = $1 AND state <> 'ended' LIMIT $2) AS b`,
);
/**
 * Adds members: the batch's row first (its count gives the positions and locks it, so two
 * servers adding at once number their members apart), then the members, their flags and
 * their batch's id (for their leases: schema/postgres/0016_job_batch_id.sql).
 */
const addMembers = statement(
  `WITH b AS (
     UPDATE batches SET members = members + cardinality($2::text[]), pending = pending + cardinality($2::text[])
      WHERE id = $1 RETURNING members - cardinality($2::text[]) AS base),
   m AS (
     INSERT INTO batch_members (job_id, batch_id, position)
     SELECT t.job_id, $1, b.base + t.ord - 1 FROM b, unnest($2::text[]) WITH ORDINALITY AS t(job_id, ord))
   UPDATE jobs SET dependency_flags = dependency_flags | ${batchMember}, batch_id = $1
    WHERE id = ANY($2::text[])`,
);
const seal = statement(
  "UPDATE batches SET state = 'sealed', sealed_at_ms = $2 WHERE id = $1 AND state = 'open'",
);
/**
 * The member's row and its batch's counts in one statement; the batch's id when it was
 * pending, and whether this death is the batch's first: `first_dead_id` is set only while
 * NULL, and a second server's UPDATE waiting on the row lock re-reads it after the first's
 * commit, so only one unit finds its own member there (schema/postgres/0013).
 */
const memberEnded = statement(
  `WITH m AS (
     UPDATE batch_members SET state = $2 WHERE job_id = $1 AND state = 'pending' RETURNING batch_id)
   UPDATE batches b SET pending = pending - 1,
          completed = completed + ($2 = 'completed')::int, dead = dead + ($2 = 'dead')::int,
          cancelled = cancelled + ($2 = 'cancelled')::int,
          first_dead_id = CASE WHEN $2 = 'dead' THEN coalesce(b.first_dead_id, $1) ELSE b.first_dead_id END
     FROM m WHERE b.id = m.batch_id
   RETURNING b.id AS batch_id, coalesce($2 = 'dead' AND b.first_dead_id = $1, false) AS first_death`,
);
const endBatch = statement(
  `UPDATE batches SET state = 'ended', ended_at_ms = $2
    WHERE id = $1 AND state = 'sealed' AND pending = 0 RETURNING *`,
);
const setDeath = statement('UPDATE batches SET death_job_id = $2, completion_error = $3 WHERE id = $1');
const setCompletion = statement(
  `UPDATE batches SET complete_job_id = $2, success_job_id = $3, completion_error = $4 WHERE id = $1`,
);

// ---- listing and retention (schema/postgres/0010_batch_retention.sql): each one bounded range of an index
const listBatches = statement('SELECT * FROM batches WHERE id < $1 ORDER BY id DESC LIMIT $2');
const listBatchesByState = statement(
  'SELECT * FROM batches WHERE state = $3 AND id < $1 ORDER BY id DESC LIMIT $2',
);
const listBatchesByOwner = statement(
  'SELECT * FROM batches WHERE owner = $3 AND id < $1 ORDER BY id DESC LIMIT $2',
);
/** One owner's batches in one state (batches_unended_owner holds at most limits.max_open_batches_per_key of one owner). */
const listBatchesByOwnerState = statement(
  'SELECT * FROM batches WHERE owner = $3 AND state = $4 AND id < $1 ORDER BY id DESC LIMIT $2',
);
/**
 * Members of batches ended before $1; rows another server's sweep holds are skipped
 * (SKIP LOCKED), so every server may sweep at once without waiting on the others.
 */
const sweepBatchMembers = statement(
  `DELETE FROM batch_members WHERE job_id IN (
     SELECT m.job_id FROM batches b JOIN batch_members m ON m.batch_id = b.id
      WHERE b.state = 'ended' AND b.ended_at_ms < $1 LIMIT $2 FOR UPDATE OF m SKIP LOCKED)`,
);
/**
 * Batches ended before $1 with no member row left, oldest first. A member another server
 * is deleting is still visible here until that commits, so no batch goes before its members.
 */
const sweepBatches = statement(
  `DELETE FROM batches WHERE id IN (
     SELECT b.id FROM batches b
      WHERE b.state = 'ended' AND b.ended_at_ms < $1
        AND NOT EXISTS (SELECT 1 FROM batch_members m WHERE m.batch_id = b.id)
      ORDER BY b.ended_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`,
);

/** Keeps a secret unless one is kept (schema/postgres/0021_lease_token_secret.sql). */
const keepSecret = statement(
  'INSERT INTO server_secrets (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING',
);
/**
 * The secret kept: a statement after the INSERT, so under READ COMMITTED it sees the row of a
 * server whose INSERT this one waited for and found committed.
 */
const secret = statement('SELECT secret AS v FROM server_secrets WHERE name = $1');

/** The batch calls of the `dependencies` capability. */
type BatchOps = Pick<
  Dependencies,
  | 'pendingMembers'
  | 'batch'
  | 'batchMembers'
  | 'membership'
  | 'unendedBatches'
  | 'createBatch'
  | 'unendedBatchesOf'
  | 'addMembers'
  | 'seal'
  | 'memberEnded'
  | 'endBatch'
  | 'setDeath'
  | 'setCompletion'
  | 'listBatches'
  | 'sweepBatches'
  | 'secret'
>;

export function batchOps(c: Connection): BatchOps {
  return {
    *pendingMembers(p) {
      return (yield* rows<{ v: string }>(c, pendingMembers, [p.batchId, p.limit])).map((row) => row.v);
    },
    *batch(id) {
      return yield* firstRow<BatchRow>(c, writing(c) ? batchLocked : batch, [id]);
    },
    *batchMembers(p) {
      return yield* rows<BatchMemberRow>(c, batchMembers, [p.batchId, p.afterPosition, p.limit]);
    },
    *membership(jobId) {
      return yield* firstRow<{ batch_id: string; state: MemberState }>(c, membership, [jobId]);
    },
    *unendedBatches() {
      return (yield* value<number>(c, unendedBatches, [])) ?? 0;
    },
    *createBatch(p) {
      yield* changes(c, createBatch, [
        p.id,
        p.nowMs,
        p.onCompleteJson,
        p.onSuccessJson,
        p.owner,
        p.onDeathJson,
      ]);
    },
    *unendedBatchesOf(p) {
      if (writing(c)) yield* changes(c, lockOwner, [p.owner]);
      return (yield* value<number>(c, unendedBatchesOf, [p.owner, p.limit])) ?? 0;
    },
    *addMembers({ batchId, jobIds }) {
      if (jobIds.length === 0) return;
      yield* sendAhead(c, addMembers, [batchId, jobIds]);
    },
    *seal(p) {
      return (yield* changes(c, seal, [p.batchId, p.nowMs])) > 0;
    },
    *memberEnded({ jobId, state }) {
      const row = yield* firstRow<{ batch_id: string; first_death: boolean }>(c, memberEnded, [jobId, state]);
      return row === undefined ? null : { batchId: row.batch_id, firstDeath: row.first_death };
    },
    *endBatch(p) {
      return yield* firstRow<BatchRow>(c, endBatch, [p.batchId, p.nowMs]);
    },
    *setDeath(p) {
      yield* sendAhead(c, setDeath, [p.batchId, p.deathJobId, p.error]);
    },
    *setCompletion(p) {
      yield* sendAhead(c, setCompletion, [p.batchId, p.completeJobId, p.successJobId, p.error]);
    },
    *listBatches({ state, owner, beforeId, limit }) {
      const page = [beforeId ?? afterEveryBatchId, limit];
      if (owner === null) {
        return state === null
          ? yield* rows<BatchRow>(c, listBatches, page)
          : yield* rows<BatchRow>(c, listBatchesByState, [...page, state]);
      }
      return state === null
        ? yield* rows<BatchRow>(c, listBatchesByOwner, [...page, owner])
        : yield* rows<BatchRow>(c, listBatchesByOwnerState, [...page, owner, state]);
    },
    *sweepBatches(p) {
      const members = yield* changes(c, sweepBatchMembers, [p.beforeMs, p.limit]);
      // Members left (the chunk was full): their batches wait for the next pass.
      const batches = members === p.limit ? 0 : yield* changes(c, sweepBatches, [p.beforeMs, p.limit]);
      return { members, batches };
    },
    *secret(p) {
      yield* changes(c, keepSecret, [p.name, Buffer.from(p.candidate)]);
      return (yield* value<Buffer>(c, secret, [p.name]))!;
    },
  };
}
