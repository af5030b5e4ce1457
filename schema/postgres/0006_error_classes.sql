-- 0006: the class of a job's last error (issue 36, item 2): the column of
-- schema/0018_error_classes.sql (SQLite), which says why and what it holds.
ALTER TABLE jobs ADD COLUMN last_error_class text;
