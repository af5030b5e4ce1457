/**
 * `--request-key KEY` on every command that starts a bulk operation: the SDK's
 * `requestKey`, so that running the command again (after a crash, a lost
 * connection, a killed terminal) answers with the operation the first run
 * started instead of starting a second. Without it the SDK makes a key per run.
 */
import { isRequestKey, requestKeyMaxChars } from '../../config/index.ts';
import { UsageError } from '../failure.ts';

export const requestKeyOption = {
  type: 'string',
  requiresArg: true,
  describe: 'Name this start: run again with the same key within 24 h, it starts nothing new',
} as const;

/** The call's `requestKey` option from --request-key: none without the flag. */
export function requestKeyOf(args: { 'request-key'?: string | undefined }): { requestKey?: string } {
  const key = args['request-key'];
  if (key === undefined) return {};
  // The server's rule, checked here to name the flag before any call.
  if (!isRequestKey(key)) {
    throw new UsageError(
      `--request-key must be 1 to ${requestKeyMaxChars} letters, digits, '-', '_', '.' or ':' (got ${JSON.stringify(key.slice(0, 140))}), e.g. nightly-requeue-2026-12-07`,
    );
  }
  return { requestKey: key };
}
