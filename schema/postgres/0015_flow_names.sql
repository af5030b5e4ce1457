-- 0015: a flow job's name, kept with the job, as the SQLite store's migration 0029 (see its
-- header for why). Nullable without a default: adding it rewrites no row.
-- servers-from: 15 — servers of schema 14 store a flow's jobs without flow_name.
ALTER TABLE jobs ADD COLUMN flow_name text;
