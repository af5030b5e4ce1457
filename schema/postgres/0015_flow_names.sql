-- 0015: a flow job's name, kept with the job, as the SQLite store's migration 0029 (see its
-- header for why). Nullable without a default: adding it rewrites no row.
ALTER TABLE jobs ADD COLUMN flow_name text;
