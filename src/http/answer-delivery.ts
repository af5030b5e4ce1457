/**
 * One JSON request's answer, from when the request is let in until the answer's last byte was
 * handed to the kernel: the room it keeps, then the bytes it holds, in the budgets of answers
 * not yet sent (unsent-answers.ts), and what its handler asked to undo if the answer never
 * reaches the client whole (`ApiRequest.onAnswerLost`: a reserve gives its jobs back) — because
 * it was refused, an error was answered instead, the write deadline cut it, or its connection
 * closed first.
 *
 * A write (a POST that is not a long-poll) reserves room for the most its answer can be, from its
 * parsed request (`JsonRoute.answerBytesMax`, answer-bounds.ts), before its handler runs, and is
 * refused then when the room is not there: once it ran, its answer is sent (a 429 would have its
 * client do it again), and it fits the room reserved. Only a read (`GET`, harmless to repeat) or a
 * reserve (whose jobs are given back, and which leased nothing otherwise) may be refused its
 * answer after it ran.
 */
import type { ServerResponse } from 'node:http';
import { SeppError } from '../engine/errors.ts';
import type { KeyRefusalLines } from '../platform/key-refusal-lines.ts';
import type { OnRequestEnd } from '../platform/pipelined-requests.ts';
import { type EncodedJson, sendJson } from './json-answer.ts';
import type { AnswerRoom, UnsentAnswers } from './unsent-answers.ts';

export class AnswerDelivery {
  /** What the handler asked to undo if its answer never reaches the client whole. */
  private undo: ((partlySent: boolean) => Promise<unknown>) | undefined;
  /** Its room in the budgets, once let in. */
  private room: AnswerRoom | undefined;
  /** The answer's last byte was handed to the kernel. */
  private delivered = false;
  /** The caller's key, once let in (the log's lines name it). */
  private key: string | undefined;

  constructor(
    private readonly onEnd: OnRequestEnd,
    /** Told of an undo that failed: the undo answers its expected failures itself, so a bug. */
    private readonly onBug: (error: unknown) => void,
    /** Told of each refusal and each answer given back, by key (`http.answers_refused`). */
    private readonly refusals?: KeyRefusalLines,
  ) {}

  /**
   * Lets the request of `key` to `operation` in against the budgets, keeping room for its answer
   * until the request ends; throws the refusal when a budget is full.
   */
  admit(answers: UnsentAnswers, key: string, operation: string, longPoll: boolean): void {
    this.key = key;
    const room = answers.admit(key, operation, longPoll);
    if (room instanceof SeppError) throw this.refused(room);
    this.room = room;
    this.onEnd(room.end);
  }

  /** Runs `undo` if the answer never reaches the client whole (at most once). */
  onLost(undo: (partlySent: boolean) => Promise<unknown>): void {
    this.undo = undo;
  }

  /** The answer will not be sent, or not whole (`partlySent`: its client may hold part of it). */
  lost(partlySent: boolean): void {
    const undo = this.undo;
    this.undo = undefined;
    if (undo === undefined) return;
    if (this.key !== undefined) this.refusals?.givenBack(this.key);
    undo(partlySent).catch(this.onBug);
  }

  /**
   * A write's room, once its request was parsed: `bytes`, the most its answer can be, reserved
   * before it runs; throws the refusal when a budget has no room for it.
   */
  reserve(bytes: number): void {
    const refused = this.room?.reserve(bytes) ?? null;
    if (refused !== null) throw this.refused(refused);
  }

  /** An error is answered instead: what the handler did is undone, its room given back now. */
  failed(): void {
    this.lost(false);
    this.room?.end();
  }

  /** Tells the log's lines of `refusal` (a budget full), which is then thrown. */
  private refused(refusal: SeppError): SeppError {
    if (this.key !== undefined) this.refusals?.refused(this.key);
    return refusal;
  }

  /** Sends `encoded` as the 200 answer, or throws why it is refused (not a write's: a read's, a reserve's). */
  send(res: ServerResponse, encoded: EncodedJson, closing: boolean): void {
    const refused = this.room?.hold(encoded.byteLength);
    if (refused instanceof SeppError) throw this.refused(refused);
    res.once('finish', () => {
      this.delivered = true;
    });
    // Cut by the write deadline, or its connection closed first: the client has not all of it.
    // An answer still waiting behind another on its connection (pipelining) was never given
    // the socket (Node assigns it in turn), so none of it was written.
    this.onEnd(() => {
      if (!this.delivered) this.lost(res.socket !== null);
    });
    sendJson(res, { status: 200, value: encoded, closing });
  }
}
