/**
 * `[store]`: where the jobs are kept. `kind = "sqlite"` (the default) is the
 * embedded database in `server.data_dir`; `kind = "postgres"` connects to a
 * PostgreSQL database (docs/postgres.md) and needs `url`.
 *
 * The password never sits in the file: a URL that carries one is refused
 * (the message does not repeat it), and it is read from `password_file` or the
 * environment variable `password_env` instead, into a ConfigSecret that every
 * rendering of the config shows redacted. A PostgreSQL setting given while the
 * kind is `sqlite` is refused rather than ignored: it most likely means the
 * kind was forgotten, and running on the wrong store is not a fallback.
 */
import { parsePostgresUrl, postgresTlsEnvProblem, postgresTlsOf } from '../store/postgres-url.ts';
import { asTable, type ConfigReader } from './reader.ts';
import { type StoreEntry, storeSpec } from './schema.ts';
import { readSecret, type SecretIo } from './secret-source.ts';
import { complete } from './section-defaults.ts';
import type { ConfigSecret, StoreConfig } from './types.ts';

/** The settings that mean something only to the PostgreSQL store. */
const postgresOnly = [
  'url',
  'password_file',
  'password_env',
  'pool_size',
  'max_waiting_reads',
  'max_waiting_reads_per_key',
  'statement_timeout_ms',
  'schema',
];

export function readStore(reader: ConfigReader, value: unknown, io: SecretIo | undefined): StoreConfig {
  const given = reader.section('store', storeSpec, value);
  const entry: StoreEntry = complete(reader, storeSpec, given);
  const written = asTable(value) ?? {};
  const set = (key: string) => written[key] !== undefined || reader.overridden(`store.${key}`);
  let password: ConfigSecret | null = null;
  if (entry.kind === 'sqlite') {
    for (const key of postgresOnly) {
      if (!set(key)) continue;
      reader.problem(
        `store.${key}`,
        'is a setting of the PostgreSQL store, but store.kind is "sqlite"; set kind = "postgres" to use PostgreSQL, or remove it',
      );
    }
    return Object.freeze({ ...entry, password });
  }
  if (entry.url === null) {
    if (!reader.failed.has('store.url')) {
      reader.problem(
        'store.url',
        'is missing; store.kind = "postgres" needs the database, e.g. "postgres://sepp@db.example:5432/sepp"',
      );
    }
  } else {
    const target = parsePostgresUrl(entry.url);
    // postgresUrlField checked the form; each host's URL is checked here.
    const urls = target instanceof Error ? [] : target.hosts.map((h) => new URL(h.url));
    // The driver reads `?password=` (and `?sslpassword=`, a client key's passphrase) as libpq does.
    const secretParams = ['password', 'sslpassword'];
    if (urls.some((url) => url.password !== '' || secretParams.some((p) => url.searchParams.has(p)))) {
      reader.problem(
        'store.url',
        'holds a password; remove it from the URL and put it in a file named by store.password_file, or in an environment variable named by store.password_env',
      );
    }
    // TLS that checks the server, or clearly none (postgresTlsOf says what the driver does).
    const tls = urls.map((url) => postgresTlsOf(url.searchParams)).find((t) => t instanceof Error);
    if (tls !== undefined) reader.problem('store.url', tls.message);
    // The driver reads PGSSLMODE when the URL says nothing of TLS: the file must say it.
    const fromEnv =
      io === undefined ? [] : urls.map((url) => postgresTlsEnvProblem(url.searchParams, io.env));
    const envProblem = fromEnv.find((p) => p !== undefined);
    if (tls === undefined && envProblem !== undefined) reader.problem('store.url', envProblem);
    if (urls.some((url) => url.hostname === '' || url.pathname.length <= 1)) {
      reader.problem(
        'store.url',
        'must name the host and the database, e.g. "postgres://sepp@db.example:5432/sepp"',
      );
    }
  }
  if (set('password_file') && set('password_env')) {
    reader.problem(
      'store.password_file',
      'both password_file and password_env are set; set at most one (none when the server needs no password)',
    );
  } else if (entry.passwordFile !== null || entry.passwordEnv !== null) {
    password =
      readSecret(
        reader,
        {
          file: entry.passwordFile,
          env: entry.passwordEnv,
          fileKey: 'store.password_file',
          envKey: 'store.password_env',
          what: 'the PostgreSQL password',
          minBytes: 1,
          maxBytes: 1024,
          hint: '',
        },
        io,
      ) ?? null;
  }
  if (
    !reader.failed.has('store.max_waiting_reads') &&
    !reader.failed.has('store.max_waiting_reads_per_key') &&
    entry.maxWaitingReadsPerKey > entry.maxWaitingReads
  ) {
    reader.problem(
      'store.max_waiting_reads_per_key',
      `${entry.maxWaitingReadsPerKey} is above store.max_waiting_reads (${entry.maxWaitingReads}), so one key could fill the whole queue; lower it or raise store.max_waiting_reads`,
    );
  }
  return Object.freeze({ ...entry, password });
}
