/** Queue settings overridden at run time (primary key: queue, key). */

import type { Settings } from '../queues.ts';
import type { OverrideRow } from '../rows.ts';
import { type Connection, changes, rows, statement } from './sql.ts';

const all = statement('SELECT queue, key, value_json FROM queue_setting_overrides ORDER BY queue, key');
const ofQueue = statement(
  'SELECT key, value_json FROM queue_setting_overrides WHERE queue = $1 ORDER BY key',
);
const put = statement(
  `INSERT INTO queue_setting_overrides (queue, key, value_json, set_at_ms, set_by) VALUES ($1, $2, $3, $4, $5)
   ON CONFLICT (queue, key) DO UPDATE
     SET value_json = excluded.value_json, set_at_ms = excluded.set_at_ms, set_by = excluded.set_by`,
);
const remove = statement('DELETE FROM queue_setting_overrides WHERE queue = $1 AND key = $2');

export function settingOps(c: Connection): Settings {
  return {
    *all() {
      return yield* rows<OverrideRow>(c, all, []);
    },
    *ofQueue(queue) {
      return yield* rows<{ key: string; value_json: string }>(c, ofQueue, [queue]);
    },
    *put(p) {
      yield* changes(c, put, [p.queue, p.key, p.valueJson, p.setAtMs, p.setBy]);
    },
    *delete(p) {
      yield* changes(c, remove, [p.queue, p.key]);
    },
  };
}
