/**
 * The Produce stream's answers encoded by hand (wire-writer.ts): the sequence,
 * the status and one result per job — an accepted job's id, or its rejection.
 * The bytes are the generated encoder's (produce.ts), byte for byte
 * (tests/rpc/produce-response-codec.test.ts compares them). A flow's answer
 * and the answers to flows are written here too (a W5 producer's every answer:
 * the generated encoder cost ~0.3 µs of CPU per flow job, bench/results/w5enq-2026-12-07.md),
 * unless one of them refused the flow (its rejections). Such an answer, an atomic
 * message's, one that says whether to retry (`retry`: a failure), or a number the
 * generated encoder would refuse, goes to the generated encoder whole.
 */
import type { EnqueueFlowResponse, FlowJobId } from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import type {
  EnqueueAccepted,
  EnqueueResult,
  JobRejection,
} from '../../clients/typescript/src/gen/sepp/v1/job.js';
import {
  type ProduceFlowAnswer,
  type ProduceFlowAnswers,
  ProduceResponse,
} from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { isInt32, isUint64, signedSize, stringFieldSize, varintSize, WireWriter } from './wire-writer.ts';

/** The encoded message, as grpc-js's `responseSerialize` returns it. */
export function encodeProduceResponse(message: ProduceResponse): Buffer {
  return encodeDirect(message) ?? Buffer.from(ProduceResponse.encode(message).finish());
}

/** ProduceResponse's `flow` (55) and `flows` (56) as tags of a length-delimited field. */
const flowTag = 442;
const flowsTag = 450;

function encodeDirect(message: ProduceResponse): Buffer | null {
  const { sequence, code, results, flow, flows } = message;
  // An atomic message's answer, or a failure's advice (`retry`: an error path), goes whole.
  if (message.atomic !== undefined || message.retry !== '' || !isUint64(sequence) || !isInt32(code))
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
  // The flows' nested messages' sizes, each before what it holds (the order they are written in).
  const nested: number[] = [];
  if (flow !== undefined) {
    const n = flowSize(flow, nested);
    if (n < 0) return null;
    size += 2 + varintSize(n) + n;
  }
  if (flows !== undefined) {
    const n = answersSize(flows, nested);
    if (n < 0) return null;
    size += 2 + varintSize(n) + n;
  }
  const out = new WireWriter(size);
  if (sequence !== 0) {
    out.byte(8);
    out.varint(sequence);
  }
  if (code !== 0) out.signedField(16, code);
  if (message.message !== '') out.string(26, message.message);
  for (let i = 0; i < results.length; i++) writeResult(out, results[i]!, sizes[i]!);
  const cursor = { nested, at: 0 };
  if (flow !== undefined) writeFlow(out, flowTag, flow, cursor);
  if (flows !== undefined) {
    out.tagLength(flowsTag, nested[cursor.at++]!);
    for (const answer of flows.answers) writeAnswer(out, answer, cursor);
  }
  return out.done();
}

/** Where the writing is in the nested sizes that the size functions recorded. */
interface NestedCursor {
  readonly nested: readonly number[];
  at: number;
}

/** Bytes of ProduceFlowAnswers' body, its answers' sizes recorded after it in `nested`; -1: left to the generated encoder. */
function answersSize(flows: ProduceFlowAnswers, nested: number[]): number {
  const at = nested.push(0) - 1;
  let size = 0;
  for (const answer of flows.answers) {
    const n = answerSize(answer, nested);
    if (n < 0) return -1;
    size += 1 + varintSize(n) + n;
  }
  nested[at] = size;
  return size;
}

function answerSize(answer: ProduceFlowAnswer, nested: number[]): number {
  const { code, message, flow } = answer;
  if (!isInt32(code) || answer.retry !== '') return -1;
  const at = nested.push(0) - 1;
  let size = (code === 0 ? 0 : 1 + signedSize(code)) + (message === '' ? 0 : stringFieldSize(1, message));
  if (flow !== undefined) {
    const n = flowSize(flow, nested);
    if (n < 0) return -1;
    size += 1 + varintSize(n) + n;
  }
  nested[at] = size;
  return size;
}

/** Bytes of an EnqueueFlowResponse's body, recorded in `nested` with its jobs'; -1 for one with rejections. */
function flowSize(flow: EnqueueFlowResponse, nested: number[]): number {
  if (typeof flow.committed !== 'boolean' || flow.rejections.length > 0) return -1;
  const at = nested.push(0) - 1;
  let size = flow.committed ? 2 : 0;
  for (const job of flow.jobs) {
    const n = flowJobSize(job);
    if (n < 0) return -1;
    nested.push(n);
    size += 1 + varintSize(n) + n;
  }
  nested[at] = size;
  return size;
}

function flowJobSize(job: FlowJobId): number {
  const { name, jobId, deduplicated } = job;
  if (typeof deduplicated !== 'boolean') return -1;
  return (
    (name === '' ? 0 : stringFieldSize(1, name)) +
    (jobId === '' ? 0 : stringFieldSize(1, jobId)) +
    (deduplicated ? 2 : 0)
  );
}

function writeAnswer(out: WireWriter, answer: ProduceFlowAnswer, cursor: NestedCursor): void {
  const { code, message, flow } = answer;
  out.tagLength(10, cursor.nested[cursor.at++]!);
  if (code !== 0) out.signedField(8, code);
  if (message !== '') out.string(18, message);
  if (flow !== undefined) writeFlow(out, 26, flow, cursor);
}

/** An EnqueueFlowResponse as the field `tag`. */
function writeFlow(out: WireWriter, tag: number, flow: EnqueueFlowResponse, cursor: NestedCursor): void {
  const { nested } = cursor;
  out.tagLength(tag, nested[cursor.at++]!);
  if (flow.committed) {
    out.byte(8);
    out.byte(1);
  }
  for (const { name, jobId, deduplicated } of flow.jobs) {
    out.tagLength(18, nested[cursor.at++]!);
    if (name !== '') out.string(10, name);
    if (jobId !== '') out.string(18, jobId);
    if (deduplicated) {
      out.byte(24);
      out.byte(1);
    }
  }
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
