#!/usr/bin/env node
// Generates the TypeScript protocol code from proto/ with protoc (Debian's, from
// PATH; PROTOC overrides) and ts-proto's plugin, into two places:
//   clients/typescript/src/gen/  the messages, the service definition and its client:
//                                inside the SDK package, which ships them, and imported
//                                from there by the server (the SDK never imports the server);
//   src/rpc/gen/                 the descriptor set for server reflection (server only).
// The output is committed, and tests/rpc/gen-fresh.test.ts checks that regenerating it
// changes nothing, so this script must be deterministic: a sorted file list, emptied
// output directories, and no tool versions written into the files.
// Usage: node scripts/gen.mjs [--out DIR] [--quiet]
//   --out DIR  write under DIR instead of the repository, in the same layout
//              (DIR/clients/typescript/src/gen, DIR/src/rpc/gen)
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

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
  const args = { out: root, quiet: false };
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
const protocolGenDir = join('clients', 'typescript', 'src', 'gen');
const serverGenDir = join('src', 'rpc', 'gen');
const protocolOut = join(args.out, protocolGenDir);
const serverOut = join(args.out, serverGenDir);
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
for (const dir of [protocolOut, serverOut]) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

const protocArgs = [
  `--plugin=protoc-gen-ts_proto=${plugin}`,
  `--proto_path=${protoDir}`,
  `--ts_proto_out=${protocolOut}`,
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
// The descriptor set feeds gRPC server reflection (src/rpc/reflection.ts), so grpcurl,
// buf curl and grpcui work without the .proto files; embedded as base64 so nothing is
// read from disk. It holds every service the server answers: sepp's files, and the
// standard health and reflection files under their canonical names (grpc/health/v1/…,
// grpc/reflection/v1…/), taken from the installed grpc-health-check and @grpc/reflection
// packages and staged in a temporary directory so protoc names them that way.
const standardProtos = [
  ['grpc/health/v1/health.proto', 'node_modules/grpc-health-check/proto/health/v1/health.proto'],
  [
    'grpc/reflection/v1/reflection.proto',
    'node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto',
  ],
  [
    'grpc/reflection/v1alpha/reflection.proto',
    'node_modules/@grpc/reflection/build/proto/grpc/reflection/v1alpha/reflection.proto',
  ],
];
const staging = mkdtempSync(join(tmpdir(), 'sepp-standard-protos-'));
for (const [name, from] of standardProtos) {
  mkdirSync(dirname(join(staging, name)), { recursive: true });
  copyFileSync(join(root, from), join(staging, name));
}
const descriptorFile = join(staging, 'descriptor-set.pb');
const described = spawnSync(
  protoc,
  [
    `--proto_path=${protoDir}`,
    `--proto_path=${staging}`,
    `--descriptor_set_out=${descriptorFile}`,
    '--include_imports',
    ...sources,
    ...standardProtos.map(([name]) => name),
  ],
  { cwd: root, encoding: 'utf8' },
);
if (described.status !== 0) {
  console.error(`gen: protoc --descriptor_set_out failed (exit ${described.status}):\n${described.stderr}`);
  process.exit(1);
}
const descriptorBase64 = readFileSync(descriptorFile).toString('base64');
rmSync(staging, { recursive: true, force: true });
writeFileSync(
  join(serverOut, 'descriptor-set.ts'),
  [
    '// Generated by scripts/gen.mjs: the FileDescriptorSet of proto/ and of the standard health and reflection services, for gRPC server reflection. Do not edit.',
    `export const descriptorSetBase64 =\n  ${JSON.stringify(descriptorBase64)};`,
    '',
  ].join('\n'),
);
const written = [...listFiles(protocolOut), ...listFiles(serverOut)];
for (const file of written) log(`gen: wrote ${relative(args.out, file)}`);
log(
  `gen: ${sources.length} .proto files from ${protoDir}/ → ${written.length} files in ${protocolGenDir}/ and ${serverGenDir}/${args.out === root ? '' : ` under ${args.out}`}`,
);
