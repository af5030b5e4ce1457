// An esbuild plugin for the single executable: grpc-health-check and
// @grpc/reflection load their own .proto files from node_modules at run time
// (`protoLoader.loadSync(path)`), which a single executable does not have. The
// plugin hands those two packages a @grpc/proto-loader whose loadSync serves
// the same .proto texts, embedded in the bundle at build time; every other
// load goes to the real loadSync.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export function embedProtosPlugin(root) {
  const require = createRequire(join(root, 'package.json'));
  const healthDir = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto');
  const reflectionDir = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');
  const embedded = {
    'health/v1/health.proto': readFileSync(join(healthDir, 'health/v1/health.proto'), 'utf8'),
    'grpc/reflection/v1/reflection.proto': readFileSync(
      join(reflectionDir, 'grpc/reflection/v1/reflection.proto'),
      'utf8',
    ),
    'grpc/reflection/v1alpha/reflection.proto': readFileSync(
      join(reflectionDir, 'grpc/reflection/v1alpha/reflection.proto'),
      'utf8',
    ),
  };
  const realLoader = require.resolve('@grpc/proto-loader');
  const shim = `
const real = require(${JSON.stringify(realLoader)});
const protobuf = require('protobufjs');
const embedded = ${JSON.stringify(embedded)};
function loadSync(filename, options) {
  const name = String(filename).replace(/\\\\/g, '/');
  for (const suffix of Object.keys(embedded)) {
    if (name === suffix || name.endsWith('/' + suffix)) {
      const root = new protobuf.Root();
      protobuf.parse(embedded[suffix], root, { keepCase: Boolean(options && options.keepCase), alternateCommentMode: true });
      return real.fromJSON(root.toJSON(), options);
    }
  }
  return real.loadSync(filename, options);
}
module.exports = Object.assign({}, real, { loadSync });
`;
  return {
    name: 'embed-grpc-protos',
    setup(build) {
      build.onResolve({ filter: /^@grpc\/proto-loader$/ }, (args) =>
        /grpc-health-check|@grpc[\\/]reflection/.test(args.importer)
          ? { path: 'embedded-proto-loader', namespace: 'sepp-embed' }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'sepp-embed' }, () => ({
        contents: shim,
        loader: 'js',
        resolveDir: root,
      }));
    },
  };
}
