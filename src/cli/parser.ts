/**
 * The `sepp` command line: every command registered on one yargs parser.
 * run.ts runs it; tests build it in dry-run mode, where the command path and
 * flags are parsed and validated exactly as for real but no command runs
 * (tests/cli/docs-commands.test.ts checks every `sepp …` line of the docs so).
 */
import yargs, { type Argv } from 'yargs';
import { buildInfo } from '../build-info.ts';
import { closestKey } from '../config/index.ts';
import { runningAsSea, verifySeaAssets } from '../platform/sea-assets.ts';
import { runStoreSelfTest } from '../platform/selftest.ts';
import { schemaVersions } from '../store/schema-versions.ts';
import { registerAdminCommands } from './commands/admin.ts';
import { registerBackupCommand } from './commands/backup.ts';
import { print } from './commands/connection.ts';
import { registerOperatorCommands } from './commands/index.ts';
import { registerConfigCommands } from './config-commands.ts';
import { exitCodes, exitCodesEpilogue, messageOf, printFailure, UsageError } from './failure.ts';
import type { CliIo } from './io.ts';
import { registerServeCommand } from './serve.ts';

/** Thrown in dry-run mode instead of running a command: the line parsed and validated. */
export class DryRunAccepted extends Error {
  override name = 'DryRunAccepted';
  constructor(readonly argv: Readonly<Record<string, unknown>>) {
    super('dry run: the command line is valid');
  }
}

export interface CliOptions {
  /** Parse and validate, then throw DryRunAccepted instead of running the command. */
  dryRun?: boolean;
}

/**
 * The top-level commands, for "unknown command" and its suggestion (yargs
 * keeps its list internal). tests/cli/docs-commands.test.ts checks it against
 * what `sepp --help` lists.
 */
export const topLevelCommands: readonly string[] = [
  'serve',
  'config',
  'enqueue',
  'queues',
  'job',
  'events',
  'dlq',
  'pause',
  'resume',
  'queue',
  'schedules',
  'workers',
  'flow',
  'batch',
  'status',
  'cancel',
  'update',
  'purge',
  'audit',
  'bulk',
  'backup',
  'admin',
  'selftest',
  'version',
];

/** Flags and positionals that take a list (everything else keeps its last value). */
const repeatable: ReadonlySet<string> = new Set([
  '_',
  'meta',
  'ids',
  'state',
  'settings',
  'keys',
  'depends-on',
  'dependsOn',
]);
/** Flags that take a list in one command only (`--queue` is a single queue elsewhere). */
const repeatableIn: Readonly<Record<string, ReadonlySet<string>>> = {
  events: new Set(['queue', 'job', 'kind']),
};

/** Commands whose second word is a subcommand, with their subcommands (checked like topLevelCommands). */
export const commandGroups: Readonly<Record<string, readonly string[]>> = {
  config: ['example', 'check', 'reload'],
  dlq: ['list', 'requeue', 'delete', 'top-errors'],
  queue: ['show', 'set', 'reset', 'delete'],
  schedules: ['list', 'show', 'pause', 'resume', 'trigger', 'delete'],
  admin: ['hash-password', 'new-api-key'],
  bulk: ['requeue', 'cancel', 'run-now', 'delete', 'list', 'status', 'stop'],
  flow: ['show', 'cancel'],
  batch: ['list', 'show', 'seal', 'cancel'],
};

/** The flags of `sepp serve`: given without a command, they were meant for it. */
const serveFlags: readonly string[] = [
  'config',
  'data-dir',
  'grpc-listen',
  'admin-listen',
  'durability',
  'log-level',
  'log-format',
];

/**
 * The positionals a command line lacks, by name: `missing TYPE` rather than
 * yargs' count. `registered` holds every command string registered so far
 * (`enqueue <queue> <type>`); the failing command's builder ran last, so the
 * latest string starting with its word is its own (`show <queue>` of `queue`,
 * not `show <name>` of `schedules`, whose builder never ran).
 */
function missingPositionals(
  given: number,
  commandWords: readonly string[],
  registered: readonly string[],
): string | undefined {
  const word = commandWords.at(-1);
  const declared = registered.findLast((c) => c.split(' ')[0] === word);
  if (declared === undefined) return undefined;
  const required = [...declared.matchAll(/<([a-z-]+)(\.\.)?>/g)].map(
    (m) => `${(m[1] ?? '').toUpperCase()}${m[2] === undefined ? '' : '…'}`,
  );
  const missing = required.slice(given);
  if (missing.length === 0) return undefined;
  const usage = ['sepp', ...commandWords, ...required].join(' ');
  return `missing ${missing.join(' and ')}: ${usage}`;
}

/**
 * yargs' own messages, as one line that says what to do. `words` are the
 * command words the user typed, for the `--help` hint.
 */
function usageMessage(
  message: string,
  args: readonly string[],
  known: readonly string[],
  registered: readonly string[],
): string {
  const words = args.filter((a) => !a.startsWith('-'));
  const [first, second] = words;
  const unknown = /^Unknown arguments?: (.*)$/s.exec(message);
  const unknownWords = (unknown?.[1] ?? '').split(', ');
  if (unknown !== null && !words.some((w) => known.includes(w))) {
    const meantForServe = args.find((a) => serveFlags.some((f) => a === `--${f}` || a.startsWith(`--${f}=`)));
    if (meantForServe !== undefined) {
      return `${meantForServe.split('=')[0]} is a flag of sepp serve: to run the server, sepp serve ${args.join(' ')}`;
    }
  }
  if (unknown !== null && first !== undefined && !known.includes(first) && unknownWords[0] === first) {
    const suggestion = closestKey(first, known);
    const hint = suggestion === undefined ? '' : `; did you mean ${suggestion}?`;
    return `unknown command "${first}"${hint} (sepp --help lists the commands)`;
  }
  const subcommands = first === undefined ? undefined : commandGroups[first];
  if (unknown !== null && subcommands !== undefined && second !== undefined && unknownWords[0] === second) {
    const suggestion = closestKey(second, subcommands);
    const hint = suggestion === undefined ? '' : `; did you mean ${suggestion}?`;
    return `unknown ${first} subcommand "${second}"${hint} (sepp ${first} --help lists them)`;
  }
  if (unknown !== null) {
    // yargs names unknown flags without their dashes: give them back, so "--bogus" reads as a flag.
    const shown = unknownWords.map((w) =>
      args.some((a) => a === `--${w}` || a.startsWith(`--${w}=`))
        ? `--${w}`
        : args.includes(`-${w}`)
          ? `-${w}`
          : `"${w}"`,
    );
    message = `${shown.some((w) => w.startsWith('-')) ? 'unknown option' : 'unexpected argument'}${shown.length > 1 ? 's' : ''} ${shown.join(', ')}`;
  }
  const command =
    first === undefined || !known.includes(first)
      ? 'sepp'
      : subcommands !== undefined && second !== undefined && subcommands.includes(second)
        ? `sepp ${first} ${second}`
        : `sepp ${first}`;
  const notEnough = /^Not enough non-option arguments: got (\d+)/.exec(message);
  if (notEnough !== null && first !== undefined) {
    const commandWords = command.split(' ').slice(1);
    const missing = missingPositionals(Number(notEnough[1]), commandWords, registered);
    if (missing !== undefined) return `${missing} (see ${command} --help)`;
  }
  const text = message
    .replace(/^Invalid values:\s*Argument: (\S+), Given: (.*?), Choices: (.*)$/s, '--$1 $2 is not one of $3')
    .replace(
      /^Not enough non-option arguments: got (\d+), need at least (\d+)$/,
      'missing arguments ($1 given, $2 needed)',
    )
    .replace(
      /^Too many non-option arguments: got (\d+), maximum of (\d+)$/,
      'too many arguments ($1 given, at most $2)',
    )
    .replace(/^Missing required arguments?: /, 'missing required argument: ')
    .replace(/^Not enough arguments following: (\S+)$/, '--$1 needs a value');
  return `${text} (see ${command} --help)`;
}

/**
 * yargs reads `--file -` as the flag without a value followed by a "-"
 * argument; `--file=-` is what the user meant (standard input).
 */
export function joinDashValues(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    if (/^--[a-z][a-z-]*$/.test(arg) && args[i + 1] === '-') {
      out.push(`${arg}=-`);
      i++;
    } else out.push(arg);
  }
  return out;
}

export function buildCli(args: readonly string[], io: CliIo, options: CliOptions = {}): Argv {
  const registered: string[] = [];
  const parser = yargs(joinDashValues(args))
    .scriptName('sepp')
    .usage(
      '$0 <command>\n\nA durable, fast job queue in one executable. `sepp serve` runs the server ' +
        '(sepp serve --help lists its flags); the other commands talk to a running one.',
    )
    .version(`sepp ${buildInfo.version} (${buildInfo.commit})`)
    .alias('version', 'V')
    .help()
    .alias('help', 'h')
    .strict()
    .wrap(Math.min(100, io.stdout.columns || 100))
    .epilogue(exitCodesEpilogue)
    .fail((message, error) => {
      // yargs' own parse errors (YError, e.g. a flag missing its value) are usage errors too.
      if (error && error.name !== 'YError') throw error;
      throw new UsageError(usageMessage(message ?? error?.message ?? '', args, topLevelCommands, registered));
    });
  skipHelpCache(parser);
  // yargs keeps one instance for every command's builder: this sees nested commands too.
  const command = parser.command.bind(parser) as (...commandArgs: unknown[]) => Argv;
  parser.command = ((...commandArgs: unknown[]) => {
    const [declared] = commandArgs;
    for (const form of Array.isArray(declared) ? declared : [declared]) {
      if (typeof form === 'string') registered.push(form);
    }
    return command(...commandArgs);
  }) as Argv['command'];
  // A flag given twice is set to the last value, as in most commands (yargs would make
  // a list of them, which no single-valued flag expects); the repeatable ones keep all.
  parser.middleware((argv) => {
    const lists = repeatableIn[String(argv._[0])];
    for (const [key, value] of Object.entries(argv)) {
      if (Array.isArray(value) && !repeatable.has(key) && lists?.has(key) !== true) argv[key] = value.at(-1);
    }
  }, true);
  if (options.dryRun === true) {
    parser.middleware((argv) => {
      // --help prints help and runs nothing; it is no command line to accept.
      if (argv.help !== true) throw new DryRunAccepted(argv);
    }, false);
  }
  // `sepp` alone prints the help: a server starts only when asked (`sepp serve`), so a
  // mistyped command line never makes a data directory where it was typed.
  parser.command(
    '$0',
    false,
    () => {},
    () => {
      parser.showHelp('log');
    },
  );
  registerServeCommand(parser, io);
  registerConfigCommands(parser, io);
  registerOperatorCommands(parser, io);
  registerBackupCommand(parser, io);
  registerAdminCommands(parser, io);
  parser.command(
    'selftest',
    'Check that this build can run SQLite (and, in the single executable, that its assets are intact)',
    () => {},
    () => {
      let result: ReturnType<typeof runStoreSelfTest>;
      try {
        result = runStoreSelfTest();
      } catch (error) {
        printFailure(io, `selftest failed: ${messageOf(error)}`, error);
        io.exitCode = exitCodes.failed;
        return;
      }
      print(
        io,
        `SQLite ${result.sqliteVersion}, journal_mode=${result.journalMode}, addon ${result.nativeBinding}`,
      );
      if (runningAsSea()) {
        const assets = verifySeaAssets();
        print(io, `${assets.count} embedded assets, ${assets.sizeBytes} bytes, sha256 verified`);
      } else {
        print(io, 'no embedded assets (not running as the single executable)');
      }
      print(io, 'OK');
    },
  );
  parser.command(
    'version',
    'Print the version and git commit',
    (y) =>
      y.option('json', {
        type: 'boolean',
        describe: 'As JSON: {"version": …, "commit": …, "schemaVersions": {"sqlite": …, "postgres": …}}',
      }),
    (argv) => {
      if (argv.json === true) {
        print(io, JSON.stringify({ version: buildInfo.version, commit: buildInfo.commit, schemaVersions }));
      } else print(io, `sepp ${buildInfo.version} (${buildInfo.commit})`);
    },
  );
  return parser;
}

/**
 * yargs renders a command's whole help text right after starting its handler
 * (lib/command.js, `cacheHelpMessage`), for a handler that asks for its help
 * later: ~90 ms of CPU on every command. No handler of sepp's does (a failure
 * goes to `.fail` above, which prints no help; `--help` runs no handler and
 * renders the help as before), so nothing is cached. yargs has no option for
 * it; its usage object is internal, so this does nothing if a later yargs has
 * no such method.
 */
function skipHelpCache(parser: Argv): void {
  type Internal = {
    getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: () => void } };
  };
  const usage = (parser as unknown as Internal).getInternalMethods?.().getUsageInstance?.();
  if (typeof usage?.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => {};
}
