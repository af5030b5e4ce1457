/**
 * Answers sent beyond their room, as a metric. gRPC's unary answers
 * (rpc/unsent-answers.ts) and the HTTP API's (http/unsent-answers.ts) are held
 * in budgets of bytes not yet read; an answer that does not fit is refused,
 * unless its call changed something that stays (refusing it would have its
 * client repeat what was done): then it is sent all the same, overdrawing the
 * budgets. On gRPC, calls let in together whose answers came out larger than
 * guessed do that; on the HTTP API only a write whose answer outgrew the room
 * it reserved, a wrong bound (a bug, logged once as
 * `http.answer_beyond_reservation`). This reads the counts when someone
 * collects.
 */
import type { Meter } from '@opentelemetry/api';
import { attr } from './attributes.ts';

export interface AnswerCounts {
  /** Answers sent past a full budget since the start, by door (`grpc`, `http`). */
  readonly beyondRoom: Readonly<Record<string, number>>;
}

export function observeAnswers(meter: Meter, read: () => AnswerCounts | undefined): void {
  const beyondRoom = meter.createObservableCounter('sepp.answers.beyond_room', {
    unit: '{answer}',
    description:
      'Answers sent though the answers not yet read filled their budget, because their call had changed something, by door: grpc (calls let in together answered more than guessed; grpc.max_bytes_in_flight_per_connection, _per_key), http (a write answered more than the room it reserved: a bug, logged as http.answer_beyond_reservation)',
  });
  beyondRoom.addCallback((result) => {
    const counts = read();
    if (counts === undefined) return;
    for (const [door, n] of Object.entries(counts.beyondRoom)) result.observe(n, { [attr.door]: door });
  });
}
