/**
 * The configuration as it may be shown — in the admin UI, in logs, in
 * `sepp config show` — with every secret replaced by "<redacted>". Secrets are
 * found by field name, so a secret field added later is covered as long as
 * its name says what it is.
 */
import { parsePostgresUrl, splitPostgresUrl } from '../store/postgres-url.ts';
import type { SeppConfig } from './types.ts';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export const redacted = '<redacted>';

/** Field names whose values are secrets (or hashes of them, which allow guessing weak ones offline). */
const secretFields = new Set([
  'key',
  'keySha256',
  'passwordHash',
  'password',
  'secret',
  'token',
  'metricsTokenSha256',
]);

/**
 * Credentials in a URL (`https://user:token@collector`, `?api_key=…`) are
 * secrets too; the scheme, host and path stay visible.
 */
export function redactUrl(text: string): string {
  // A PostgreSQL URL may list several hosts (a failover's), which `URL` does not read: each
  // host's URL is redacted, and the hosts are shown together.
  const target = splitPostgresUrl(text)?.hostList.includes(',') ? parsePostgresUrl(text) : undefined;
  if (target !== undefined) {
    if (target instanceof Error) return redacted;
    const each = target.hosts.map((h) => redactUrl(h.url));
    if (each.some((u) => u === redacted)) return redacted;
    const first = each[0]!;
    const scheme = first.slice(0, first.indexOf('//') + 2);
    const head = first.startsWith(`${scheme}${redacted}@`) ? `${scheme}${redacted}@` : scheme;
    const hosts = target.hosts.map((h) => h.host).join(',');
    return head + hosts + first.slice(head.length + target.hosts[0]!.host.length);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return redacted;
  }
  const userinfo = url.username === '' && url.password === '' ? '' : `${redacted}@`;
  const query = url.search === '' ? '' : `?${redacted}`;
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${query}`;
}

/** The URL parameters the PostgreSQL driver reads as secrets (the config refuses them in store.url). */
const postgresSecretParams = new Set(['password', 'sslpassword']);

/**
 * Where a PostgreSQL store is, for the log: `user@host:port/database?parameters` (several
 * hosts as `host1:5432,host2:5432`), without the scheme. The user and the parameters
 * (`sslmode`, `target_session_attrs`, `application_name`…) are no secret and tell an operator
 * which role and which TLS mode the server uses; the password never sits in store.url (the
 * config refuses it), and if one did, it would show as `<redacted>`, as would `?password=`.
 */
export function describePostgresUrl(url: string): string {
  // A fragment (`#…`) is no part of a connection URL: nothing after a `#` is shown.
  const parts = splitPostgresUrl(url.split('#', 1)[0] ?? '');
  if (parts === null) return redacted;
  const { userinfo, hostList, path, query } = parts;
  const colon = userinfo?.indexOf(':') ?? -1;
  const user =
    userinfo === undefined ? '' : colon === -1 ? `${userinfo}@` : `${userinfo.slice(0, colon)}:${redacted}@`;
  const params =
    query === ''
      ? ''
      : `?${query
          .split('&')
          .map((pair) => {
            const name = decodeURIComponentSafe(pair.split('=')[0] ?? '');
            return postgresSecretParams.has(name) ? `${pair.split('=')[0]}=${redacted}` : pair;
          })
          .join('&')}`;
  return `${user}${hostList}${path}${params}`;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether a field (camelCase, as in SeppConfig) holds a secret or a hash of one. */
export function isSecretField(name: string): boolean {
  return secretFields.has(name);
}

export function redactConfig(config: SeppConfig): { [key: string]: JsonValue } {
  const text = JSON.stringify(config, (key, value: unknown) => {
    if (isSecretField(key)) return redacted;
    if (key === 'otlpEndpoint' && typeof value === 'string') return redactUrl(value);
    // A push target's URL may carry credentials too (config.push.NAME.url).
    if (key === 'url' && typeof value === 'string') return redactUrl(value);
    return value;
  });
  return JSON.parse(text);
}
