/**
 * Listen addresses (`host:port`) and whether they are loopback. Loopback
 * decides the fail-closed rules (SPEC §6), so anything not provably loopback
 * — a wildcard, a LAN address, any host name but `localhost` — counts as
 * reachable from the network.
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface ListenAddress {
  /** Host to bind: an IPv4 address, an IPv6 address without brackets, or a host name. */
  readonly host: string;
  /** TCP port; 0 asks the system for a free one (tests). */
  readonly port: number;
  /** `host:port` with IPv6 hosts in brackets, as gRPC and logs want it. */
  readonly address: string;
  /** True when only this machine can connect. */
  readonly loopback: boolean;
}

export type ListenParse = { ok: true; value: ListenAddress } | { ok: false; message: string };

const hostNameRe =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const usage = 'write host:port, e.g. "127.0.0.1:50051", "0.0.0.0:50051" or "[::1]:50051"';

export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  if (isIPv4(host)) return host.startsWith('127.');
  // A zone id (`fe80::1%eth0`) names an interface: the URL parser below refuses it, and
  // parseListenAddress never lets one through, so such a host is not provably loopback.
  if (host.includes('%')) return false;
  if (isIPv6(host)) {
    // The URL parser puts IPv6 into one canonical form, so "0:0:0:0:0:0:0:1"
    // and "::1" compare equal; IPv4-mapped 127.x comes out as ::ffff:7fxx:xxxx.
    const canonical = new URL(`http://[${host}]/`).hostname.slice(1, -1);
    return canonical === '::1' || /^::ffff:7f[0-9a-f]{2}:/.test(canonical);
  }
  return false;
}

export function parseListenAddress(text: string): ListenParse {
  const trimmed = text.trim();
  let host: string;
  let portText: string;
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(trimmed);
  if (bracketed !== null) {
    host = bracketed[1] ?? '';
    portText = bracketed[2] ?? '';
    const zone = host.indexOf('%');
    if (zone >= 0) {
      // Node's isIPv6 accepts a zone id, but gRPC's address parser and the URL parser do not;
      // refuse it here with a message instead of failing later with a TypeError.
      const port = portText === '' ? '50051' : portText;
      return {
        ok: false,
        message: `"${text}": an IPv6 zone id ("${host.slice(zone)}") is not supported; write the address without it, e.g. "[${host.slice(0, zone) || '::1'}]:${port}", or listen on "[::]:${port}"`,
      };
    }
    if (!isIPv6(host)) return { ok: false, message: `"${text}": "${host}" is not an IPv6 address; ${usage}` };
  } else {
    const colon = trimmed.lastIndexOf(':');
    if (colon < 0) {
      const hint = /^\d+$/.test(trimmed) ? `; to listen on port ${trimmed} write "127.0.0.1:${trimmed}"` : '';
      return { ok: false, message: `"${text}" has no port; ${usage}${hint}` };
    }
    host = trimmed.slice(0, colon);
    portText = trimmed.slice(colon + 1);
    if (host.includes(':')) {
      return { ok: false, message: `"${text}": put an IPv6 address in brackets, e.g. "[::1]:50051"` };
    }
    if (host === '') return { ok: false, message: `"${text}" has no host; ${usage}` };
    if (!isIPv4(host) && !hostNameRe.test(host)) {
      return { ok: false, message: `"${text}": "${host}" is not an IP address or host name; ${usage}` };
    }
  }
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) {
    return { ok: false, message: `"${text}": the port must be a number from 0 to 65535; ${usage}` };
  }
  const address = isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
  return { ok: true, value: { host, port, address, loopback: isLoopbackHost(host) } };
}

/** `listen` with the port the server bound (port 0 asks the system for one): the address it actually listens on. */
export function boundAddress(listen: ListenAddress, port: number): ListenAddress {
  const address = isIPv6(listen.host) ? `[${listen.host}]:${port}` : `${listen.host}:${port}`;
  return { ...listen, port, address };
}
