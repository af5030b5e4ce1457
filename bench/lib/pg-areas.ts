/**
 * The areas of the sepp server's code that bench/pg-profile-areas.ts (CPU) and
 * bench/pg-heap-areas.ts (allocations) sum a profile by, from a frame's file.
 */

/** The areas, first match wins (by the frame's file). */
export const areas: [string, RegExp][] = [
  [
    'pg driver (node-postgres, pg-protocol, pg-types)',
    /node_modules\/(pg|pg-protocol|pg-types|postgres-[a-z]+)\//,
  ],
  ['sepp PostgreSQL store (src/store/postgres)', /\/src\/store\/postgres\//],
  ['sepp SQLite store (src/store/sqlite, with SQLite itself)', /\/src\/store\/sqlite\//],
  ['store, shared (src/store)', /\/src\/store\//],
  ['engine (src/engine)', /\/src\/engine\//],
  [
    'gRPC (@grpc, src/rpc, protobuf, http2)',
    /(@grpc|@bufbuild|\/src\/rpc\/|\/src\/gen\/|node:internal\/http2|\/src\/server-)/,
  ],
  ['SDK client (clients/)', /\/clients\//],
  ['other sepp (src/)', /\/src\//],
  ['other node_modules', /node_modules\//],
];

const grpcArea = 'gRPC (@grpc, src/rpc, protobuf, http2)';

/** A frame's area; undefined for Node's own and native frames (charged to their caller). */
export function areaOf(url: string): string | undefined {
  // Node's http2 is gRPC's transport. (This once named areas[4], the engine, by mistake.)
  if (url === '' || url.startsWith('node:'))
    return url.startsWith('node:internal/http2') ? grpcArea : undefined;
  for (const [name, re] of areas) if (re.test(url)) return name;
  return 'other';
}
