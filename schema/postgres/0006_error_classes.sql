-- 0006: the class of a job's last error (issue 36, item 2): the column of
-- schema/0018_error_classes.sql (SQLite), which says why and what it holds.
-- servers-from: 6 — servers of schema 5 record a failure without its class, leaving an earlier
--   attempt's beside it.
ALTER TABLE jobs ADD COLUMN last_error_class text;
