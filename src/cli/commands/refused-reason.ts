/**
 * Why a server refuses connections, when it says so. A server shut out of its store (a newer
 * sepp migrated the PostgreSQL schema under it: docs/upgrading.md) closes its gRPC port, and a
 * refused connection alone tells the operator nothing more. Its admin address stays up, and its
 * `/readyz` answers 503 with the reason. So after a refused connection, and only then, the CLI
 * reads the configuration `sepp serve` would read in this shell (`$SEPP_CONFIG`, else
 * `./sepp.toml`, the SEPP_* variables, else the defaults) for the admin address of the server
 * listening on that gRPC port, and asks its `/readyz` once, briefly.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { loadConfig, parseListenAddress } from '../../config/index.ts';
import type { CliIo } from '../io.ts';
import type { ServerTarget } from './connection-errors.ts';

const readyzTimeoutMs = 2000;
/** A 503's body is `{"status":"not_ready","reason":…}`: a reason longer than this is cut. */
const readyzBytesMax = 16 * 1024;
const reasonCharsMax = 1000;
const wildcardHosts = new Set(['0.0.0.0', '::', '']);

/** Where the server on `target`'s gRPC port answers /readyz, by this shell's configuration; undefined if it names none. */
export function readyzUrlFor(io: CliIo, target: ServerTarget): URL | undefined {
  let config: ReturnType<typeof loadConfig>;
  try {
    // Addresses alone: no secret read, no TLS file opened (fileExists given: contents unchecked).
    config = loadConfig({ env: io.env, cwd: io.cwd, readSecrets: false, fileExists: () => true });
  } catch {
    return undefined;
  }
  const { grpcListen, adminListen } = config.server;
  // The configuration is of another server unless it listens where the CLI was refused.
  if (grpcListen.port !== target.port) return undefined;
  const targetLoopback = parseListenAddress(target.address);
  const sameHost =
    wildcardHosts.has(grpcListen.host) ||
    grpcListen.host === target.host ||
    (grpcListen.loopback && targetLoopback.ok && targetLoopback.value.loopback);
  if (!sameHost) return undefined;
  // An admin address on every interface is reached at the host the CLI was given.
  const host = wildcardHosts.has(adminListen.host) ? target.host : adminListen.host;
  const scheme = config.admin.tls === null ? 'http' : 'https';
  return new URL(`${scheme}://${isIP(host) === 6 ? `[${host}]` : host}:${adminListen.port}/readyz`);
}

/**
 * The reason `url` gives for not being ready (a 503 with one), else undefined: ready, silent, or
 * not sepp. Over TLS the system's CAs are trusted: an admin certificate they do not trust leaves
 * the refusal as it was.
 */
export function notReadyReason(url: URL): Promise<string | undefined> {
  return new Promise((resolve) => {
    const options = { timeout: readyzTimeoutMs, headers: { accept: 'application/json' } };
    const onAnswer = (answer: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      answer.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > readyzBytesMax) {
          answer.destroy();
          resolve(undefined);
          return;
        }
        chunks.push(chunk);
      });
      answer.on('end', () =>
        resolve(answer.statusCode === 503 ? reasonOf(Buffer.concat(chunks)) : undefined),
      );
      answer.on('error', () => resolve(undefined));
    };
    const asked =
      url.protocol === 'https:' ? httpsRequest(url, options, onAnswer) : httpRequest(url, options, onAnswer);
    asked.on('timeout', () => asked.destroy());
    asked.on('error', () => resolve(undefined));
    asked.end();
  });
}

/** The `reason` of a /readyz 503 body, on one line of printable text; undefined if it has none. */
function reasonOf(body: Buffer): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || !('reason' in parsed)) return undefined;
  const { reason } = parsed;
  if (typeof reason !== 'string' || reason.trim() === '') return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the server's text reaches a terminal.
  const shown = reason.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  return shown.length > reasonCharsMax ? `${shown.slice(0, reasonCharsMax)}…` : shown;
}
