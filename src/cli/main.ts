#!/usr/bin/env node
/**
 * The `sepp` command. Thin: each command parses its flags with yargs and
 * calls into the app (serve) or the config layer; operator commands talk to a
 * running server through the SDK. `sepp` alone means `sepp serve`.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { buildInfo } from '../build-info.ts';
import { runningAsSea, verifySeaAssets } from '../store/sea-assets.ts';
import { runStoreSelfTest } from '../store/selftest.ts';
import { registerBackupCommand } from './commands/backup.ts';
import { exitCodesEpilogue, registerOperatorCommands } from './commands/index.ts';
import { registerConfigCommands } from './config-commands.ts';
import { registerServeCommand } from './serve.ts';

export function cli(argv: readonly string[]) {
  const parser = yargs([...argv])
    .scriptName('sepp')
    .usage('$0 [command]\n\nA durable, fast job queue in one executable. Without a command, runs the server.')
    .version(`sepp ${buildInfo.version} (${buildInfo.commit})`)
    .alias('version', 'V')
    .help()
    .alias('help', 'h')
    .strict()
    .wrap(Math.min(100, process.stdout.columns || 100))
    .recommendCommands()
    .epilogue(exitCodesEpilogue)
    .fail((message, error) => {
      if (error) throw error;
      process.stderr.write(`sepp: ${message}\nRun \`sepp --help\` for usage.\n`);
      process.exit(2);
    });
  registerServeCommand(parser);
  registerConfigCommands(parser);
  registerOperatorCommands(parser);
  registerBackupCommand(parser);
  parser.command(
    'selftest',
    'Check that this build can run SQLite (and, in the single executable, that its assets are intact)',
    () => {},
    () => {
      const result = runStoreSelfTest();
      console.log(
        `SQLite ${result.sqliteVersion}, journal_mode=${result.journalMode}, addon ${result.nativeBinding}`,
      );
      if (runningAsSea()) {
        const assets = verifySeaAssets();
        console.log(`${assets.count} embedded assets, ${assets.sizeBytes} bytes, sha256 verified`);
      } else {
        console.log('no embedded assets (not running as the single executable)');
      }
      console.log('OK');
    },
  );
  parser.command(
    'version',
    'Print the version and git commit',
    () => {},
    () => {
      console.log(`sepp ${buildInfo.version} (${buildInfo.commit})`);
    },
  );
  return parser;
}

void cli(hideBin(process.argv)).parseAsync();
