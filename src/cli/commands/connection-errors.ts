/**
 * Connection mistakes named as the mistake. grpc-js reports every way of not
 * reaching a server as UNAVAILABLE with a transport message ("Failed to
 * connect", "Protocol error", an OpenSSL error string); an operator needs to
 * hear "that port speaks TLS: add --tls" or "that is the admin port". When the
 * message alone does not say which, the server is probed once, briefly: a TLS
 * handshake (does it speak TLS?) and an HTTP/1 request (is it the admin UI?).
 * Probes run only after a call failed, so a working connection costs nothing.
 */
import { isIP, connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** Where the CLI tried to connect, as parsed from --server. */
export interface ServerTarget {
  host: string;
  port: number;
  /** `host:port` as the user gave it. */
  address: string;
  tls: boolean;
}

const probeTimeoutMs = 2000;
const refusedRe = /ECONNREFUSED/;
const unresolvedRe = /ENOTFOUND|EAI_AGAIN|Name resolution failed/i;
const hostUnreachableRe = /EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/;
const notTlsRe =
  /wrong version number|WRONG_VERSION_NUMBER|packet length too long|unknown protocol|http request/i;
const untrustedRe =
  /self[- ]signed certificate|unable to (?:get local issuer|verify the first) certificate|certificate has expired|CERT_|unable to get issuer/i;
const wrongNameRe = /does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID/i;

export interface Diagnosis {
  message: string;
}

/**
 * What went wrong reaching `target`, judged from grpc-js's UNAVAILABLE message (and a probe when
 * needed). `whyRefused`: asked once, only when the connection was refused, for the reason the
 * server gives elsewhere (its /readyz: refused-reason.ts), with where it said it.
 */
export async function diagnoseUnreachable(
  target: ServerTarget,
  detail: string,
  whyRefused?: () => Promise<{ reason: string; where: string } | undefined>,
): Promise<Diagnosis> {
  const at = `sepp at ${target.address}`;
  if (refusedRe.test(detail)) {
    const told = await whyRefused?.();
    if (told !== undefined) {
      return {
        message: `cannot reach ${at}: connection refused; the server says why (${told.where}): ${told.reason}`,
      };
    }
    return {
      message: `cannot reach ${at}: connection refused; is it running, and is that its gRPC port? (--server)`,
    };
  }
  if (unresolvedRe.test(detail)) {
    return { message: `cannot reach ${at}: no such host "${target.host}" (--server)` };
  }
  if (hostUnreachableRe.test(detail)) {
    return { message: `cannot reach ${at}: the host is unreachable from here (--server)` };
  }
  if (target.tls && notTlsRe.test(detail)) {
    return {
      message: `${at} does not speak TLS; drop --tls and --ca, or configure [grpc.tls] on the server`,
    };
  }
  const wrongName = wrongNameRe.exec(detail);
  if (target.tls && wrongName !== null) {
    return {
      message: `the TLS certificate of ${at} is not for "${target.host}"; connect by a name the certificate lists`,
    };
  }
  const untrusted = untrustedRe.exec(detail);
  if (target.tls && untrusted !== null) {
    return {
      message: `the TLS certificate of ${at} is not trusted (${untrusted[0]}); give the CA that signed it with --ca FILE`,
    };
  }
  if (!target.tls && (await speaksTls(target))) {
    return { message: `${at} expects TLS; add --tls, or --ca FILE to trust its certificate` };
  }
  if (await speaksHttp1(target)) {
    return {
      message:
        `${target.address} answered with HTTP/1, not gRPC: that is an HTTP server (the admin UI's port?); ` +
        'give the gRPC address, server.grpc_listen (default 127.0.0.1:50051), to --server',
    };
  }
  return { message: `cannot reach ${at}: ${transportDetail(detail)} (--server)` };
}

/** grpc-js's "No connection established. Last error: X (time). Resolution note: " reduced to X. */
function transportDetail(detail: string): string {
  const last = /Last error: (?:Error: )?(.*?)(?: \(\d{4}-[^)]*\))?\.?\s*(?:Resolution note:.*)?$/s.exec(
    detail,
  );
  const text = (last?.[1] ?? detail).replace(/\s+/g, ' ').trim();
  return text === '' ? 'no connection' : text;
}

/** True when a TLS handshake with the target succeeds (certificate not checked: only "does it speak TLS"). */
function speaksTls(target: ServerTarget): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: target.host,
      port: target.port,
      // An IP address is no server name (RFC 6066); Node warns when given one.
      ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
      timeout: probeTimeoutMs,
    });
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.once('secureConnect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** True when the target answers a plain HTTP/1.1 request with an HTTP/1 status line. */
function speaksHttp1(target: ServerTarget): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: target.host, port: target.port, timeout: probeTimeoutMs });
    let head = '';
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.once('connect', () => {
      const host = isIP(target.host) === 6 ? `[${target.host}]` : target.host;
      socket.write(`HEAD / HTTP/1.1\r\nHost: ${host}:${target.port}\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (head.length >= 8) done(head.startsWith('HTTP/1.'));
    });
    socket.once('end', () => done(head.startsWith('HTTP/1.')));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}
