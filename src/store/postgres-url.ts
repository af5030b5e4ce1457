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

const urlRe = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/;

/** Parses `url`; a string that is not such a URL is an Error whose message names the problem. */
export function parsePostgresUrl(url: string): PostgresTarget | Error {
  const m = urlRe.exec(url);
  if (m === null) return new Error('must start with postgres:// or postgresql://');
  const [, scheme = '', userinfo = '', hostList = '', rest = ''] = m;
  const queryAt = rest.indexOf('?');
  const path = queryAt < 0 ? rest : rest.slice(0, queryAt);
  const params = new URLSearchParams(queryAt < 0 ? '' : rest.slice(queryAt + 1));
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (attrs !== 'any' && attrs !== 'read-write') {
    return new Error(`target_session_attrs is "${attrs}"; sepp reads "any" and "read-write"`);
  }
  params.delete('target_session_attrs');
  const query = params.size > 0 ? `?${params}` : '';
  const names = hostList.split(',');
  if (names.some((h) => h === ''))
    return new Error('must name the host, e.g. postgres://sepp@db.example:5432/sepp');
  const hosts = names.map((host) => ({ host, url: `${scheme}${userinfo}${host}${path}${query}` }));
  return { hosts, targetSessionAttrs: attrs };
}
