-- 0025: the API key that made each job, and how many of a job's dependents other keys made (task deps20).
-- Why: a job may have at most limits.max_dependents_per_job jobs waiting on it (0011), and any key
-- that may use depends_on could use them all up on another key's job, whose creator could then
-- add none (attack7, SECURITY.md "Workflows under attack"). Keys other than a job's creator now
-- make at most half of them together (src/engine/dependencies/edges.ts). A job made without a
-- key (a server without keys, the server's own jobs, sepp.enqueue, jobs stored before this
-- migration) has NULL here: on a server with keys, every key is another key to it. Both columns
-- are added without a rewrite of their tables (a NULL column, a constant default).
-- servers-from: 25 — servers of schema 24 store jobs without their key and add edges without
-- counting other keys' ones: another key could fill a job's dependents through them.
ALTER TABLE jobs ADD COLUMN created_by text;
ALTER TABLE job_dependents ADD COLUMN other_dependents integer NOT NULL DEFAULT 0;
