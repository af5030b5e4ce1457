#!/usr/bin/env node
/**
 * The `sepp` command. Thin: each command parses its flags with yargs and
 * calls into the app (serve) or the config layer; operator commands talk to a
 * running server through the SDK. `sepp` alone means `sepp serve`.
 *
 * Whatever goes wrong ends as one line on stderr starting `sepp:` and a
 * documented exit code (failure.ts), never a stack trace.
 */
import { hideBin } from 'yargs/helpers';
import { reportFailure } from './failure.ts';
import { buildCli } from './parser.ts';

/**
 * grpc-js hands Node an IP address as the TLS server name whenever --server is
 * an IP, and Node warns about it (DEP0123) on the user's terminal. The
 * warning is about grpc-js, not about anything the user can change.
 */
function quietGrpcTlsWarning(): void {
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    if (warning.code === 'DEP0123') return;
    for (const print of printers) print(warning);
  });
}

function installLastResort(): void {
  const fatal = (error: unknown) => {
    process.exitCode = reportFailure(error);
    process.exit();
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}

quietGrpcTlsWarning();
installLastResort();
buildCli(hideBin(process.argv))
  .parseAsync()
  .catch((error: unknown) => {
    process.exitCode = reportFailure(error);
  });
