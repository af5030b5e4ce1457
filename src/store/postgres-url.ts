/**
 * A PostgreSQL connection URL as sepp reads it (docs/postgres.md, "Failover"): libpq's
 * multi-host form `postgres://user@host1:5432,host2:5432/db?target_session_attrs=read-write`,
 * which the `pg` driver does not read. Each host becomes a URL of its own (the driver's
 * form); `target_session_attrs` says which host a connection keeps: `any` (the first that
 * answers, the default) or `read-write` (the first that accepts writes: the primary after a
 * failover). Pure parsing, shared by the config's checks and the PostgreSQL store.
 */

export type TargetSessionAttrs = 'any' | 'read-write';

export interface PostgresTarget {
  /** One single-host URL per host, in the order given (without target_session_attrs). */
  readonly hosts: readonly { readonly host: string; readonly url: string }[];
  readonly targetSessionAttrs: TargetSessionAttrs;
}

/** A PostgreSQL URL cut into its parts as written, before any check of them. */
export interface PostgresUrlParts {
  /** `postgres://` or `postgresql://`. */
  readonly scheme: string;
  /** What comes before the `@` (user, or user:password), without it; undefined without an `@`. */
  readonly userinfo: string | undefined;
  /** The hosts as written, comma-separated: `host1:5432,host2:5432`. */
  readonly hostList: string;
  /** `/database`, or ''. */
  readonly path: string;
  /** What follows the first `?`, or ''. */
  readonly query: string;
}

const urlRe = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/;

/** Cuts `url` into its parts; null when it does not start with postgres:// or postgresql://. */
export function splitPostgresUrl(url: string): PostgresUrlParts | null {
  const m = urlRe.exec(url);
  if (m === null) return null;
  const [, scheme = '', userinfo, hostList = '', rest = ''] = m;
  const queryAt = rest.indexOf('?');
  return {
    scheme,
    userinfo,
    hostList,
    path: queryAt < 0 ? rest : rest.slice(0, queryAt),
    query: queryAt < 0 ? '' : rest.slice(queryAt + 1),
  };
}

/** Parses `url`; a string that is not such a URL is an Error whose message names the problem. */
export function parsePostgresUrl(url: string): PostgresTarget | Error {
  const parts = splitPostgresUrl(url);
  if (parts === null) return new Error('must start with postgres:// or postgresql://');
  const { scheme, userinfo, hostList, path } = parts;
  const params = new URLSearchParams(parts.query);
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (attrs !== 'any' && attrs !== 'read-write') {
    return new Error(`target_session_attrs is "${attrs}"; sepp reads "any" and "read-write"`);
  }
  params.delete('target_session_attrs');
  const query = params.size > 0 ? `?${params}` : '';
  const names = hostList.split(',');
  if (names.some((h) => h === ''))
    return new Error('must name the host, e.g. postgres://sepp@db.example:5432/sepp');
  const user = userinfo === undefined ? '' : `${userinfo}@`;
  const hosts = names.map((host) => ({ host, url: `${scheme}${user}${host}${path}${query}` }));
  return { hosts, targetSessionAttrs: attrs };
}

/**
 * What the `pg` driver does about TLS for one host's URL: `verified` (TLS checking the
 * server's certificate and host name), `none`, or an Error for a form sepp refuses — TLS
 * without that check, or a libpq word the driver reads otherwise than libpq. The driver
 * (pg-connection-string, without `uselibpqcompat`) reads, in this order: any `sslmode` (only
 * `disable` turns TLS off; `no-verify` drops the check; every other word is verify-full);
 * else any of `sslrootcert`, `sslcert`, `sslkey` (verified TLS); else `ssl` (`true` or `1`:
 * verified TLS, `0`: none, `no-verify`: unchecked TLS); else `sslnegotiation=direct` (TLS).
 * The message completes "store.url …" and says what to write instead.
 */
export function postgresTlsOf(params: URLSearchParams): 'verified' | 'none' | Error {
  const fix = 'write sslmode=verify-full (with sslrootcert=FILE for a private CA) or sslmode=disable';
  const mode = params.get('sslmode');
  if (mode === 'verify-full') return 'verified';
  if (mode === 'disable') return 'none';
  if (mode === 'no-verify') {
    return new Error(
      `has sslmode=no-verify, which turns TLS on without checking the server's certificate, so anyone on the path can pose as the database; ${fix}`,
    );
  }
  if (mode === 'prefer' || mode === 'require' || mode === 'verify-ca') {
    // What libpq means by them, an unverified or a hostless check, the driver does not do.
    return new Error(
      `has sslmode=${mode}, which sepp's PostgreSQL driver checks as verify-full (the certificate and the host name); ${fix}`,
    );
  }
  if (mode !== null) return new Error(`has sslmode=${mode}, which is not a mode sepp reads; ${fix}`);
  if (['sslrootcert', 'sslcert', 'sslkey'].some((p) => params.has(p))) return 'verified';
  const ssl = params.get('ssl');
  if (ssl === 'true' || ssl === '1') return 'verified';
  if (ssl === '0') return 'none';
  if (ssl === 'no-verify') {
    return new Error(
      `has ssl=no-verify, which turns TLS on without checking the server's certificate, so anyone on the path can pose as the database; ${fix}`,
    );
  }
  if (ssl !== null) {
    return new Error(`has ssl=${ssl}, which the driver reads as neither on nor off; ${fix}`);
  }
  return params.get('sslnegotiation') === 'direct' ? 'verified' : 'none';
}

/** The URL parameters that settle TLS for the driver, so that it reads no PGSSLMODE. */
const tlsParams = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'ssl'];

/** libpq's certificate variables, which the driver never reads, and the URL parameter it reads instead. */
const certVariables = [
  ['PGSSLROOTCERT', 'sslrootcert'],
  ['PGSSLCERT', 'sslcert'],
  ['PGSSLKEY', 'sslkey'],
] as const;

/**
 * What the environment would change about one host's TLS, as a message completing
 * "store.url …", or undefined when nothing. When the URL settles TLS (a parameter
 * postgresTlsOf reads), the driver reads no PGSSLMODE; when it does not, the driver
 * turns TLS on or off by PGSSLMODE: `disable` agrees with the URL, every other word
 * would make the TLS differ from what the file says, so it is refused (the file alone
 * says how sepp reaches its database: the config check, its warnings and the admin
 * UI read the file). PGSSLROOTCERT, PGSSLCERT and PGSSLKEY the driver never reads: one
 * set for a URL without its parameter most likely meant it, so it is refused too, as
 * is a PGSSLNEGOTIATION the driver would refuse to connect with (a word it does not
 * read, or `direct` without TLS).
 * An empty variable counts as unset, as the driver reads it.
 */
export function postgresTlsEnvProblem(
  params: URLSearchParams,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const set = (name: string) => (env[name] ?? '') !== '';
  const cert = certVariables.find(([variable, param]) => set(variable) && !params.has(param));
  if (cert !== undefined) {
    const [variable, param] = cert;
    return `is read with ${variable} set in the environment, which sepp's PostgreSQL driver does not read (libpq does); write ${param}=FILE in store.url, or unset ${variable}`;
  }
  const negotiation = env.PGSSLNEGOTIATION ?? '';
  if (!params.has('sslnegotiation') && negotiation !== '' && negotiation !== 'postgres') {
    // The driver refuses to connect then: said by the check, not at the first connection.
    if (negotiation !== 'direct') {
      return `is read with PGSSLNEGOTIATION=${negotiation} in the environment, which sepp's PostgreSQL driver refuses (it reads "postgres" and "direct"); unset PGSSLNEGOTIATION`;
    }
    if (postgresTlsOf(params) === 'none') {
      return 'is read with PGSSLNEGOTIATION=direct in the environment, which needs TLS, and the URL turns none on; write sslmode=verify-full in store.url, or unset PGSSLNEGOTIATION';
    }
  }
  const settled = tlsParams.some((p) => params.has(p)) || params.get('sslnegotiation') === 'direct';
  const mode = env.PGSSLMODE ?? '';
  if (settled || mode === '' || mode === 'disable') return undefined;
  const fix =
    'write sslmode=verify-full (with sslrootcert=FILE for a private CA) or sslmode=disable in store.url, or unset PGSSLMODE';
  const known = ['no-verify', 'prefer', 'require', 'verify-ca', 'verify-full'].includes(mode);
  if (!known) {
    return `has no sslmode, and the environment's PGSSLMODE=${mode} is not a mode sepp's PostgreSQL driver reads (it connects without TLS, where libpq refuses the word); ${fix}`;
  }
  const reads =
    mode === 'no-verify'
      ? "TLS without checking the server's certificate, so anyone on the path can pose as the database"
      : 'TLS checking the certificate and the host name against the system CAs only';
  return `has no sslmode, so the driver reads the environment's PGSSLMODE=${mode} as ${reads}, which the file does not say; ${fix}`;
}
