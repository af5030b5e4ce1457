/**
 * How much a Work stream leases given the room its answers have (unsent-answers.ts): how many
 * jobs a lease asks for, at the size a job is expected to take, and which of the jobs it brought
 * the stream keeps (those that fit the room; the rest go back). work-stream.ts holds the credit,
 * the room and the leases it gives back; this module only sizes and splits.
 */
import type { LeasedJob as LeasedJobProto } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { jobOverheadBytes, leasedJobBytes } from '../engine/leases/index.ts';
import type { EngineOptions } from '../engine/settings.ts';
import type { LeasedJob } from '../engine/types.ts';
import { leasedJobToProto } from './convert.ts';

/** The jobs of a lease the stream keeps, with their sizes, and the bytes they take in all. */
export interface KeptJobs {
  readonly protos: LeasedJobProto[];
  readonly sizes: number[];
  readonly takenBytes: number;
}

export class RoomLeases {
  /**
   * The bytes a job to lease is expected to take, which bounds how many a lease asks for: at
   * first a quarter of the largest its queues allow; then the largest of the last lease, or half
   * the expectation before it when that is more (one lease of small jobs does not open the door
   * to a credit's worth of large ones at once; a stream of small jobs leases its credit's worth).
   */
  private expectedJobBytes: number;

  constructor(options: Pick<EngineOptions, 'queueDefaults' | 'queues'>, queues: readonly string[]) {
    // A quarter of the largest at first: a worker's usual credit (its free slots) is leased whole, and a
    // first lease of jobs of the largest size reads at most four times the room (what is past the
    // room goes back at once); the next leases expect what this one brought.
    this.expectedJobBytes = Math.max(jobOverheadBytes, Math.floor(largestJobBytes(options, queues) / 4));
  }

  /**
   * No more jobs than the room holds at the size a job is expected to have: a lease reads its jobs
   * whole before their sizes are known, so the credit alone would read 1,000 jobs of 1 MiB to keep 16.
   */
  maxJobs(credit: number, roomBytes: number): number {
    return Math.min(credit, Math.max(1, Math.floor(roomBytes / this.expectedJobBytes)));
  }

  /**
   * The jobs of a lease that fit `roomBytes`, in order, stopping at the first that does not;
   * `first` (nothing of the connection and key unsent): the first job whatever its size. Learns
   * the size to expect next from every job brought, kept or not.
   */
  keep(jobs: readonly LeasedJob[], roomBytes: number, first: boolean): KeptJobs {
    const protos: LeasedJobProto[] = [];
    const sizes: number[] = [];
    let takenBytes = 0;
    let largestBytes = 0;
    for (const job of jobs) {
      const proto = leasedJobToProto(job);
      const bytes = leasedJobBytes(proto, proto.jobId.length);
      if (bytes > largestBytes) largestBytes = bytes;
      if (takenBytes + bytes > roomBytes && !(first && protos.length === 0)) break;
      protos.push(proto);
      sizes.push(bytes);
      takenBytes += bytes;
    }
    this.expectedJobBytes = Math.max(largestBytes, Math.floor(this.expectedJobBytes / 2), jobOverheadBytes);
    return { protos, sizes, takenBytes };
  }
}

/**
 * The largest job `queues` may have: the largest payload their max_payload_bytes allows in the
 * config file (a run-time override above it only makes a lease read more; its room still holds).
 */
function largestJobBytes(
  options: Pick<EngineOptions, 'queueDefaults' | 'queues'>,
  queues: readonly string[],
): number {
  let largest = 0;
  for (const queue of queues) {
    largest = Math.max(
      largest,
      options.queues[queue]?.maxPayloadBytes ?? options.queueDefaults.maxPayloadBytes,
    );
  }
  return jobOverheadBytes + largest;
}
