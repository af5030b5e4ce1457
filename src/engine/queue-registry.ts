/**
 * What the engine knows about queues without asking the database: effective
 * settings (defaults merged with the configured overrides), which queues exist
 * on disk, and which are paused. The in-memory view changes only after the
 * commit that changed the database (see the after-commit hooks in engine.ts).
 */
import type { EngineOptions, QueueSettings } from './settings.ts';

export class QueueRegistry {
  private readonly settingsCache = new Map<string, QueueSettings>();
  /** Queues that exist in the database, with their paused flag. */
  private readonly existing = new Map<string, { paused: boolean }>();
  /**
   * Queues deleted by a write whose commit is still to come. Until then they
   * count as absent, so an enqueue later in the same batch creates the queue
   * again (INSERT OR IGNORE) instead of trusting the stale in-memory view.
   */
  private readonly deleting = new Set<string>();

  /** Whether any queue keeps completed jobs (else an ack always deletes). */
  readonly anyKeepsCompleted: boolean;

  constructor(private readonly options: EngineOptions) {
    this.anyKeepsCompleted = [options.queueDefaults, ...Object.values(options.queues)].some(
      (settings) => (settings.completedRetentionMs ?? 0) > 0,
    );
  }

  settingsFor(queue: string): QueueSettings {
    let settings = this.settingsCache.get(queue);
    if (settings === undefined) {
      const override = this.options.queues[queue] ?? {};
      settings = Object.freeze({
        ...this.options.queueDefaults,
        ...override,
        backoff: Object.freeze({ ...this.options.queueDefaults.backoff, ...override.backoff }),
      });
      // Only declared queues and queues that exist are cached, so a flood of bad names cannot grow memory.
      if (this.isDeclared(queue) || this.existing.has(queue)) this.settingsCache.set(queue, settings);
    }
    return settings;
  }

  isDeclared(queue: string): boolean {
    return Object.hasOwn(this.options.queues, queue);
  }

  /** Whether jobs may be enqueued to `queue` at all. */
  accepts(queue: string): boolean {
    return !this.options.strictQueues || this.isDeclared(queue);
  }

  exists(queue: string): boolean {
    return this.existing.has(queue) && !this.deleting.has(queue);
  }

  isPaused(queue: string): boolean {
    return this.existing.get(queue)?.paused ?? false;
  }

  markExisting(queue: string, paused: boolean): void {
    this.existing.set(queue, { paused });
    this.deleting.delete(queue);
  }

  /** The queue's row was deleted in the write in progress (see `deleting`). */
  markDeleting(queue: string): void {
    this.deleting.add(queue);
  }

  /** The write that deleted the queue failed: it is there after all. */
  undoDeleting(queue: string): void {
    this.deleting.delete(queue);
  }

  /** After the commit that deleted the queue. */
  forget(queue: string): void {
    this.existing.delete(queue);
    this.deleting.delete(queue);
    if (!this.isDeclared(queue)) this.settingsCache.delete(queue);
  }

  names(): string[] {
    return [...this.existing.keys()].sort();
  }

  declaredNames(): string[] {
    return Object.keys(this.options.queues).sort();
  }
}
