/**
 * How the `sepp` command fails: one line on stderr starting `sepp:`, and an
 * exit code that says what kind of failure it was (docs/cli.md). Never a stack
 * trace: an error nobody anticipated is still one line, and SEPP_DEBUG=1 adds
 * the stack for a bug report.
 */
import type { CliIo } from './io.ts';

/** Exit codes of every command (documented in --help and docs/cli.md). */
export const exitCodes = {
  ok: 0,
  failed: 1,
  invalidInput: 2,
  unreachable: 3,
  denied: 4,
  notFound: 5,
  /** A wait ran out of time (sepp job --wait --timeout-ms). */
  timedOut: 6,
  /** The user pressed Ctrl-C at a prompt (128 + SIGINT, as shells report it). */
  interrupted: 130,
} as const;

export const exitCodesEpilogue = `Exit codes:
  0  done
  1  failed (the message says why); for serve: could not start
  2  invalid input (flags, arguments, configuration, or a request the server refused as invalid)
  3  cannot reach the server (--server), it is shutting down, or its store is unavailable
  4  not authenticated, or the API key's role does not allow this (--api-key, SEPP_API_KEY)
  5  not found (no such job or queue)
  6  timed out waiting (sepp job --wait --timeout-ms)`;

/** A failure with its message and exit code, for anything the CLI itself refuses. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** A problem with what the user typed: exit 2. */
export class UsageError extends CliError {
  override name = 'UsageError';
  constructor(message: string) {
    super(message, exitCodes.invalidInput);
  }
}

/** A refusal that is neither an error nor a success (e.g. a declined confirmation): exit 1. */
export class Declined extends CliError {
  override name = 'Declined';
  constructor(message: string) {
    super(message, exitCodes.failed);
  }
}

/** Folds a message onto one line: the lines of a multi-line message become clauses. */
export function oneLine(message: string): string {
  return message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('; ')
    .replace(/:;\s/g, ': ');
}

/** Writes `sepp: <message>` to stderr, one line (and the stack with SEPP_DEBUG=1). */
export function printFailure(io: CliIo, message: string, error?: unknown): void {
  io.stderr.write(`sepp: ${oneLine(message)}\n`);
  if (io.env.SEPP_DEBUG && error instanceof Error && error.stack !== undefined) {
    io.stderr.write(`${error.stack}\n`);
  }
}

/** The message of anything thrown: the text an operator can act on, without a stack. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * Reports an error no command handled itself and returns the exit code for
 * it. A CliError carries its own; anything else is unexpected (exit 1).
 */
export function reportFailure(io: CliIo, error: unknown): number {
  if (error instanceof CliError) {
    printFailure(io, error.message, error);
    return error.exitCode;
  }
  printFailure(io, `unexpected error: ${messageOf(error)} (SEPP_DEBUG=1 shows where)`, error);
  return exitCodes.failed;
}

/**
 * Reads an integer flag strictly: "abc", "1.5" and "1e3" are refused with a
 * message naming the flag and the range, instead of reaching the server as NaN.
 */
export function integerFlag(flag: string, text: string, range: { min: number; max: number }): number {
  const trimmed = text.trim();
  const value = /^-?\d{1,16}$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < range.min || value > range.max) {
    const bounds =
      range.max === Number.MAX_SAFE_INTEGER ? `${range.min} or more` : `from ${range.min} to ${range.max}`;
    throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a whole number ${bounds}`);
  }
  return value;
}
