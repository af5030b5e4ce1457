/**
 * A binary form of bench/writer-thread.ts's batches and their results, for the `packed`
 * transfer: one ArrayBuffer per batch and per answer, moved to the other thread (transfer
 * list, no copy) instead of structured-cloning an object per operation and per row.
 * It covers the benchmark's shapes only: the optional text columns it never sets
 * (metadata, trace context, idempotency key, group) are written as null, and none of its
 * jobs is in a batch.
 */
import type { LeasedRow } from '../../src/store/rows.ts';
import type { Op, SettledResult } from './writer-ops.ts';

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

class Out {
  private bytes = new Uint8Array(4096);
  private view = new DataView(this.bytes.buffer);
  private at = 0;

  private room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.at + n));
    grown.set(this.bytes.subarray(0, this.at));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }
  u8(value: number): void {
    this.room(1);
    this.bytes[this.at++] = value;
  }
  f64(value: number): void {
    this.room(8);
    this.view.setFloat64(this.at, value, true);
    this.at += 8;
  }
  /** Length-prefixed bytes; -1 for null. */
  bytesOrNull(value: Uint8Array | null): void {
    this.room(4 + (value?.length ?? 0));
    this.view.setInt32(this.at, value === null ? -1 : value.length, true);
    this.at += 4;
    if (value !== null) {
      this.bytes.set(value, this.at);
      this.at += value.length;
    }
  }
  str(value: string | null): void {
    if (value === null) {
      this.bytesOrNull(null);
      return;
    }
    this.room(4 + value.length * 3);
    const { written } = utf8.encodeInto(value, this.bytes.subarray(this.at + 4));
    this.view.setInt32(this.at, written, true);
    this.at += 4 + written;
  }
  numOrNull(value: number | null): void {
    this.u8(value === null ? 0 : 1);
    if (value !== null) this.f64(value);
  }
  /** The encoded bytes as an ArrayBuffer of their own, ready to be transferred. */
  finish(): ArrayBuffer {
    return this.bytes.buffer.slice(0, this.at);
  }
}

class In {
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  private at = 0;

  constructor(buffer: ArrayBuffer) {
    this.bytes = new Uint8Array(buffer);
    this.view = new DataView(buffer);
  }
  u8(): number {
    return this.bytes[this.at++]!;
  }
  f64(): number {
    const value = this.view.getFloat64(this.at, true);
    this.at += 8;
    return value;
  }
  bytesOrNull(): Buffer | null {
    const length = this.view.getInt32(this.at, true);
    this.at += 4;
    if (length < 0) return null;
    const value = Buffer.from(this.bytes.buffer, this.at, length);
    this.at += length;
    return value;
  }
  str(): string | null {
    const length = this.view.getInt32(this.at, true);
    this.at += 4;
    if (length < 0) return null;
    const value = fromUtf8.decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return value;
  }
  text(): string {
    const value = this.str();
    if (value === null) throw new Error('packed batch: a required text is null');
    return value;
  }
  numOrNull(): number | null {
    return this.u8() === 0 ? null : this.f64();
  }
}

export function packOps(ops: readonly Op[]): ArrayBuffer {
  const out = new Out();
  out.f64(ops.length);
  for (const op of ops) {
    switch (op.kind) {
      case 'enqueue': {
        const job = op.job;
        out.u8(1);
        out.str(job.id);
        out.str(job.queue);
        out.str(job.type);
        out.str(job.state);
        out.f64(job.priority);
        out.bytesOrNull(job.payload);
        out.str(job.content_type);
        out.f64(job.max_attempts);
        out.numOrNull(job.lease_ms);
        out.f64(job.enqueued_at_ms);
        out.f64(job.run_at_ms);
        break;
      }
      case 'lease':
        out.u8(2);
        out.str(op.queue);
        out.f64(op.limit);
        out.f64(op.nowMs);
        out.f64(op.leaseDeadlineMs);
        out.f64(op.maxLeaseDeadlineMs);
        out.str(op.workerId);
        break;
      case 'ack':
        out.u8(3);
        out.str(op.id);
        out.f64(op.attempt);
        break;
    }
  }
  return out.finish();
}

export function unpackOps(buffer: ArrayBuffer): Op[] {
  const input = new In(buffer);
  const count = input.f64();
  const ops: Op[] = [];
  for (let i = 0; i < count; i++) {
    const tag = input.u8();
    if (tag === 1) {
      const id = input.text();
      const queue = input.text();
      const type = input.text();
      const state = input.text() === 'scheduled' ? 'scheduled' : 'ready';
      const priority = input.f64();
      const payload = input.bytesOrNull() ?? Buffer.alloc(0);
      const content_type = input.text();
      const max_attempts = input.f64();
      const lease_ms = input.numOrNull();
      const enqueued_at_ms = input.f64();
      const run_at_ms = input.f64();
      ops.push({
        kind: 'enqueue',
        job: {
          id,
          queue,
          type,
          state,
          priority,
          payload,
          content_type,
          metadata_json: null,
          traceparent: null,
          tracestate: null,
          idempotency_key: null,
          max_attempts,
          lease_ms,
          enqueued_at_ms,
          run_at_ms,
          group_key: null,
          expires_at_ms: null,
          timeout_ms: null,
        },
      });
    } else if (tag === 2) {
      const queue = input.text();
      const limit = input.f64();
      const nowMs = input.f64();
      const leaseDeadlineMs = input.f64();
      const maxLeaseDeadlineMs = input.f64();
      const workerId = input.str();
      ops.push({
        kind: 'lease',
        queue,
        limit,
        nowMs,
        leaseDeadlineMs,
        maxLeaseDeadlineMs,
        workerId,
        timeoutMs: null,
      });
    } else {
      const id = input.text();
      ops.push({ kind: 'ack', id, attempt: input.f64() });
    }
  }
  return ops;
}

export function packResults(results: readonly SettledResult[]): ArrayBuffer {
  const out = new Out();
  out.f64(results.length);
  for (const result of results) {
    if (!result.ok) {
      out.u8(0);
      out.str(result.message);
      continue;
    }
    const value = result.value;
    if (value.kind === 'enqueued') out.u8(1);
    else if (value.kind === 'acked') out.u8(value.ok ? 3 : 4);
    else {
      out.u8(2);
      out.f64(value.rows.length);
      for (const row of value.rows) packRow(out, row);
    }
  }
  return out.finish();
}

export function unpackResults(buffer: ArrayBuffer): SettledResult[] {
  const input = new In(buffer);
  const count = input.f64();
  const results: SettledResult[] = [];
  for (let i = 0; i < count; i++) {
    const tag = input.u8();
    if (tag === 0) results.push({ ok: false, message: input.text() });
    else if (tag === 1) results.push({ ok: true, value: { kind: 'enqueued' } });
    else if (tag === 3 || tag === 4) results.push({ ok: true, value: { kind: 'acked', ok: tag === 3 } });
    else {
      const rows: LeasedRow[] = [];
      const rowCount = input.f64();
      for (let r = 0; r < rowCount; r++) rows.push(unpackRow(input));
      results.push({ ok: true, value: { kind: 'leased', rows } });
    }
  }
  return results;
}

function packRow(out: Out, row: LeasedRow): void {
  out.f64(row.seq);
  out.str(row.id);
  out.str(row.queue);
  out.str(row.type);
  out.bytesOrNull(row.payload);
  out.str(row.content_type);
  out.f64(row.priority);
  out.f64(row.attempt);
  out.f64(row.max_attempts);
  out.f64(row.attempt_base);
  out.numOrNull(row.lease_deadline_ms);
  out.f64(row.enqueued_at_ms);
  out.f64(row.run_at_ms);
  for (const text of [
    row.metadata_json,
    row.traceparent,
    row.tracestate,
    row.idempotency_key,
    row.last_error,
    row.group_key,
  ]) {
    out.str(text);
  }
  out.numOrNull(row.expires_at_ms);
}

function unpackRow(input: In): LeasedRow {
  const seq = input.f64();
  const id = input.text();
  const queue = input.text();
  const type = input.text();
  const payload = input.bytesOrNull() ?? Buffer.alloc(0);
  const content_type = input.text();
  const priority = input.f64();
  const attempt = input.f64();
  const max_attempts = input.f64();
  const attempt_base = input.f64();
  const lease_deadline_ms = input.numOrNull();
  const enqueued_at_ms = input.f64();
  const run_at_ms = input.f64();
  return {
    seq,
    id,
    queue,
    type,
    payload,
    content_type,
    priority,
    attempt,
    max_attempts,
    attempt_base,
    lease_deadline_ms,
    enqueued_at_ms,
    run_at_ms,
    metadata_json: input.str(),
    traceparent: input.str(),
    tracestate: input.str(),
    idempotency_key: input.str(),
    last_error: input.str(),
    group_key: input.str(),
    expires_at_ms: input.numOrNull(),
    timeout_at_ms: null,
    batch_id: null,
  };
}
