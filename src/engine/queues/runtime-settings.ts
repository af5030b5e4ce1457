/**
 * Queue settings changed while the server runs: run-time overrides (set and
 * reset by an operator, stored in queue_setting_overrides so they survive a
 * restart) and a new file layer (a config reload).
 *
 * Each change is one write operation: the rows, the audit entry with the old
 * and new value of every setting it touched, and the queue's recorded settings
 * commit together; the registry takes the change after the commit, in one
 * step, so the next lease or enqueue sees all of it or none. The values arrive
 * typed and valid one by one (the caller parsed them with the config file's
 * rules, config/queue-settings-input.ts); the checks across settings run here,
 * inside the operation, against the settings of that moment, so two changes
 * made at once cannot together make a combination neither was checked against.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import type { FlowControl } from '../flow-control/index.ts';
import { resolveQueueView } from '../queue-registry.ts';
import {
  type QueueFileSettings,
  type QueueSettingKey,
  type QueueSettingsFlat,
  queueSettingKeys,
  queueSettingName,
} from '../settings.ts';

/** A change to one queue's run-time overrides. */
export interface QueueSettingsChange {
  /** Settings to override, each already valid on its own. */
  readonly set?: Readonly<Partial<QueueSettingsFlat>>;
  /** Overrides to remove, giving the setting back to the config file; `all` removes every one. */
  readonly reset?: readonly QueueSettingKey[] | 'all';
}

/** A problem with a combination of settings, as the config file's checks word it. */
export interface SettingsProblem {
  /** The setting as written in TOML, e.g. `queues.emails.default_lease_ms`. */
  readonly key: string;
  readonly message: string;
}

/**
 * Checks a queue's settings across keys (lease and backoff ordering, payload
 * size against the running message size): `changed` are the keys a change
 * touches, the pairs that involve one of them are checked. The composition
 * root passes the config layer's checks, so the messages are the file's.
 */
export type QueueSettingsCheck = (
  queue: string,
  effective: QueueSettingsFlat,
  changed: readonly QueueSettingKey[],
) => readonly SettingsProblem[];

const knownKeys = new Set<string>(queueSettingKeys);
const keyByName = new Map(queueSettingKeys.map((key) => [queueSettingName(key), key]));

/** A setting's key by the name it is stored under (`max_attempts` → `maxAttempts`); undefined when unknown. */
export function settingKeyOf(name: string): keyof QueueSettingsFlat | undefined {
  return keyByName.get(name);
}

export class RuntimeSettings {
  constructor(
    private readonly ctx: EngineContext,
    /** Told when a queue's limits change: its throttled reserves try again under the new ones. */
    private readonly flow: FlowControl,
    private readonly audit: AuditLog,
    private readonly check: QueueSettingsCheck | undefined,
  ) {}

  /** A reload written in the batch now being committed, not yet in the registry. */
  private pendingFile: QueueFileSettings | undefined;

  /**
   * Reads the stored overrides into the registry (at start). A key this
   * version does not know (a setting removed since) is left in the table,
   * unused.
   */
  *load(view: StoreView): Op<void> {
    const queues = new Set((yield* view.settings.all()).map((row) => row.queue));
    for (const queue of queues) this.ctx.queues.setOverrides(queue, yield* this.storedOverrides(view, queue));
  }

  /**
   * A queue's overrides as the current transaction sees them: an earlier
   * change in the same batch is there, though memory takes it only after the
   * commit.
   */
  private *storedOverrides(view: StoreView, queue: string): Op<Partial<QueueSettingsFlat>> {
    const found: Record<string, unknown> = {};
    for (const row of yield* view.settings.ofQueue(queue)) {
      const key = keyByName.get(row.key);
      if (key !== undefined) found[key] = JSON.parse(row.value_json);
    }
    return found as Partial<QueueSettingsFlat>;
  }

  /** The file layer as the current transaction sees it (a reload earlier in the batch included). */
  private fileLayer(): QueueFileSettings {
    return this.pendingFile ?? this.ctx.queues.fileSettings;
  }

  /** Sets and resets run-time overrides of one queue that exists; resolves once durable and applied. */
  async change(queue: string, change: QueueSettingsChange, audit: AuditInput): Promise<void> {
    const set = change.set ?? {};
    for (const key of Object.keys(set)) {
      if (!knownKeys.has(key)) throw new Error(`bug: ${key} is not a queue setting`);
    }
    if (Object.keys(set).length === 0 && (change.reset === undefined || change.reset.length === 0)) {
      throw new SeppError('invalid_argument', 'name at least one setting to set or to reset');
    }
    await this.ctx.write((tx) => this.changeIn(tx, queue, change, set, audit));
  }

  private *changeIn(
    tx: StoreTx,
    queue: string,
    change: QueueSettingsChange,
    set: Readonly<Partial<QueueSettingsFlat>>,
    audit: AuditInput,
  ): Op<void> {
    const { queues, clock } = this.ctx;
    if (!(yield* this.ctx.queueExists(tx, queue))) {
      throw new SeppError(
        'not_found',
        `queue ${queue} does not exist; settings can be changed for a queue once it exists (after its first job, or declared as [queues.${queue}] in the config file)`,
      );
    }
    const before = resolveQueueView(this.fileLayer(), yield* this.storedOverrides(tx, queue), queue);
    const next: Record<string, unknown> = { ...before.overrides, ...set };
    const reset =
      change.reset === 'all' ? (Object.keys(before.overrides) as QueueSettingKey[]) : (change.reset ?? []);
    for (const key of reset) {
      if (!Object.hasOwn(set, key)) delete next[key];
    }
    const overrides = next as Partial<QueueSettingsFlat>;
    const after = resolveQueueView(this.fileLayer(), overrides, queue);
    const changed = [...new Set<QueueSettingKey>([...(Object.keys(set) as QueueSettingKey[]), ...reset])];
    const effective = { ...after.fileSettings, ...overrides };
    const problems = this.check?.(queue, effective, changed) ?? [];
    if (problems.length > 0) {
      throw new SeppError('invalid_argument', problems.map((p) => `${p.key}: ${p.message}`).join('; '));
    }
    const nowMs = clock.nowMs();
    for (const key of changed) {
      const name = queueSettingName(key);
      if (Object.hasOwn(overrides, key)) {
        yield* tx.settings.put({
          queue,
          key: name,
          valueJson: JSON.stringify(overrides[key]),
          setAtMs: nowMs,
          setBy: audit.actor,
        });
      } else {
        yield* tx.settings.delete({ queue, key: name });
      }
    }
    const flatBefore = { ...before.fileSettings, ...before.overrides };
    const changes: Record<string, unknown> = {};
    for (const key of changed) {
      changes[queueSettingName(key)] = {
        from: flatBefore[key],
        fromSource: before.sources[key],
        to: effective[key],
        toSource: after.sources[key],
      };
    }
    yield* this.audit.write(tx, audit, { changes });
    yield* tx.queues.recordSettings({ name: queue, settingsJson: JSON.stringify(after.settings) });
    tx.afterCommit(() => {
      queues.setOverrides(queue, overrides);
      this.flow.limitsChanged(queue);
    });
  }

  /**
   * Replaces what the config file says about queues (a reload): declared
   * queues that are new are created, and every queue's recorded settings
   * follow. Resolves once durable and applied.
   */
  async reconfigure(file: QueueFileSettings): Promise<void> {
    try {
      await this.ctx.write((tx) => this.reconfigureIn(tx, file));
    } finally {
      // Applied to the registry after the commit, or rolled back with it.
      if (this.pendingFile === file) this.pendingFile = undefined;
    }
  }

  private *reconfigureIn(tx: StoreTx, file: QueueFileSettings): Op<void> {
    const { queues, clock } = this.ctx;
    // The caller checked the file against the overrides; this holds it against any that changed since.
    for (const queue of new Set((yield* tx.settings.all()).map((row) => row.queue))) {
      const overrides = yield* this.storedOverrides(tx, queue);
      const effective = { ...resolveQueueView(file, overrides, queue).fileSettings, ...overrides };
      const problems = this.check?.(queue, effective, Object.keys(overrides) as QueueSettingKey[]) ?? [];
      if (problems.length > 0) {
        throw new SeppError(
          'failed_precondition',
          `the new settings clash with the run-time overrides of ${queue}: ${problems.map((p) => `${p.key}: ${p.message}`).join('; ')}`,
        );
      }
    }
    const created: string[] = [];
    for (const name of Object.keys(file.queues)) {
      if (queues.exists(name)) continue;
      yield* tx.queues.create({ name, createdAtMs: clock.nowMs(), settingsJson: '{}' });
      created.push(name);
    }
    for (const name of [...queues.names(), ...created]) {
      const view = resolveQueueView(file, yield* this.storedOverrides(tx, name), name);
      yield* tx.queues.recordSettings({ name, settingsJson: JSON.stringify(view.settings) });
    }
    this.pendingFile = file;
    tx.afterCommit(() => {
      for (const name of created) queues.markExisting(name, false);
      queues.setFileSettings(file);
      for (const name of queues.names()) this.flow.limitsChanged(name);
    });
  }
}
