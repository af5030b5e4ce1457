/**
 * Files that others should not read: the config file when it holds a secret
 * in plain text, the TLS private keys, the PostgreSQL password file, a push
 * target's signing secret file, and the data directory (whoever reads the
 * database reads every job). "Others" are users who are neither the
 * file's owner nor in its group: a group such as `sepp` that only the service
 * is in is a legitimate way to share a file (root:sepp 0640). The server logs
 * each finding at start and `sepp config check` prints it; neither refuses to
 * run, because the operator may have reasons the server cannot see.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { SeppConfig } from './types.ts';
import type { ConfigWarning } from './warnings.ts';

export interface FileMode {
  /** Permission bits (mode & 0o777). */
  readonly mode: number;
  readonly isDirectory: boolean;
}

/** The file's mode, or undefined when it does not exist or cannot be seen. */
export type StatMode = (path: string) => FileMode | undefined;

export const statMode: StatMode = (path) => {
  const stat = statSync(path, { throwIfNoEntry: false });
  return stat === undefined ? undefined : { mode: stat.mode & 0o777, isDirectory: stat.isDirectory() };
};

/** Files in the data directory that hold job data (the database and SQLite's companions). */
export const databaseFiles = ['sepp.db', 'sepp.db-wal', 'sepp.db-shm'];

const octal = (mode: number) => `0${mode.toString(8).padStart(3, '0')}`;
const othersRead = 0o004;
const othersAny = 0o007;

export function filePermissionWarnings(config: SeppConfig, stat: StatMode = statMode): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  const warn = (key: string, message: string) => warnings.push({ key, message });

  const file = config.configFile;
  const secrets = config.plaintextSecrets;
  const fileMode = file === null ? undefined : stat(file);
  if (file !== null && fileMode !== undefined && secrets.length > 0 && (fileMode.mode & othersRead) !== 0) {
    warn(
      secrets[0] ?? '',
      `${file} is readable by other users (mode ${octal(fileMode.mode)}) and holds ${secrets.join(', ')} in plain text; ` +
        `make it private (chmod o-rwx ${file}) or write the SHA-256 instead (key_sha256, metrics_token_sha256)`,
    );
  }

  for (const [key, tls] of [
    ['grpc.tls.key_file', config.grpc.tls],
    ['admin.tls.key_file', config.admin.tls],
    ['http.tls.key_file', config.http.tls],
  ] as const) {
    const keyMode = tls === null ? undefined : stat(tls.keyFile);
    if (tls !== null && keyMode !== undefined && (keyMode.mode & othersRead) !== 0) {
      warn(
        key,
        `${tls.keyFile} is readable by other users (mode ${octal(keyMode.mode)}): anyone on this machine can impersonate the server; chmod o-rwx ${tls.keyFile}`,
      );
    }
  }

  // The store's password logs in as the role that owns every job.
  const passwordFile = config.store.passwordFile;
  const passwordMode = passwordFile === null ? undefined : stat(passwordFile);
  if (passwordFile !== null && passwordMode !== undefined && (passwordMode.mode & othersRead) !== 0) {
    warn(
      'store.password_file',
      `${passwordFile} is readable by other users (mode ${octal(passwordMode.mode)}): anyone on this machine can log in to the database as sepp's role and read every job; chmod o-rwx ${passwordFile}`,
    );
  }

  // A push target's secret signs its deliveries: whoever reads it can forge one the target accepts.
  for (const [queue, target] of Object.entries(config.push)) {
    const secretMode = target.secretFile === null ? undefined : stat(target.secretFile);
    if (target.secretFile !== null && secretMode !== undefined && (secretMode.mode & othersRead) !== 0) {
      warn(
        `queues.${queue}.push.secret_file`,
        `${target.secretFile} is readable by other users (mode ${octal(secretMode.mode)}): anyone on this machine can sign requests that queue ${queue}'s push target takes as sepp's deliveries; chmod o-rwx ${target.secretFile}`,
      );
    }
  }

  const dir = config.server.dataDir;
  const dirMode = stat(dir);
  if (dirMode !== undefined && (dirMode.mode & othersAny) !== 0) {
    warn(
      'server.data_dir',
      `${dir} is open to other users (mode ${octal(dirMode.mode)}); whoever can read the database can read every job: chmod 700 ${dir}`,
    );
  }
  // Files in a directory others cannot enter are out of their reach whatever their mode.
  if (dirMode !== undefined && (dirMode.mode & 0o001) !== 0) {
    for (const name of databaseFiles) {
      const path = join(dir, name);
      const mode = stat(path);
      if (mode !== undefined && (mode.mode & othersRead) !== 0) {
        warn(
          'server.data_dir',
          `${path} is readable by other users (mode ${octal(mode.mode)}): chmod 600 ${path}`,
        );
      }
    }
  }
  return warnings;
}
