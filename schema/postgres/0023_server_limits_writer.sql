-- 0023: a server's limits row (0020) names the writer session it is written for.
-- Why: a server writes its row again every 10 s from a read connection, only while its writer's
-- session still holds the shard's lock (pg_locks, checked in the same statement). A writer cut
-- off right after that check let another server take the shard and write its own row, which the
-- first server's statement, reaching the row after that commit, then overwrote: sepp.enqueue
-- followed the wrong limits until the new holder's next look (review19b; task pgmulti20).
-- Each row now records the writer session it belongs to, its backend's pid and start time
-- (`writer_pid`, `writer_started_at`), written with the row when a writer connects; the look
-- replaces only a row that names its own writer session, so a row another server's writer
-- wrote meanwhile is left as it is (src/store/postgres/server-limits.ts).
-- servers-from: 21 — two columns only the servers of schema 23 fill and read: servers of schema
--   20 to 22 write their rows as before and leave them NULL (their row is written when their
--   writer connects, and its looks replace it as before), and sepp.enqueue does not read them.
ALTER TABLE server_limits
  ADD COLUMN writer_pid integer,
  ADD COLUMN writer_started_at timestamptz;
