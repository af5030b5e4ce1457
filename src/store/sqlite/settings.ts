/**
 * Queue settings overridden at run time (schema/0006_runtime_settings.sql,
 * primary key: queue, key), read once at start and inside the writes that
 * change them; memory holds them otherwise.
 */

import type { Settings } from '../queues.ts';
import type { OverrideRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareSettingStatements(db: Preparer) {
  return {
    allOverrides: db.prepare<[], OverrideRow>(
      'SELECT queue, key, value_json FROM queue_setting_overrides ORDER BY queue, key',
    ),
    /** One queue's overrides, as this transaction sees them (earlier operations of the batch included). */
    overridesOfQueue: db.prepare<[string], Omit<OverrideRow, 'queue'>>(
      'SELECT key, value_json FROM queue_setting_overrides WHERE queue = ?',
    ),
    upsertOverride: db.prepare<
      [{ queue: string; key: string; valueJson: string; setAtMs: number; setBy: string }]
    >(
      `INSERT INTO queue_setting_overrides (queue, key, value_json, set_at_ms, set_by)
       VALUES (@queue, @key, @valueJson, @setAtMs, @setBy)
       ON CONFLICT (queue, key) DO UPDATE SET value_json = excluded.value_json,
         set_at_ms = excluded.set_at_ms, set_by = excluded.set_by`,
    ),
    deleteOverride: db.prepare<[{ queue: string; key: string }]>(
      'DELETE FROM queue_setting_overrides WHERE queue = @queue AND key = @key',
    ),
  };
}

type SettingStatements = ReturnType<typeof prepareSettingStatements>;

export function settingOps(sql: SettingStatements): Settings {
  return {
    *all() {
      return sql.allOverrides.all();
    },
    *ofQueue(queue) {
      return sql.overridesOfQueue.all(queue);
    },
    *put(p) {
      sql.upsertOverride.run(p);
    },
    *delete(p) {
      sql.deleteOverride.run(p);
    },
  };
}
