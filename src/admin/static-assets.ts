/**
 * Serves the built UI from an AssetSource. Request paths are reduced to a
 * strict shape before any lookup — segments of letters, digits, `.`, `_` and
 * `-`, none starting with a dot — so `..`, encoded dots, backslashes, NUL
 * bytes and absolute paths can never reach a source. Names with a content
 * hash (esbuild's `name-HASH.ext`) are cached for a year; index.html is
 * revalidated every time, so a new build is picked up at once. The UI's own
 * routes (ui-routes.ts) get index.html; any other path is a file or a 404.
 */
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join, sep } from 'node:path';
import type { Context } from 'hono';
import type { Asset, AssetSource } from './types.ts';
import { isUiRoute } from './ui-routes.ts';

const contentTypes: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const safeSegment = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
/** esbuild's default hash: 8 characters of base32 after a dash. */
const hashedName = /-[A-Z0-9]{8}\.[a-z0-9]+$/;

/**
 * The asset path for a request path, or null when it is not one that may be
 * served. Percent-encoding is decoded once, then the result must be plain.
 */
export function safeAssetPath(requestPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(requestPath);
  } catch {
    return null;
  }
  if (!decoded.startsWith('/') || decoded.length > 512) return null;
  const trimmed = decoded.slice(1);
  if (trimmed === '') return 'index.html';
  const segments = trimmed.split('/');
  if (segments.length > 8 || !segments.every((s) => safeSegment.test(s) && !s.includes('..'))) return null;
  return segments.join('/');
}

export function contentTypeOf(path: string): string {
  return contentTypes[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

export class AssetServer {
  private readonly etags = new WeakMap<Uint8Array, string>();

  constructor(private readonly source: AssetSource) {}

  /** The response for a GET or HEAD outside /api, or null to fall through (404). */
  serve(c: Context): Response | null {
    if (isUiRoute(c.req.path)) {
      // A client-side route (/jobs/0190…, /queues/a:b): the app's shell renders it.
      const shell = this.source.get('index.html');
      return shell === undefined ? null : this.respond(c, 'index.html', shell);
    }
    const path = safeAssetPath(c.req.path);
    if (path === null) return null;
    const asset = this.source.get(path);
    return asset === undefined ? null : this.respond(c, path, asset);
  }

  private respond(c: Context, path: string, asset: Asset): Response {
    const etag = this.etagOf(asset.body);
    const headers = new Headers({
      'Content-Type': asset.contentType ?? contentTypeOf(path),
      'Cache-Control': hashedName.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache',
      ETag: etag,
    });
    if (c.req.header('if-none-match') === etag) return new Response(null, { status: 304, headers });
    headers.set('Content-Length', String(asset.body.byteLength));
    return new Response(c.req.method === 'HEAD' ? null : asset.body, { status: 200, headers });
  }

  private etagOf(body: Uint8Array): string {
    let etag = this.etags.get(body);
    if (etag === undefined) {
      etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      this.etags.set(body, etag);
    }
    return etag;
  }
}

/**
 * Assets read from a directory (ui/dist when running from source). Files are
 * cached in memory after the first read, keyed by path and modification time,
 * and a path that resolves outside the directory (a symlink, say) is refused.
 */
export function diskAssetSource(dir: string): AssetSource {
  const root = realpathSync(dir);
  const cache = new Map<string, { mtimeMs: number; asset: Asset }>();
  return {
    get(path) {
      const candidate = join(root, path);
      let real: string;
      try {
        real = realpathSync(candidate);
      } catch {
        return undefined;
      }
      if (!real.startsWith(root + sep)) return undefined;
      const stat = statSync(real, { throwIfNoEntry: false });
      if (stat === undefined || !stat.isFile()) return undefined;
      const cached = cache.get(real);
      if (cached !== undefined && cached.mtimeMs === stat.mtimeMs) return cached.asset;
      const asset = { body: new Uint8Array(readFileSync(real)) };
      cache.set(real, { mtimeMs: stat.mtimeMs, asset });
      return asset;
    },
  };
}

/** Assets held in memory (tests, and a source built from embedded files). */
export function memoryAssetSource(files: Readonly<Record<string, string | Uint8Array>>): AssetSource {
  const assets = new Map(
    Object.entries(files).map(([path, body]) => [
      path,
      { body: typeof body === 'string' ? new TextEncoder().encode(body) : body },
    ]),
  );
  return { get: (path) => assets.get(path) };
}
