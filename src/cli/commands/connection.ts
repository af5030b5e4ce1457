/**
 * What every operator command shares: the connection flags, making the
 * client, printing for people or for scripts, and turning failures into a
 * clear message and a distinct exit code.
 */
import { readFileSync } from 'node:fs';
import type { Argv } from 'yargs';
import { JobRejectedError, SeppClient, SeppError } from '../../../clients/typescript/src/index.ts';

/** Exit codes of the operator commands (documented in --help and docs/cli.md). */
export const exitCodes = {
  ok: 0,
  failed: 1,
  invalidInput: 2,
  unreachable: 3,
  denied: 4,
  notFound: 5,
  timedOut: 6,
} as const;

export const exitCodesEpilogue = `Exit codes:
  0  done
  1  failed (the message says why)
  2  invalid input (flags, arguments, or a request the server refused as invalid)
  3  cannot reach the server (--server), or it is shutting down
  4  not authenticated, or the API key's role does not allow this (--api-key, SEPP_API_KEY)
  5  not found (no such job or queue)
  6  timed out waiting (sepp job --wait --timeout-ms)`;

/** A problem with what the user typed: exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A refusal that is neither an error nor a success (e.g. a declined confirmation): exit 1. */
export class Declined extends Error {
  override name = 'Declined';
}

export interface ConnectionArgs {
  server: string;
  'api-key'?: string | undefined;
  tls?: boolean | undefined;
  ca?: string | undefined;
  output: string;
  /** The output flag, except for `enqueue` where it is the payload. */
  json?: boolean | string | undefined;
}

const defaultServer = '127.0.0.1:50051';

/** Adds the connection and output flags to a command. `jsonFlag` is false for `enqueue`, where --json is the payload. */
export function withConnection<T>(y: Argv<T>, jsonFlag = true) {
  const base = y
    .option('server', {
      type: 'string',
      default: process.env.SEPP_SERVER || defaultServer,
      defaultDescription: `$SEPP_SERVER or ${defaultServer}`,
      describe: 'Address of the sepp server (host:port)',
    })
    .option('api-key', {
      type: 'string',
      describe: 'API key (default: $SEPP_API_KEY); prefer the variable, flags show up in `ps`',
    })
    .option('tls', { type: 'boolean', describe: 'Use TLS, trusting the system CAs (or --ca)' })
    .option('ca', { type: 'string', describe: 'CA certificate file (PEM) to trust; implies --tls' })
    .option('output', {
      alias: 'o',
      choices: ['table', 'json'],
      default: 'table',
      describe: 'table for people, json for scripts',
    })
    .epilogue(exitCodesEpilogue);
  return jsonFlag ? base.option('json', { type: 'boolean', describe: 'Same as --output json' }) : base;
}

export function wantsJson(args: ConnectionArgs): boolean {
  return args.output === 'json' || args.json === true;
}

export function connect(args: ConnectionArgs): SeppClient {
  const apiKey = args['api-key'] || process.env.SEPP_API_KEY || undefined;
  let tls: { ca: Buffer } | true | undefined;
  if (args.ca !== undefined) {
    try {
      tls = { ca: readFileSync(args.ca) };
    } catch (error) {
      throw new UsageError(`--ca ${args.ca}: ${error instanceof Error ? error.message : String(error)}`);
    }
  } else if (args.tls === true) tls = true;
  return SeppClient.connect(args.server, {
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(tls === undefined ? {} : { tls }),
  });
}

/** Prints one line (or block) to stdout. */
export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}

const unreachableDetail =
  /No connection established|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|Failed to connect|Name resolution failed/i;

/** The message and exit code for anything a command failed with. */
export function describeFailure(error: unknown, server: string): { message: string; exitCode: number } {
  if (error instanceof UsageError) return { message: error.message, exitCode: exitCodes.invalidInput };
  if (error instanceof Declined) return { message: error.message, exitCode: exitCodes.failed };
  if (!(error instanceof SeppError)) {
    return { message: error instanceof Error ? error.message : String(error), exitCode: exitCodes.failed };
  }
  if (error instanceof JobRejectedError) {
    const exitCode =
      error.code === 'invalid_argument'
        ? exitCodes.invalidInput
        : error.code === 'not_found'
          ? exitCodes.notFound
          : exitCodes.failed;
    return { message: `job refused (${error.reason}): ${error.message}`, exitCode };
  }
  switch (error.code) {
    case 'unavailable':
      if (unreachableDetail.test(error.message)) {
        // grpc-js says "No connection established. Last error: Error: connect ECONNREFUSED …. Resolution note: ";
        // the socket error is the useful part.
        const cause =
          /(?:connect|getaddrinfo) [A-Z_]+[^\s]*(?: [^\s]+)?/.exec(error.message)?.[0] ?? error.message;
        return {
          message: `cannot reach sepp at ${server}; is it running? (--server)\n  ${cause.replace(/\.$/, '')}`,
          exitCode: exitCodes.unreachable,
        };
      }
      return {
        message: `sepp at ${server} is unavailable: ${error.message}`,
        exitCode: exitCodes.unreachable,
      };
    case 'deadline_exceeded':
      // A wait that ran out of time (the server answered; the job has not finished).
      if (/did not finish within/.test(error.message)) {
        return { message: error.message, exitCode: exitCodes.timedOut };
      }
      return {
        message: `sepp at ${server} did not answer in time; is it running and reachable? (--server)`,
        exitCode: exitCodes.unreachable,
      };
    case 'unauthenticated':
      return {
        message: `not authenticated: ${error.message} (give a valid key with --api-key or SEPP_API_KEY)`,
        exitCode: exitCodes.denied,
      };
    case 'permission_denied':
      return { message: `permission denied: ${error.message}`, exitCode: exitCodes.denied };
    case 'not_found':
      return { message: error.message, exitCode: exitCodes.notFound };
    case 'invalid_argument':
      return { message: error.message, exitCode: exitCodes.invalidInput };
    default:
      return { message: error.message, exitCode: exitCodes.failed };
  }
}

/**
 * Runs an operator command: connects, runs `body`, closes, and turns a
 * failure into a message on stderr and its exit code.
 */
export async function runWithClient(
  args: ConnectionArgs,
  body: (client: SeppClient) => Promise<void>,
): Promise<void> {
  let client: SeppClient | undefined;
  try {
    client = connect(args);
    await body(client);
  } catch (error) {
    const { message, exitCode } = describeFailure(error, args.server);
    process.stderr.write(`sepp: ${message}\n`);
    process.exitCode = exitCode;
  } finally {
    await client?.close().catch(() => {});
  }
}
