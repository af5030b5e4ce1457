-- 0003: the engine keeps queue_counts itself, in the same savepoint as each change.
-- Why: a per-row trigger costs SQLite a sub-program call per row (measured ~7-10 µs
-- on our 2-core machine, about half of an enqueue's whole SQL cost and as much again
-- on each lease and ack), while one UPDATE per queue and state per operation costs a
-- few µs per batch. The counts stay exact: every statement that adds, removes or moves
-- a job is followed, in the same write operation, by the matching adjustment
-- (src/engine/context.ts `count`), and the engine's counter check compares them with
-- the rows in tests and after crashes.
DROP TRIGGER jobs_count_insert;
DROP TRIGGER jobs_count_delete;
DROP TRIGGER jobs_count_update;
