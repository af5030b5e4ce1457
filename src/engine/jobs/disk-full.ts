/**
 * What the engine does when the disk fills up: keep workers draining.
 *
 * States: room (normal) → full (a write failed with SQLITE_FULL: the disk
 * reserve is given back, so leases, acks, nacks and extends go on; enqueues —
 * the writes that need more room — are refused with UNAVAILABLE) → room again
 * once there is twice the reserve (at least 1 MiB) free, counting the room the
 * store can fill again without growing its files (SQLite: the database's free
 * pages, which deleted jobs leave behind), and the reserve is taken back.
 *
 * The check for room runs after every commit that deleted jobs (an ack, a
 * purge, a sweep: draining the queues is what frees room on a full disk) and
 * when an enqueue is refused, at most once a second of the engine's clock (for
 * space freed outside sepp). It costs one statfs and one read of the
 * database's free-page count, plus, when that is not room enough, at most once
 * a second the store's `reclaim` (SQLite: a checkpoint that truncates the WAL,
 * giving back the blocks the drain's acks wrote); nothing is checked while
 * there is room. When a check after a drain's commit finds too little room, one
 * more check follows a second later, so that the blocks of the drain's last
 * commits (which came too soon after a reclaim to be given back) are reclaimed
 * without waiting for an enqueue to ask. The refusal says how much is needed
 * and how much there is.
 */
import type { DiskReserve, StorageFailure } from '../../store/store.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { SeppError } from '../errors.ts';

const recheckEveryMs = 1000;
const minimumFreeBytes = 1024 * 1024;

export class DiskFull {
  private full = false;
  private lastCheckMs = Number.NEGATIVE_INFINITY;
  /** Jobs were deleted since the last check, while full. */
  private removedSinceCheck = false;
  /** What the last check found, for the refusal's message. */
  private shortfall = '';
  private lastReclaimMs = Number.NEGATIVE_INFINITY;
  /** The check that follows a drain's commit that found too little room. */
  private trailingCheck: TimerHandle | undefined;
  private stopped = false;

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
    this.shortfall = '';
    const released = this.space?.release() ?? false;
    this.onChange(
      true,
      released
        ? `the disk is full: enqueues are refused, and the ${this.space?.bytes} bytes of sepp.reserve were freed so that workers can still lease, ack and nack`
        : 'the disk is full: enqueues are refused; with no reserve left to free, leases and acks may fail too',
    );
  }

  /** Called (inside a unit) when it deleted jobs: one check follows the commit. Cheap when there is room. */
  noteJobsRemoved(): void {
    if (this.full) this.removedSinceCheck = true;
  }

  /** Called after every commit: checks for room when the commit deleted jobs while the disk was full. */
  afterCommit(): void {
    if (!this.removedSinceCheck) return;
    this.removedSinceCheck = false;
    if (this.full) {
      this.lastCheckMs = this.clock.nowMs();
      if (!this.roomAgain()) this.checkAgainLater();
    }
  }

  /** No more checks: the engine is closing. */
  stop(): void {
    this.stopped = true;
    this.trailingCheck?.cancel();
    this.trailingCheck = undefined;
  }

  /** One check when a reclaim is allowed again, unless one is already due. */
  private checkAgainLater(): void {
    if (this.stopped || this.trailingCheck !== undefined) return;
    const delayMs = Math.max(0, this.lastReclaimMs + recheckEveryMs - this.clock.nowMs());
    this.trailingCheck = this.clock.setTimer(delayMs, () => {
      this.trailingCheck = undefined;
      if (this.stopped || !this.full) return;
      this.lastCheckMs = this.clock.nowMs();
      this.roomAgain();
    });
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
      `the disk of the data directory is full: enqueues are refused until space is freed (workers can still lease, ack and nack to drain the queues)${this.shortfall}; nothing was stored, retry later`,
    );
  }

  /** Whether there is room again: twice the reserve free (at least 1 MiB), and the reserve taken back. */
  private roomAgain(): boolean {
    const space = this.space;
    let detail = '';
    if (space !== undefined) {
      const neededBytes = Math.max(2 * space.bytes, minimumFreeBytes);
      let freeBytes: number;
      let reusableBytes: number;
      try {
        freeBytes = space.freeBytes();
        reusableBytes = space.reusableBytes();
        // Not room enough, or not on the file system for the reserve: what the store holds
        // and no longer needs (SQLite: the WAL of the drain) goes back, at most once a second.
        const nowMs = this.clock.nowMs();
        if (
          (freeBytes + reusableBytes < neededBytes || freeBytes < space.bytes) &&
          nowMs - this.lastReclaimMs >= recheckEveryMs
        ) {
          this.lastReclaimMs = nowMs;
          space.reclaim();
          freeBytes = space.freeBytes();
          reusableBytes = space.reusableBytes();
        }
      } catch {
        return false;
      }
      const haveBytes = freeBytes + reusableBytes;
      detail = `${freeBytes} bytes free on the file system and ${reusableBytes} free inside the database`;
      const takeBack = space.bytes > 0 ? ` of which ${space.bytes} on the file system for sepp.reserve` : '';
      this.shortfall = `: it needs ${neededBytes} bytes (twice server.disk_reserve_bytes, at least 1 MiB${takeBack}) and has ${detail}`;
      try {
        if (haveBytes < neededBytes || !space.take()) return false;
      } catch {
        return false;
      }
    }
    this.full = false;
    this.onChange(
      false,
      `there is room on the disk again (${detail || 'no reserve to take'}): enqueues are accepted`,
    );
    return true;
  }
}
