-- 0018: the class of a job's last error, for "top errors" (issue 36, item 2; docs/admin.md
-- "Top errors").
-- Why: a worker's nack may now carry the error's class (its name, e.g. `TypeError`) and
-- stack besides the message. Class and stack of every attempt go in `errors_json` with
-- the message; the last attempt's class is also a column, so the top-errors view groups a
-- queue's dead letters by (class, first line of `last_error`) without parsing JSON per
-- row. NULL: the last attempt gave no class (an older client, or a lease that expired).
ALTER TABLE jobs ADD COLUMN last_error_class TEXT;
