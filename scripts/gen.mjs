#!/usr/bin/env node
// Generates the TypeScript protocol code in src/rpc/gen/ from proto/ with protoc
// (Debian's, from PATH; PROTOC overrides) and ts-proto's plugin. The output is
// committed, and tests/rpc/gen-fresh.test.ts checks that regenerating it changes
// nothing, so this script must be deterministic: a sorted file list, an emptied
// output directory, and no tool versions written into the files.
// Usage: node scripts/gen.mjs [--out DIR] [--quiet]
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const protoDir = 'proto';
const plugin = join(root, 'node_modules', '.bin', 'protoc-gen-ts_proto');
const protoc = process.env.PROTOC ?? 'protoc';

// Why each option: grpc-js service definitions and clients for both our server
// and the SDK; Buffer for bytes (node); int64 as number (every int64 here is a
// time, duration, size or count far below 2^53, and ts-proto throws rather than
// round when one is not); optional keys for message fields; `.js` import suffix
// so imports resolve under `moduleResolution: nodenext`; oneofs as
// discriminated unions ({ $case, value }) that strict TypeScript can narrow;
// enum members without the proto prefix (JobState.READY, while the JSON form
// keeps JOB_STATE_READY); and no version banner, so the output depends on the
// .proto files only.
export const tsProtoOptions = [
  'outputServices=grpc-js',
  'env=node',
  'forceLong=number',
  'esModuleInterop=true',
  'useOptionals=messages',
  'importSuffix=.js',
  'oneof=unions-value',
  'removeEnumPrefix=true',
  'annotateFilesWithVersion=false',
];

function protoFiles(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return protoFiles(path);
      return name.endsWith('.proto') ? [path] : [];
    });
}

function listFiles(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? listFiles(path) : [path];
    });
}

function parseArgs(argv) {
  const args = { out: join(root, 'src', 'rpc', 'gen'), quiet: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out' && argv[i + 1] !== undefined) args.out = resolve(argv[++i]);
    else if (argv[i] === '--quiet') args.quiet = true;
    else {
      console.error(`gen: unknown argument ${argv[i]}\nusage: node scripts/gen.mjs [--out DIR] [--quiet]`);
      process.exit(2);
    }
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const log = args.quiet ? () => {} : (line) => console.log(line);

const version = spawnSync(protoc, ['--version'], { encoding: 'utf8' });
if (version.error || version.status !== 0) {
  console.error(`gen: cannot run ${protoc} (${version.error?.message ?? version.stderr.trim()}).`);
  console.error('gen: install it (Debian: apt-get install protobuf-compiler) or set PROTOC to its path.');
  process.exit(3);
}
const tsProtoVersion = JSON.parse(
  readFileSync(join(root, 'node_modules', 'ts-proto', 'package.json'), 'utf8'),
).version;

const sources = protoFiles(join(root, protoDir)).map((f) => relative(join(root, protoDir), f));
rmSync(args.out, { recursive: true, force: true });
mkdirSync(args.out, { recursive: true });

const protocArgs = [
  `--plugin=protoc-gen-ts_proto=${plugin}`,
  `--proto_path=${protoDir}`,
  `--ts_proto_out=${args.out}`,
  `--ts_proto_opt=${tsProtoOptions.join(',')}`,
  ...sources,
];
log(`gen: ${version.stdout.trim()} with ts-proto ${tsProtoVersion}`);
log(`gen: ts-proto options ${tsProtoOptions.join(',')}`);
const run = spawnSync(protoc, protocArgs, { cwd: root, encoding: 'utf8' });
if (run.status !== 0) {
  console.error(`gen: protoc failed (exit ${run.status}):\n${run.stderr}`);
  process.exit(1);
}
const written = listFiles(args.out);
for (const file of written) log(`gen: wrote ${relative(root, file)}`);
log(
  `gen: ${sources.length} .proto files from ${protoDir}/ → ${written.length} files in ${relative(root, args.out) || args.out}`,
);
