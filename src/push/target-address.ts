/**
 * Which addresses a push may connect to (the SSRF stance, docs/http.md).
 * Targets come only from the config file, but a file's URL can still name a
 * host that resolves to the server's own loopback, a private network, a
 * cloud metadata service (169.254.169.254) or the like; those are refused
 * unless the target says `allow_private_targets = true`. The check runs on
 * every address a host name resolves to, at connect time, on the address the
 * socket then uses — so a DNS answer that changes between a check and the
 * connection (DNS rebinding) cannot slip past it. Redirects are never
 * followed: a 3xx answer is a failed attempt.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Address ranges that are not the public internet (IANA special-purpose registries). */
const notPublic = new BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  notPublic.addSubnet(address, prefix, 'ipv4');
}
for (const [address, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64 (an IPv4 address inside)
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (an IPv4 address inside)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  notPublic.addSubnet(address, prefix, 'ipv6');
}

/** Why `address` may not be connected to, or null when it is a public address. */
export function refusalOf(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  // IPv4-mapped IPv6 (::ffff:10.0.0.1) is checked against the IPv4 ranges by BlockList.
  if (notPublic.check(address, family === 4 ? 'ipv4' : 'ipv6')) {
    return `${address} is a loopback, private, link-local or otherwise non-public address`;
  }
  return null;
}

export class TargetRefused extends Error {
  override name = 'TargetRefused';
  readonly code = 'ESEPPTARGETREFUSED';
}

/** The host of a URL as a socket wants it: IPv6 without its brackets. */
export function socketHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * A `lookup` for http.request that resolves as usual and refuses the
 * connection when any address is not public (unless allowed). Node calls it
 * only for host names; an IP literal is checked by `checkLiteral`.
 */
export function guardedLookup(allowPrivate: boolean, queueKey: string): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, '', 0);
        return;
      }
      if (!allowPrivate) {
        for (const { address } of addresses) {
          const why = refusalOf(address);
          if (why !== null) {
            callback(
              new TargetRefused(
                `refused to connect: ${hostname} resolves to ${why} (${queueKey}.allow_private_targets)`,
              ),
              '',
              0,
            );
            return;
          }
        }
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4);
    });
  };
}

/** The refusal of a URL whose host is an IP literal that is not public (unless allowed), or null. */
export function checkLiteral(url: URL, allowPrivate: boolean, queueKey: string): string | null {
  const host = socketHost(url);
  if (allowPrivate || isIP(host) === 0) return null;
  const why = refusalOf(host);
  return why === null ? null : `refused to connect: ${why} (${queueKey}.allow_private_targets)`;
}
