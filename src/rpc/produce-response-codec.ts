/**
 * The Produce stream's answers encoded by hand (wire-writer.ts): the sequence,
 * the status and one result per job — an accepted job's id, or its rejection.
 * The bytes are the generated encoder's (produce.ts), byte for byte
 * (tests/rpc/produce-response-codec.test.ts compares them). An atomic
 * message's answer, a flow's or flows', or a number the generated encoder would refuse, goes to
 * the generated encoder whole.
 */
import type {
  EnqueueAccepted,
  EnqueueResult,
  JobRejection,
} from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { isInt32, isUint64, signedSize, stringFieldSize, varintSize, WireWriter } from './wire-writer.ts';

/** The encoded message, as grpc-js's `responseSerialize` returns it. */
export function encodeProduceResponse(message: ProduceResponse): Buffer {
  return encodeDirect(message) ?? Buffer.from(ProduceResponse.encode(message).finish());
}

function encodeDirect(message: ProduceResponse): Buffer | null {
  const { sequence, code, results } = message;
  if (
    message.atomic !== undefined ||
    message.flow !== undefined ||
    message.flows !== undefined ||
    !isUint64(sequence) ||
    !isInt32(code)
  )
    return null;
  let size = 0;
  if (sequence !== 0) size += 1 + varintSize(sequence);
  if (code !== 0) size += 1 + signedSize(code);
  if (message.message !== '') size += stringFieldSize(1, message.message);
  // Each result's outcome's size: a result is its outcome's tag, length and body.
  const sizes: number[] = [];
  for (const result of results) {
    const n = outcomeSize(result);
    if (n < 0) return null;
    sizes.push(n);
    const body = result.outcome === undefined ? 0 : 1 + varintSize(n) + n;
    size += 1 + varintSize(body) + body;
  }
  const out = new WireWriter(size);
  if (sequence !== 0) {
    out.byte(8);
    out.varint(sequence);
  }
  if (code !== 0) out.signedField(16, code);
  if (message.message !== '') out.string(26, message.message);
  for (let i = 0; i < results.length; i++) writeResult(out, results[i]!, sizes[i]!);
  return out.done();
}

/** Bytes of an EnqueueResult's outcome's body (0 without one); -1 when it is left to the generated encoder. */
function outcomeSize(result: EnqueueResult): number {
  const outcome = result.outcome;
  if (outcome === undefined) return 0;
  return outcome.$case === 'accepted' ? acceptedSize(outcome.value) : rejectionSize(outcome.value);
}

function acceptedSize(accepted: EnqueueAccepted): number {
  const { jobId, deduplicated, debounced } = accepted;
  if (typeof deduplicated !== 'boolean' || typeof debounced !== 'boolean') return -1;
  return (jobId === '' ? 0 : stringFieldSize(1, jobId)) + (deduplicated ? 2 : 0) + (debounced ? 3 : 0);
}

function rejectionSize(rejection: JobRejection): number {
  const { reason, message } = rejection;
  if (!isInt32(reason)) return -1;
  return (reason === 0 ? 0 : 1 + signedSize(reason)) + (message === '' ? 0 : stringFieldSize(1, message));
}

/** A result whose outcome's body is `size` bytes (outcomeSize). */
function writeResult(out: WireWriter, result: EnqueueResult, size: number): void {
  const outcome = result.outcome;
  if (outcome === undefined) {
    out.tagLength(34, 0);
    return;
  }
  out.tagLength(34, 1 + varintSize(size) + size);
  if (outcome.$case === 'accepted') {
    const { jobId, deduplicated, debounced } = outcome.value;
    out.tagLength(10, size);
    if (jobId !== '') out.string(10, jobId);
    if (deduplicated) {
      out.byte(16);
      out.byte(1);
    }
    if (debounced) {
      out.varint(576);
      out.byte(1);
    }
    return;
  }
  const { reason, message } = outcome.value;
  out.tagLength(18, size);
  if (reason !== 0) out.signedField(8, reason);
  if (message !== '') out.string(18, message);
}
