-- 0022: a dependency edge in three B-trees instead of four (issue 33, W5).
-- Why: job_dependencies_pending (parent_id, child_seq) WHERE state = 'pending' held the same
-- keys as job_dependencies_parent, whose entries in a WITHOUT ROWID table are (parent_id,
-- child_seq) too (the primary key's rest is appended): every edge paid an entry in both at
-- its insert, and its resolve removed one. The pending edges of a job are found through
-- job_dependencies_parent now, reading each edge's state by primary key: a job's edges are
-- pending until it ends, and resolved together then, so the release reads the rows it
-- updates anyway; only an edge resolved before (made to a job that had ended, or a job that
-- ended and runs again) is read and passed over (bench/results/w5-sqlite-2026-12-06.md).
DROP INDEX job_dependencies_pending;
