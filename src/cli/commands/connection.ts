/**
 * What every operator command shares: the connection flags, making the
 * client, printing for people or for scripts, and turning failures into a
 * clear message and a distinct exit code.
 */
import { readFileSync } from 'node:fs';
import type { Argv } from 'yargs';
import { JobRejectedError, SeppClient, SeppError } from '../../../clients/typescript/src/index.ts';
import { buildInfo } from '../../build-info.ts';
import { parseListenAddress } from '../../config/index.ts';
import { CliError, exitCodes, exitCodesEpilogue, messageOf, printFailure, UsageError } from '../failure.ts';
import { type CliIo, pathIn } from '../io.ts';
import { diagnoseUnreachable, type ServerTarget } from './connection-errors.ts';
import { notReadyReason, readyzUrlFor } from './refused-reason.ts';

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

/**
 * The user agent of every connection the command makes: the server's audit
 * log records its changes as `via: cli` (src/rpc/audit-input.ts).
 */
export const cliUserAgent = `sepp-cli/${buildInfo.version}`;

/** Adds the connection and output flags to a command. `jsonFlag` is false for `enqueue`, where --json is the payload. */
export function withConnection<T>(io: CliIo, y: Argv<T>, jsonFlag = true) {
  const base = y
    .option('server', {
      type: 'string',
      requiresArg: true,
      default: io.env.SEPP_SERVER || defaultServer,
      defaultDescription: `$SEPP_SERVER or ${defaultServer}`,
      describe: 'Address of the sepp server (host:port)',
    })
    .option('api-key', {
      type: 'string',
      requiresArg: true,
      describe: 'API key (default: $SEPP_API_KEY); prefer the variable, flags show up in `ps`',
    })
    .option('tls', { type: 'boolean', describe: 'Use TLS, trusting the system CAs (or --ca)' })
    .option('ca', {
      type: 'string',
      requiresArg: true,
      describe: 'CA certificate file (PEM) to trust; implies --tls',
    })
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

/**
 * Reads --server: `host:port`, nothing else. A URL or a missing port would
 * otherwise reach grpc-js, which reads `127.0.0.1` as port 443 and
 * `http://…` as a host name to resolve.
 */
export function parseServer(text: string, tls: boolean): ServerTarget {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text.trim());
  if (scheme !== null) {
    const rest = text.trim().slice(scheme[0].length).replace(/\/.*$/, '');
    const secure = /s$/i.test(scheme[1] ?? '') ? ' and --tls' : '';
    throw new UsageError(
      `--server ${text}: give host:port without a scheme, e.g. --server ${rest || '127.0.0.1:50051'}${secure}`,
    );
  }
  const parsed = parseListenAddress(text);
  if (!parsed.ok) {
    const noPort = /has no port/.test(parsed.message);
    throw new UsageError(
      noPort
        ? `--server ${text} has no port; write host:port, e.g. --server ${text.trim()}:50051 (sepp's default gRPC port)`
        : `--server ${parsed.message}`,
    );
  }
  if (parsed.value.port === 0) throw new UsageError(`--server ${text}: port 0 is not a server's port`);
  return { host: parsed.value.host, port: parsed.value.port, address: parsed.value.address, tls };
}

/** TLS from --ca (that CA's PEM) or --tls (true: the system's CAs); undefined for plaintext. */
export function readCa(io: CliIo, args: ConnectionArgs): Buffer | true | undefined {
  if (args.ca !== undefined) {
    try {
      return readFileSync(pathIn(io, args.ca));
    } catch (error) {
      throw new UsageError(`--ca ${args.ca}: ${messageOf(error)}`);
    }
  }
  return args.tls === true ? true : undefined;
}

export function connect(io: CliIo, args: ConnectionArgs): { client: SeppClient; target: ServerTarget } {
  // null, not undefined: the SDK would otherwise read the key from the process's environment, not io's.
  const apiKey = args['api-key'] || io.env.SEPP_API_KEY || null;
  const ca = readCa(io, args);
  const tls = ca === undefined || ca === true ? ca : { ca };
  const target = parseServer(args.server, tls !== undefined);
  const client = SeppClient.connect(target.address, {
    userAgent: cliUserAgent,
    apiKey,
    ...(tls === undefined ? {} : { tls }),
  });
  return { client, target };
}

/** Controls a terminal acts on: C0 but the line break and the tab, DEL, and C1 (0x9b is an 8-bit CSI). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const terminalControls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Writes a line (or lines) to standard output. What the server answers may hold text a worker or
 * a producer wrote (a job's error, a progress note), so control characters are shown as their
 * `\u` escapes and never reach the operator's terminal as commands (ANSI escapes that clear,
 * recolour or retitle it, a carriage return that writes over a line). JSON output is unchanged
 * as JSON: an escape in a string is the same character.
 */
export function print(io: CliIo, text: string): void {
  const shown = text.replace(terminalControls, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  io.stdout.write(shown.endsWith('\n') ? shown : `${shown}\n`);
}

export function printJson(io: CliIo, value: unknown): void {
  print(io, JSON.stringify(value, null, 2));
}

/** Whether the server answered that its store is unavailable (PostgreSQL down or restarting, say). */
export function storeUnavailable(error: unknown): SeppError | undefined {
  return error instanceof SeppError &&
    error.code === 'unavailable' &&
    /^storage unavailable/.test(error.message)
    ? error
    : undefined;
}

/** What a command says when the server runs but its store is unavailable. */
export function storeUnavailableMessage(server: string, error: SeppError): string {
  const runs = `sepp at ${server} runs, but its store is unavailable: ${error.message}`;
  // The server marks a failure a repeat helps only once someone fixes the server (`sepp-retry:
  // operator`: the database refuses the store's login, a newer sepp migrated the schema under
  // it), or never; its reason says what does. A one-shot command does not advise repeating.
  if (error.retry === 'operator' || error.retry === 'never') return runs;
  return `${runs}; repeat the call once the database answers again (the server's log says more)`;
}

/** The message and exit code for anything a command failed with. */
export async function describeFailure(
  error: unknown,
  target: ServerTarget | undefined,
  io?: CliIo,
): Promise<{ message: string; exitCode: number }> {
  if (error instanceof CliError) return { message: error.message, exitCode: error.exitCode };
  if (!(error instanceof SeppError)) {
    return { message: messageOf(error), exitCode: exitCodes.failed };
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
  const server = target?.address ?? 'the server';
  switch (error.code) {
    case 'unavailable':
      // "shutting down" and "storage unavailable" come from a server that answered. The
      // latter may carry the database's own network error (PostgreSQL's ECONNREFUSED): it
      // is not this connection's, and the server is there.
      if (storeUnavailable(error) !== undefined) {
        return { message: storeUnavailableMessage(server, error), exitCode: exitCodes.unreachable };
      }
      if (
        target !== undefined &&
        /No connection established|Failed to connect|connect E|getaddrinfo|Name resolution|Protocol error|SSL|certificate/i.test(
          error.message,
        )
      ) {
        return {
          message: (await diagnoseUnreachable(target, error.message, io && (() => refusedReason(io, target))))
            .message,
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
      // In the command's words: its flag and variable, not the SDK's option or gRPC metadata.
      return {
        message: /needs an API key|authorization: Bearer/.test(error.message)
          ? 'not authenticated: the server needs an API key; give it with --api-key or SEPP_API_KEY ' +
            '(`sepp admin new-api-key` makes one)'
          : 'not authenticated: the server refused the API key; give a valid key with --api-key or SEPP_API_KEY',
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
 * failure into one line on stderr and its exit code.
 */
export async function runWithClient(
  io: CliIo,
  args: ConnectionArgs,
  body: (client: SeppClient) => Promise<void>,
): Promise<void> {
  let connection: ReturnType<typeof connect> | undefined;
  try {
    connection = connect(io, args);
    await body(connection.client);
  } catch (error) {
    const { message, exitCode } = await describeFailure(error, connection?.target, io);
    printFailure(io, message, error);
    io.exitCode = exitCode;
  } finally {
    await connection?.client.close().catch(() => {});
  }
}

/** The reason the server refusing `target` gives at its /readyz, by this shell's configuration (refused-reason.ts). */
async function refusedReason(
  io: CliIo,
  target: ServerTarget,
): Promise<{ reason: string; where: string } | undefined> {
  const url = readyzUrlFor(io, target);
  if (url === undefined) return undefined;
  const reason = await notReadyReason(url);
  return reason === undefined ? undefined : { reason, where: url.href };
}
