/**
 * Queues as rows: created with their first job (or from the config), paused
 * and resumed, their effective settings recorded for forensics, deleted when
 * empty (with their counter shards and rate-limit buckets).
 */
import type { Queues } from '../queues.ts';
import { type Connection, changes, firstRow, rows, statement, value } from './sql.ts';

const insertQueue = statement(
  'INSERT INTO queues (name, created_at_ms, settings_json) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
);
const recordSettings = statement('UPDATE queues SET settings_json = $2 WHERE name = $1');
const setPaused = statement('UPDATE queues SET paused = $2 WHERE name = $1');
const allQueues = statement('SELECT name, paused FROM queues ORDER BY name');
const queueExists = statement('SELECT true AS v FROM queues WHERE name = $1');
const findQueue = statement('SELECT paused, has_groups FROM queues WHERE name = $1');
const queuesWithGroups = statement('SELECT name FROM queues WHERE has_groups ORDER BY name');
const markGrouped = statement('UPDATE queues SET has_groups = true WHERE name = $1 AND NOT has_groups');
/** The earliest due time among the ready jobs without a group: one index probe per priority, one round trip. */
const oldestUngroupedReady = statement(
  `SELECT min((SELECT run_at_ms FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key IS NULL
                  AND priority = p ORDER BY run_at_ms LIMIT 1)) AS v
     FROM generate_series(0, 9) AS p`,
);
const deleteQueue = statement(
  `WITH counts AS (DELETE FROM queue_counts WHERE queue = $1),
        buckets AS (DELETE FROM flow_buckets WHERE queue = $1)
   DELETE FROM queues WHERE name = $1`,
);

export function queueOps(c: Connection): Queues {
  return {
    *all() {
      return yield* rows<{ name: string; paused: boolean }>(c, allQueues, []);
    },
    *exists(name) {
      return (yield* value<boolean>(c, queueExists, [name])) === true;
    },
    *find(name) {
      return yield* firstRow<{ paused: boolean; has_groups: boolean }>(c, findQueue, [name]);
    },
    *withGroups() {
      return (yield* rows<{ name: string }>(c, queuesWithGroups, [])).map((row) => row.name);
    },
    *oldestUngroupedReadyMs(queue) {
      return (yield* value<number | null>(c, oldestUngroupedReady, [queue])) ?? null;
    },
    *create(p) {
      yield* changes(c, insertQueue, [p.name, p.createdAtMs, p.settingsJson]);
    },
    *recordSettings(p) {
      yield* changes(c, recordSettings, [p.name, p.settingsJson]);
    },
    *setPaused(p) {
      yield* changes(c, setPaused, [p.name, p.paused]);
    },
    *markGrouped(name) {
      yield* changes(c, markGrouped, [name]);
    },
    *delete(name) {
      yield* changes(c, deleteQueue, [name]);
    },
  };
}
