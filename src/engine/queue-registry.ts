/**
 * What the engine knows about queues without asking the database: effective
 * settings, which queues exist on disk, and which are paused.
 *
 * A queue's effective settings are layered, lowest precedence first: the
 * built-in defaults, the config file's [queue_defaults], its [queues.NAME], and
 * the run-time overrides (queue-overrides.ts). The file layer is replaced as a
 * whole on reload, an override per queue when an operator changes it; either
 * way the cached settings of that queue and the values derived from all queues
 * (anyKeepsCompleted) are recomputed at once, so the next lease or enqueue
 * sees the change whole. The in-memory view changes only after the commit that
 * changed the database (see the after-commit hooks in context.ts).
 */
import {
  defaultQueueSettings,
  type EngineOptions,
  flattenPartialQueueSettings,
  flattenQueueSettings,
  nestQueueSettings,
  type QueueFileSettings,
  type QueueSettingKey,
  type QueueSettings,
  type QueueSettingsFlat,
  queueSettingKeys,
  type SettingSource,
} from './settings.ts';

/** A queue's settings with where each comes from. */
export interface QueueSettingsView {
  /** What the queue runs with now. */
  readonly settings: QueueSettings;
  /** What it would run with without run-time overrides (the config file's value, or the default). */
  readonly fileSettings: QueueSettingsFlat;
  readonly sources: Readonly<Record<QueueSettingKey, SettingSource>>;
  /** The run-time overrides in force (a subset of the keys). */
  readonly overrides: Readonly<Partial<QueueSettingsFlat>>;
}

export class QueueRegistry {
  private readonly viewCache = new Map<string, QueueSettingsView>();
  /**
   * The last view resolved for a queue the cache does not keep (one not declared that does not
   * exist yet): the jobs of one flow or batch into a new queue resolve it once, not once each,
   * and a flood of names still holds one entry.
   */
  private lastUncached: { queue: string; view: QueueSettingsView } | undefined;
  /** Queues that exist in the database, with their paused flag. */
  private readonly existing = new Map<string, { paused: boolean }>();
  /**
   * Queues deleted by a write whose commit is still to come. Until then they
   * count as absent, so an enqueue later in the same batch creates the queue
   * again (INSERT OR IGNORE) instead of trusting the stale in-memory view.
   */
  private readonly deleting = new Set<string>();
  /** Queues created by writes in the batch being written (limits.max_queues counts them). */
  private readonly creating = new Set<string>();
  private readonly overrides = new Map<string, Readonly<Partial<QueueSettingsFlat>>>();
  private file: QueueFileSettings;
  private keepsCompleted = false;

  constructor(options: EngineOptions) {
    this.file = fileLayerOf(options);
    this.recompute();
  }

  /** Whether any queue keeps completed jobs (else an ack always deletes); follows every change. */
  get anyKeepsCompleted(): boolean {
    return this.keepsCompleted;
  }

  settingsFor(queue: string): QueueSettings {
    return this.viewOf(queue).settings;
  }

  /** The queue's effective settings, the file's values under them and the source of each. */
  viewOf(queue: string): QueueSettingsView {
    const cached = this.viewCache.get(queue);
    if (cached !== undefined) return cached;
    if (this.lastUncached?.queue === queue) return this.lastUncached.view;
    const view = resolveQueueView(this.file, this.overrides.get(queue) ?? {}, queue);
    // Only declared queues and queues that exist are cached, so a flood of bad names cannot grow memory.
    if (this.isDeclared(queue) || this.existing.has(queue)) this.viewCache.set(queue, view);
    else this.lastUncached = { queue, view };
    return view;
  }

  /** Replaces what the config file says (a reload); the overrides stay. */
  setFileSettings(file: QueueFileSettings): void {
    this.file = fileLayerOf(file);
    this.viewCache.clear();
    this.lastUncached = undefined;
    this.recompute();
  }

  /** The file layer now in force. */
  get fileSettings(): QueueFileSettings {
    return this.file;
  }

  /**
   * The refreshes reading now from a store other servers share (queues/queue-refresh.ts),
   * each with the queues changed here since it began (existence, pause, overrides): what it
   * read of those may be older than the change, so it leaves them alone. A set lives only
   * as long as its read and holds at most the queues changed meanwhile.
   */
  private readonly watchers = new Set<Set<string>>();

  /** Collects the queues changed from now until `stop()`. */
  watchChanges(): { readonly changed: ReadonlySet<string>; stop(): void } {
    const changed = new Set<string>();
    this.watchers.add(changed);
    return { changed, stop: () => this.watchers.delete(changed) };
  }

  private changed(queue: string): void {
    for (const changed of this.watchers) changed.add(queue);
  }

  /** Sets (or, with an empty object, removes) a queue's run-time overrides. */
  setOverrides(queue: string, overrides: Readonly<Partial<QueueSettingsFlat>>): void {
    this.changed(queue);
    if (Object.keys(overrides).length === 0) this.overrides.delete(queue);
    else this.overrides.set(queue, Object.freeze({ ...overrides }));
    this.viewCache.delete(queue);
    if (this.lastUncached?.queue === queue) this.lastUncached = undefined;
    this.recompute();
  }

  overridesOf(queue: string): Readonly<Partial<QueueSettingsFlat>> {
    return this.overrides.get(queue) ?? {};
  }

  /** Every queue with run-time overrides, with them. */
  allOverrides(): ReadonlyMap<string, Readonly<Partial<QueueSettingsFlat>>> {
    return this.overrides;
  }

  isDeclared(queue: string): boolean {
    return Object.hasOwn(this.file.queues, queue);
  }

  /** Whether jobs may be enqueued to `queue` at all. */
  accepts(queue: string): boolean {
    return !this.file.strictQueues || this.isDeclared(queue);
  }

  exists(queue: string): boolean {
    return this.existing.has(queue) && !this.deleting.has(queue);
  }

  isPaused(queue: string): boolean {
    return this.existing.get(queue)?.paused ?? false;
  }

  markExisting(queue: string, paused: boolean): void {
    this.changed(queue);
    this.existing.set(queue, { paused });
    this.creating.delete(queue);
    this.deleting.delete(queue);
  }

  /** The queue's row was deleted in the write in progress (see `deleting`). */
  markDeleting(queue: string): void {
    this.deleting.add(queue);
  }

  /** Whether a write whose commit is still to come deleted the queue (see `deleting`). */
  isDeleting(queue: string): boolean {
    return this.deleting.has(queue);
  }

  /** The write that deleted the queue failed: it is there after all. */
  undoDeleting(queue: string): void {
    this.deleting.delete(queue);
  }

  /** After the commit that deleted the queue. */
  forget(queue: string): void {
    this.changed(queue);
    this.existing.delete(queue);
    this.deleting.delete(queue);
    if (!this.isDeclared(queue)) this.viewCache.delete(queue);
  }

  names(): string[] {
    return [...this.existing.keys()].sort();
  }

  /** The queues that exist, unordered (a page picks and sorts its own). */
  existingNames(): IterableIterator<string> {
    return this.existing.keys();
  }

  /** Queues that exist now, with those created by writes whose commit is still to come. */
  get count(): number {
    return this.existing.size + this.creating.size;
  }

  /** Whether a write of the running batch creates `queue` (it is counted already). */
  isCreating(queue: string): boolean {
    return this.creating.has(queue);
  }

  /** A write creates `queue` (its commit is still to come): counted until the batch ends. */
  markCreating(queue: string): void {
    if (!this.existing.has(queue)) this.creating.add(queue);
  }

  /** A batch ended, committed or not: what it created is in `existing` now, or was never made. */
  batchEnded(): void {
    if (this.creating.size > 0) this.creating.clear();
  }

  declaredNames(): string[] {
    return Object.keys(this.file.queues).sort();
  }

  private recompute(): void {
    const candidates: Partial<QueueSettingsFlat>[] = [
      flattenQueueSettings(this.file.queueDefaults),
      ...Object.values(this.file.queues).map(flattenPartialQueueSettings),
      ...this.overrides.values(),
    ];
    this.keepsCompleted = candidates.some((settings) => (settings.completedRetentionMs ?? 0) > 0);
  }
}

/**
 * A queue's settings from a file layer and its overrides: pure, so a change can
 * compute what it will make before its commit, and the registry after it.
 */
export function resolveQueueView(
  file: QueueFileSettings,
  overrides: Readonly<Partial<QueueSettingsFlat>>,
  queue: string,
): QueueSettingsView {
  const defaults = flattenQueueSettings(file.queueDefaults);
  const declared = Object.hasOwn(file.queues, queue) ? file.queues[queue] : undefined;
  const queueFlat = declared === undefined ? {} : flattenPartialQueueSettings(declared);
  const fileSettings = Object.freeze({ ...defaults, ...queueFlat });
  const keys = file.fileKeys;
  const queueKeys = new Set<QueueSettingKey>(
    keys === undefined ? (Object.keys(queueFlat) as QueueSettingKey[]) : (keys.queues[queue] ?? []),
  );
  const defaultKeys = new Set<QueueSettingKey>(keys?.queueDefaults ?? changedDefaults(defaults));
  const sources = {} as Record<QueueSettingKey, SettingSource>;
  for (const key of queueSettingKeys) {
    sources[key] = Object.hasOwn(overrides, key)
      ? 'override'
      : queueKeys.has(key)
        ? 'queue'
        : defaultKeys.has(key)
          ? 'queue_defaults'
          : 'default';
  }
  const settings = nestQueueSettings({ ...fileSettings, ...overrides });
  return Object.freeze({
    settings: Object.freeze({ ...settings, backoff: Object.freeze(settings.backoff) }),
    fileSettings,
    sources: Object.freeze(sources),
    overrides: Object.freeze({ ...overrides }),
  });
}

/** The file layer of the options, without anything else the options carry. */
function fileLayerOf(options: QueueFileSettings): QueueFileSettings {
  const { queueDefaults, queues, strictQueues, fileKeys } = options;
  return fileKeys === undefined
    ? { queueDefaults, queues, strictQueues }
    : { queueDefaults, queues, strictQueues, fileKeys };
}

/** The [queue_defaults] keys whose value is not the built-in one (when the file's own keys are unknown). */
function changedDefaults(defaults: QueueSettingsFlat): QueueSettingKey[] {
  const builtIn = flattenQueueSettings(defaultQueueSettings);
  return queueSettingKeys.filter((key) => JSON.stringify(defaults[key]) !== JSON.stringify(builtIn[key]));
}
