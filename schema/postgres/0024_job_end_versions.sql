-- 0024: each end of a job counts itself in its row, `end_version`.
-- Why: a server where waits name jobs reads their ends from the database (JobReads.ends) and
-- tells an end it has not told yet; it told one end from another of the same state and attempt
-- (a dead letter requeued and dead-lettered again) by the row's `xmin`, which any write of the
-- row changes. The enqueue of a job after an ended job by id marks the ended row without ending
-- it again, so for a job others depend on the `xmin` could not be used (it was known by its end
-- time, as on SQLite, which two ends within a millisecond share), and any write added later that
-- rewrote an ended row would have told its end twice (task pgmulti20).
-- `end_version` is added to by the database itself, a BEFORE UPDATE trigger on each row moved
-- into an ended state (completed, dead, cancelled) from another, whichever statement of whichever
-- server wrote it: no sepp statement names it, and nothing else changes it. A job stored already
-- ended starts at 0, as every row does (a default, which PostgreSQL adds without rewriting the
-- table). The trigger's WHEN is evaluated on the updated rows only; a lease or an ack that
-- deletes its job does not run its function (bench/results/pg-end-version-2026-12-07.md: about
-- 1.8 µs of PostgreSQL CPU per ended row). The column takes ACCESS EXCLUSIVE on `jobs` for a
-- moment, as 0015 and 0016 did (docs/upgrading.md: it waits for the transactions using `jobs`).
-- servers-from: 21 — a column no server writes and a trigger that fills it for every server's
--   ends: servers of schema 21 and 22 serve on (they read an end's version from `xmin`, as
--   before, and read no `*` of jobs).
ALTER TABLE jobs ADD COLUMN end_version integer NOT NULL DEFAULT 0;

CREATE FUNCTION job_ended() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  NEW.end_version := OLD.end_version + 1;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER jobs_end_version BEFORE UPDATE OF state ON jobs
  FOR EACH ROW
  WHEN (NEW.state IN ('completed', 'dead', 'cancelled') AND OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION job_ended();

-- A trigger function cannot be called as a function, but no role but the schema's owner needs it:
-- as every function of the schema but enqueue, no EXECUTE for PUBLIC.
REVOKE EXECUTE ON FUNCTION job_ended() FROM PUBLIC;
