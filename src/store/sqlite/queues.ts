/**
 * Queues as rows: created with their first job (or from the config), paused
 * and resumed, their effective settings recorded for forensics, deleted when
 * empty. Their counters are rows of `queue_counts`, made with the queue by the
 * trigger queues_counts_init (schema/0001_initial.sql, 0009_job_control.sql).
 */
import type { Queues } from '../queues.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareQueueStatements(db: Preparer) {
  return {
    insertQueue: db.prepare<[{ name: string; createdAtMs: number; settingsJson: string }]>(
      'INSERT OR IGNORE INTO queues (name, created_at_ms, settings_json) VALUES (@name, @createdAtMs, @settingsJson)',
    ),
    updateQueueSettings: db.prepare<[{ name: string; settingsJson: string }]>(
      'UPDATE queues SET settings_json = @settingsJson WHERE name = @name',
    ),
    setQueuePaused: db.prepare<[{ name: string; paused: 0 | 1 }]>(
      'UPDATE queues SET paused = @paused WHERE name = @name',
    ),
    allQueues: db.prepare<[], { name: string; paused: 0 | 1 }>(
      'SELECT name, paused FROM queues ORDER BY name',
    ),
    /** Whether a queue's row exists (the truth inside a write, where memory may lag the batch). */
    queueExists: db.prepare<[string], 1>('SELECT 1 FROM queues WHERE name = ?').pluck(),
    findQueue: db.prepare<[string], { paused: 0 | 1; has_groups: 0 | 1 }>(
      'SELECT paused, has_groups FROM queues WHERE name = ?',
    ),
    queuesWithGroups: db.prepare<[], string>('SELECT name FROM queues WHERE has_groups = 1').pluck(),
    markQueueHasGroups: db.prepare<[string]>('UPDATE queues SET has_groups = 1 WHERE name = ?'),
    /** Earliest due time among the ready jobs without a group of one priority: one index probe. */
    oldestReadyAtPriority: db
      .prepare<[string, number], number | null>(
        "SELECT min(run_at_ms) FROM jobs WHERE queue = ? AND state = 'ready' AND group_key IS NULL AND priority = ?",
      )
      .pluck(),
    /** Removes an empty queue: its counters and buckets first, then its row (jobs reference it). */
    deleteQueueCounts: db.prepare<[string]>('DELETE FROM queue_counts WHERE queue = ?'),
    deleteQueueBuckets: db.prepare<[string]>('DELETE FROM flow_buckets WHERE queue = ?'),
    deleteQueue: db.prepare<[string]>('DELETE FROM queues WHERE name = ?'),
  };
}

type QueueStatements = ReturnType<typeof prepareQueueStatements>;

export function queueOps(sql: QueueStatements): Queues {
  return {
    *all() {
      return sql.allQueues.all().map((row) => ({ name: row.name, paused: row.paused === 1 }));
    },
    *exists(name) {
      return sql.queueExists.get(name) !== undefined;
    },
    *find(name) {
      const row = sql.findQueue.get(name);
      return row === undefined ? undefined : { paused: row.paused === 1, has_groups: row.has_groups === 1 };
    },
    *withGroups() {
      return sql.queuesWithGroups.all();
    },
    *oldestUngroupedReadyMs(queue) {
      let oldest: number | null = null;
      for (let priority = 0; priority <= 9; priority++) {
        const runAtMs = sql.oldestReadyAtPriority.get(queue, priority) ?? null;
        if (runAtMs !== null && (oldest === null || runAtMs < oldest)) oldest = runAtMs;
      }
      return oldest;
    },
    *create(p) {
      sql.insertQueue.run(p);
    },
    *recordSettings(p) {
      sql.updateQueueSettings.run(p);
    },
    *setPaused({ name, paused }) {
      sql.setQueuePaused.run({ name, paused: paused ? 1 : 0 });
    },
    *markGrouped(name) {
      sql.markQueueHasGroups.run(name);
    },
    *delete(name) {
      sql.deleteQueueCounts.run(name);
      sql.deleteQueueBuckets.run(name);
      sql.deleteQueue.run(name);
    },
  };
}
