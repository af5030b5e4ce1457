#!/usr/bin/env node
/**
 * The `sepp` executable: runs the command line (run.ts) with the real
 * process's output, input, environment and signals (io.ts). Thin: each command
 * parses its flags with yargs and calls into the app (serve) or the config
 * layer; operator commands talk to a running server through the SDK.
 *
 * Whatever goes wrong ends as one line on stderr starting `sepp:` and a
 * documented exit code (failure.ts), never a stack trace.
 */
import { hideBin } from 'yargs/helpers';
import { reportFailure } from './failure.ts';
import { type CliIo, processIo } from './io.ts';
import { runCli } from './run.ts';

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

function installLastResort(io: CliIo): void {
  const fatal = (error: unknown) => {
    io.exitCode = reportFailure(io, error);
    process.exit();
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}

const io = processIo();
quietGrpcTlsWarning();
installLastResort(io);
void runCli(hideBin(process.argv), io);
