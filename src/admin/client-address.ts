/**
 * Who the client is, for login throttling and the audit log. Normally the
 * socket's peer. Behind a reverse proxy every client would be the proxy, so
 * for peers listed in admin.trusted_proxies the client is read from
 * `X-Forwarded-For`: walking it from the right (each proxy appends the
 * address it received from), the first address that is not itself a trusted
 * proxy. Entries left of it were written by the client and prove nothing. A
 * header from any other peer is ignored, so nobody can pick their own address
 * by sending one.
 */
import { BlockList, isIP } from 'node:net';

export interface ClientAddressOptions {
  /** `address/prefix` ranges, as the config holds them. */
  trustedProxies: readonly string[];
  /** Told once when a peer that is no trusted proxy sends X-Forwarded-For (a proxy not listed?). */
  onUntrustedForward?: (peer: string) => void;
}

/**
 * `::ffff:10.0.0.1` (how a dual-stack socket shows an IPv4 peer) → `10.0.0.1`;
 * a zone id is dropped; `[v6]:port` and `v4:port` (some proxies write a port) lose it.
 * Undefined when what is left is no IP address.
 */
export function normalizeAddress(text: string): string | undefined {
  let address = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed !== null) address = bracketed[1] ?? '';
  else if (/^[\d.]+:\d+$/.test(address)) address = address.slice(0, address.lastIndexOf(':'));
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) address = mapped[1] ?? '';
  return isIP(address) === 0 ? undefined : address.toLowerCase();
}

/** Makes the function that names the client of a request from its peer address and X-Forwarded-For. */
export function clientAddressResolver(
  options: ClientAddressOptions,
): (peer: string, forwardedFor: string | undefined) => string {
  const trusted = new BlockList();
  for (const range of options.trustedProxies) {
    const [address = '', prefix = ''] = range.split('/');
    trusted.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  const isTrusted = (address: string) => trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  let told = false;
  return (peerText, forwardedFor) => {
    const peer = normalizeAddress(peerText);
    if (peer === undefined) return peerText;
    if (forwardedFor === undefined || forwardedFor.trim() === '') return peer;
    if (!isTrusted(peer)) {
      if (!told) {
        told = true;
        options.onUntrustedForward?.(peer);
      }
      return peer;
    }
    // The nearest hop we trust so far: the answer if the header runs out or holds garbage.
    let client = peer;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalizeAddress(hops[i] ?? '');
      if (hop === undefined) return client;
      client = hop;
      if (!isTrusted(hop)) return hop;
    }
    return client;
  };
}
