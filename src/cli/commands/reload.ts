/**
 * `sepp config check --against-running` and `sepp config reload`: ask the
 * running server to read its own config file (the one it started with, with
 * its flags and environment) as a reload would, and say what is wrong with
 * it, what would change at once and what would wait for a restart, each
 * setting as `name: old -> new` (a secret as `name: changed`), and what it
 * lowers security by when `--allow-security-downgrade` let that through.
 * `check` changes nothing; `reload` applies it, as SIGHUP does.
 */
import type { ReloadReport, SettingChange } from '../../../clients/typescript/src/index.ts';
import type { CliIo } from '../io.ts';
import { type ConnectionArgs, print, printJson, runWithClient, wantsJson } from './connection.ts';

function printReport(io: CliIo, report: ReloadReport, dryRun: boolean): void {
  const file = report.configFile ?? '(no config file: defaults, environment and flags)';
  if (report.problems.length > 0) {
    io.stderr.write(`${file}: ${report.problems.length} problem(s); the server keeps its configuration\n`);
    for (const p of report.problems) io.stderr.write(`  ${p.key}: ${p.message}\n`);
    // What the file would change besides (a file that loaded): the whole difference, not only its refusal.
    if (report.changes.length > 0) {
      io.stderr.write('the file differs from the running settings in:\n');
      for (const change of report.changes) io.stderr.write(`  ${changeLine(change)}\n`);
    }
    return;
  }
  print(io, dryRun ? `${file}: OK as a reload (nothing was applied)` : `${file}: reloaded`);
  const list = (title: string, names: readonly string[], restart: boolean) => {
    if (names.length === 0) return;
    print(io, title);
    // A server that predates `changes` names the settings only.
    const changes = report.changes.filter((c) => c.restartRequired === restart);
    for (const line of changes.length > 0 ? changes.map(changeLine) : names) print(io, `  ${line}`);
  };
  list(dryRun ? 'would change at once:' : 'changed:', report.changed, false);
  list('needs a restart (keeps its running value until then):', report.restartRequired, true);
  if (report.changed.length === 0 && report.restartRequired.length === 0)
    print(io, 'no setting differs from the running ones');
  // Only with --allow-security-downgrade (else the reload was refused, and its problems say it).
  if (report.securityDowngrades.length > 0) {
    print(io, dryRun ? 'would lower security, as asked:' : 'lowered security, as asked:');
    for (const downgrade of report.securityDowngrades) print(io, `  ${downgrade}`);
  }
}

/** `server.log_level: info -> debug`; `grpc.api_keys: added deploy`; a secret: `store.password_sha256: changed`. */
function changeLine({ key, oldValue, newValue, summary }: SettingChange): string {
  return `${key}: ${summary ?? `${oldValue} -> ${newValue}`}`;
}

/** Runs the reload (or its dry run) against the server and prints the report; problems exit 1. */
export function runReload(
  io: CliIo,
  args: ConnectionArgs & { 'allow-security-downgrade'?: boolean | undefined },
  dryRun: boolean,
): Promise<void> {
  return runWithClient(io, args, async (client) => {
    const report = await client.reloadConfig({
      dryRun,
      allowSecurityDowngrade: args['allow-security-downgrade'] === true,
    });
    if (wantsJson(args)) printJson(io, report);
    else printReport(io, report, dryRun);
    if (report.problems.length > 0) io.exitCode = 1;
  });
}
