/**
 * A queue named on the command line that the server does not know (NOT_FOUND):
 * exit 5, the queue probably meant (`did you mean emails?`) when one is close,
 * and how to go on. Every command that takes a QUEUE answers a typo so.
 */
import { type SeppClient, SeppError } from '../../../clients/typescript/src/index.ts';
import { closestKey } from '../../config/index.ts';
import { CliError, exitCodes } from '../failure.ts';

const listHint = '`sepp queues` lists the queues';

/** "; did you mean X?" for the name in `names` closest to `queue`, or nothing. */
function meant(queue: string, names: readonly string[]): string {
  const near = closestKey(queue, names);
  return near === undefined ? '' : `; did you mean ${near}?`;
}

/**
 * The error a command ends with when `error` is the server's NOT_FOUND for
 * `queue`: its message, the queue meant, and `onPurpose` (how to act on a new
 * queue on purpose) or the hint that `sepp queues` lists them. Anything else is
 * returned as it is.
 */
export async function explainUnknownQueue(
  client: SeppClient,
  queue: string,
  error: unknown,
  onPurpose: string = listHint,
): Promise<unknown> {
  if (!(error instanceof SeppError) || error.code !== 'not_found') return error;
  const names = await client.listQueues().then(
    (queues) => queues.map((q) => q.name),
    () => [],
  );
  // Under strict_queues the queue is undeclared, and nothing creates it: no --create hint then.
  const unused = /no job was ever enqueued/.test(error.message);
  return new CliError(
    `${error.message}${meant(queue, names)}${unused ? ` (${onPurpose})` : ''}`,
    exitCodes.notFound,
  );
}

/** The error for a queue not among `names` (a command that read the list itself). */
export function unknownQueue(queue: string, names: readonly string[]): CliError {
  return new CliError(
    `queue ${queue} does not exist${meant(queue, names)} (${listHint})`,
    exitCodes.notFound,
  );
}
