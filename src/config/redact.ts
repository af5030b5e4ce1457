/**
 * The configuration as it may be shown — in the admin UI, in logs, in
 * `sepp config show` — with every secret replaced by "<redacted>". Secrets are
 * found by field name, so a secret field added later is covered as long as
 * its name says what it is.
 */
import { parsePostgresUrl } from '../store/postgres-url.ts';
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
  const target = /^postgres(ql)?:\/\/[^/?#]*,/.test(text) ? parsePostgresUrl(text) : undefined;
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
