/**
 * Unary answers refused after their handler ran: the admission interceptor
 * (admission.ts) does not send the answer of a read (Get…, List…) or of a
 * Reserve that does not fit the budgets of answers not yet read
 * (unsent-answers.ts), and ends the call RESOURCE_EXHAUSTED instead (any
 * other call's answer is sent all the same: it changed something its client
 * must not be told to do again). The handler had carried the call out by
 * then, so two things follow here:
 *
 * - the call's observation (metrics, the request log, its span) ends with the
 *   code the client got, not with the handler's OK;
 * - what the handler did for an answer nobody will see is undone where it can
 *   be: a Reserve's leased jobs are given back at once (unary-handlers.ts),
 *   rather than when their leases end.
 *
 * The two sides meet through the call's request metadata: the interceptor
 * forwards the very object the handler then finds as `call.metadata` (one
 * object per call, held weakly here). The interceptor decides synchronously
 * inside the handler's answer, so the handler's wrapper reads the outcome as
 * soon as its answer was handed over.
 */
import type { Metadata, status } from '@grpc/grpc-js';

interface CallRecord {
  /** What to undo if the answer is refused (set by the handler before it answers). */
  undo?: () => void;
  /** The code the call ended with, once its answer was refused. */
  code?: status;
}

export class RefusedAnswers {
  private readonly calls = new WeakMap<Metadata, CallRecord>();

  /** Runs `undo` if the answer of the call with `metadata` is refused; at most once. */
  onRefused(metadata: Metadata, undo: () => void): void {
    this.recordOf(metadata).undo = undo;
  }

  /** The admission interceptor ended the call with `code` instead of sending its answer. */
  refused(metadata: Metadata, code: status): void {
    const record = this.recordOf(metadata);
    record.code = code;
    const undo = record.undo;
    record.undo = undefined;
    undo?.();
  }

  /** The code the call ended with if its answer was refused; undefined when it went out (or is going). */
  codeOf(metadata: Metadata): status | undefined {
    return this.calls.get(metadata)?.code;
  }

  private recordOf(metadata: Metadata): CallRecord {
    let record = this.calls.get(metadata);
    if (record === undefined) {
      record = {};
      this.calls.set(metadata, record);
    }
    return record;
  }
}
