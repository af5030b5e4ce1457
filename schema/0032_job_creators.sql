-- 0032: the API key that made each job, and how many of a job's dependents other keys made (task deps20).
-- Why: a job may have at most limits.max_dependents_per_job jobs waiting on it (0026), and any key
-- that may use depends_on could use them all up on another key's job, whose creator could then
-- add none (attack7, SECURITY.md "Workflows under attack"). Keys other than a job's creator now
-- make at most half of them together (src/engine/dependencies/edges.ts). A job made without a
-- key (a server without keys, the server's own jobs, jobs stored before this migration) has NULL
-- here: on a server with keys, every key is another key to it. Only jobs made with a key write
-- the column (an INSERT without it leaves NULL, so a server without keys binds nothing more).
ALTER TABLE jobs ADD COLUMN created_by TEXT;                -- the API key's name; NULL: made without one
ALTER TABLE job_dependents
  ADD COLUMN other_dependents INTEGER NOT NULL DEFAULT 0;   -- of `dependents`, those other keys made
