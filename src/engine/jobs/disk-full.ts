/**
 * What the engine does when the disk fills up: keep workers draining.
 *
 * States: room (normal) → full (a write failed with SQLITE_FULL: the disk
 * reserve is given back, so leases, acks, nacks and extends go on; enqueues —
 * the writes that need more room — are refused with UNAVAILABLE) → room again
 * once the file system has twice the reserve free and the reserve is taken
 * back. The check for room runs when an enqueue is refused, at most once a
 * second of the engine's clock, so a full server costs one statfs a second.
 */
import type { DiskReserve, StorageFailure } from '../../store/store.ts';
import type { Clock } from '../clock.ts';
import { SeppError } from '../errors.ts';

const recheckEveryMs = 1000;
const minimumFreeBytes = 1024 * 1024;

export class DiskFull {
  private full = false;
  private lastCheckMs = Number.NEGATIVE_INFINITY;

  constructor(
    /** The room the store keeps for this (its `diskReserve` capability); none: nothing to free. */
    private readonly space: DiskReserve | undefined,
    private readonly clock: Clock,
    /** Told when the state changes, for the log and metrics. */
    private readonly onChange: (full: boolean, detail: string) => void,
  ) {}

  get isFull(): boolean {
    return this.full;
  }

  /** Called with every failed commit. */
  commitFailed(failure: StorageFailure): void {
    if (this.full || !failure.diskFull) return;
    this.full = true;
    this.lastCheckMs = this.clock.nowMs();
    const released = this.space?.release() ?? false;
    this.onChange(
      true,
      released
        ? `the disk is full: enqueues are refused, and the ${this.space?.bytes} bytes of sepp.reserve were freed so that workers can still lease, ack and nack`
        : 'the disk is full: enqueues are refused; with no reserve left to free, leases and acks may fail too',
    );
  }

  /** The error an enqueue gets while the disk is full, or null when there is room. */
  enqueueRefusal(): SeppError | null {
    if (!this.full) return null;
    const nowMs = this.clock.nowMs();
    if (nowMs - this.lastCheckMs >= recheckEveryMs) {
      this.lastCheckMs = nowMs;
      if (this.roomAgain()) return null;
    }
    return new SeppError(
      'unavailable',
      'the disk of the data directory is full: enqueues are refused until space is freed (workers can still lease, ack and nack to drain the queues); nothing was stored, retry later',
    );
  }

  /** Whether there is room again: twice the reserve free (at least 1 MiB), and the reserve taken back. */
  private roomAgain(): boolean {
    const space = this.space;
    let free = Number.NaN;
    if (space !== undefined) {
      try {
        free = space.freeBytes();
        if (free < Math.max(2 * space.bytes, minimumFreeBytes) || !space.take()) return false;
      } catch {
        return false;
      }
    }
    this.full = false;
    this.onChange(false, `there is room on the disk again (${free} bytes free): enqueues are accepted`);
    return true;
  }
}
