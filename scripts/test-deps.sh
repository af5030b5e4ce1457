#!/bin/sh
# Installs from Debian what the tests need and this machine lacks; `npm test`,
# `npm run test:system` and .ci/run call it. Silent when everything is there.
# Without root or without apt-get it installs nothing: it names the packages in
# one line and fails, before any test runs.
#
# Usage: scripts/test-deps.sh [--check]
#   --check  install nothing: name what is missing, exit 1 when something is
set -eu

need=''
want() { need="$need $1"; }

command -v protoc >/dev/null 2>&1 || want protobuf-compiler # tests/rpc/gen-fresh: the generated code is current
command -v sqlite3 >/dev/null 2>&1 || want sqlite3           # the README's queries, shared locking
command -v openssl >/dev/null 2>&1 || want openssl           # TLS certificates for the tests
# docs/http.md's curl lines and its shell worker (tests/http/docs.test.ts).
command -v curl >/dev/null 2>&1 || want curl
command -v jq >/dev/null 2>&1 || want jq
# The packaging tests trace the executable against the systemd unit's syscall filter,
# verify the unit, and check readiness under Type=notify through systemd-notify.
command -v strace >/dev/null 2>&1 || want strace
command -v systemd-notify >/dev/null 2>&1 && command -v systemd-analyze >/dev/null 2>&1 || want systemd
# The admin UI's browser tests drive Debian's headless Chromium (never a downloaded browser;
# tests/helpers/browser.ts).
[ -x /usr/bin/chromium-headless-shell ] || want chromium-headless-shell
# The PostgreSQL store's tests start a throwaway server of their own.
[ -x /usr/lib/postgresql/15/bin/postgres ] || want postgresql-15
# The Python client (clients/python) is built, installed into a venv, tested and
# type-checked with Debian's python3 and these packages only (tests/interop).
if [ -x /usr/bin/python3 ]; then
  python_missing=$(/usr/bin/python3 - <<'EOF'
import importlib.util
packages = {
    'grpc': 'python3-grpcio', 'grpc_tools': 'python3-grpc-tools', 'google.protobuf': 'python3-protobuf',
    'pytest': 'python3-pytest', 'mypy': 'python3-mypy', 'ensurepip': 'python3-venv',
    'setuptools': 'python3-setuptools', 'wheel': 'python3-wheel',
    'psycopg2': 'python3-psycopg2',  # sepp.pg's test (tests/store/postgres-enqueue-function.test.ts)
}
def present(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False
print(' '.join(package for module, package in packages.items() if not present(module)))
EOF
  )
  need="$need $python_missing"
else
  want 'python3 python3-grpcio python3-grpc-tools python3-protobuf python3-pytest python3-mypy python3-venv python3-setuptools python3-wheel python3-psycopg2'
fi

need=$(echo $need) # one space between names, none around them
[ -z "$need" ] && exit 0
if [ "${1:-}" = --check ]; then
  echo "the tests need Debian packages this machine lacks: $need" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "the tests need Debian packages this machine lacks; as root, run: apt-get install -y $need" >&2
  exit 1
fi
echo "installing what the tests need from Debian: $need"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # one word per package
apt-get install -y -qq $need >/dev/null
