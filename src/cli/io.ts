/**
 * What a `sepp` command run reads and writes beyond its arguments: its output
 * streams, standard input, environment, working directory, signals, and how it
 * ends. Every command takes them from one CliIo, never from `process`: the
 * executable's entry (main.ts) gives the real process's (processIo), and the
 * tests run commands in-process with their own (tests/helpers/cli.ts), so that
 * two runs in one process share nothing.
 */
import { resolve } from 'node:path';

/** stdout or stderr: written to, asked whether it is a terminal (and how wide). */
export interface CliOutput extends NodeJS.WritableStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** Standard input: read from, asked whether it is a terminal; raw mode for the hidden password prompt. */
export interface CliInput extends NodeJS.ReadableStream {
  readonly isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

/** Where SIGINT, SIGTERM and SIGHUP arrive, for the commands that act on them (`sepp events`, `sepp serve`). */
export type CliSignals = Pick<NodeJS.EventEmitter, 'on' | 'once' | 'off'>;

export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  readonly stdin: CliInput;
  /** The environment (SEPP_SERVER, SEPP_API_KEY, SEPP_DEBUG, the config variables). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The working directory relative paths (a config file, a backup file) are read against. */
  readonly cwd: string;
  readonly signals: CliSignals;
  /** The run's exit code so far (0 until a command sets it). */
  exitCode: number;
  /**
   * Ends the run at once with this code: the process exits (`sepp serve` once
   * stopped, or on a second signal); an in-process run returns it.
   */
  exit(code: number): void;
}

/** The real process's: what the executable runs with. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    // Only a command that reads it makes the stream (it is a handle on the terminal or pipe).
    get stdin(): CliInput {
      return process.stdin;
    },
    env: process.env,
    cwd: process.cwd(),
    signals: process,
    get exitCode(): number {
      return typeof process.exitCode === 'number' ? process.exitCode : 0;
    },
    set exitCode(code: number) {
      process.exitCode = code;
    },
    exit: (code) => process.exit(code),
  };
}

/** A path the user gave, read against the run's working directory. */
export function pathIn(io: CliIo, path: string): string {
  return resolve(io.cwd, path);
}

/** Everything on standard input, up to its end. */
export async function readAll(input: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}
