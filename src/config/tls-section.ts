/**
 * A [grpc.tls] or [admin.tls] table: both files named, and — when the caller
 * gives file access — present and holding a usable certificate and key.
 */
import { asTable, type ConfigReader } from './reader.ts';
import { tlsSpec } from './schema.ts';
import { tlsFilesProblems } from './tls-files.ts';
import type { TlsFiles } from './types.ts';

export interface TlsCheckIo {
  /** When given, TLS files are checked to exist. */
  readonly fileExists?: ((path: string) => boolean) | undefined;
  /** When given, TLS files are read and checked to hold a usable certificate and key (tls-files.ts). */
  readonly readPem?: ((path: string) => string) | undefined;
}

/** Reads a TLS table; null when the section is absent or incomplete (the problem is reported). */
export function readTls(reader: ConfigReader, path: string, value: unknown, io: TlsCheckIo): TlsFiles | null {
  if (value === undefined) return null;
  const files = reader.section(path, tlsSpec, value);
  const table = asTable(value);
  if (table === undefined) return null;
  const fix = `[${path}] needs both cert_file and key_file (PEM files); remove [${path}] to serve without TLS`;
  for (const key of ['cert_file', 'key_file'] as const) {
    if (table[key] === undefined) reader.problem(`${path}.${key}`, `is missing: ${fix}`);
  }
  if (files.certFile === undefined || files.keyFile === undefined) return null;
  const tls = { certFile: files.certFile, keyFile: files.keyFile };
  let missing = false;
  for (const [key, file] of [
    ['cert_file', tls.certFile],
    ['key_file', tls.keyFile],
  ] as const) {
    if (io.fileExists !== undefined && !io.fileExists(file)) {
      missing = true;
      reader.problem(
        `${path}.${key}`,
        `${file} does not exist (a relative path is relative to the config file's directory)`,
      );
    }
  }
  if (!missing && io.readPem !== undefined) {
    for (const problem of tlsFilesProblems(tls, io.readPem)) {
      const file = problem.file === 'cert_file' ? tls.certFile : tls.keyFile;
      reader.problem(`${path}.${problem.file}`, `${file} ${problem.message}`);
    }
  }
  return tls;
}
