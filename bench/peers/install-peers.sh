#!/usr/bin/env bash
# Installs the peers that bench/run.ts compares sepp against, idempotently:
#   - redis-server, beanstalkd, nats-server (2.9, Debian 12's), postgresql-15 and strace from the
#     machine's own Debian sources;
#   - nats-server 2.10 from Debian 13 (trixie), because 2.9 cannot fsync every
#     message (`sync_interval: always` arrived in 2.10). It is fetched with
#     `apt-get download` through a private sources list, so the machine's own apt
#     state is untouched, and unpacked with `dpkg -x` into .peers/ (gitignored).
# Usage: bash bench/peers/install-peers.sh   (needs root for apt-get install)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
peers=$root/.peers
nats210=$peers/nats-server-2.10/usr/sbin/nats-server

export DEBIAN_FRONTEND=noninteractive
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v beanstalkd >/dev/null || need+=(beanstalkd)
[ -x /usr/sbin/nats-server ] || [ -x /usr/bin/nats-server ] || need+=(nats-server)
command -v strace >/dev/null || need+=(strace)
# pg-boss and graphile-worker run on PostgreSQL 15 (tests/helpers/postgres.ts starts it).
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-peers: apt-get install ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -x "$nats210" ]; then
  echo "install-peers: fetching nats-server from Debian 13 (trixie) into $peers"
  apt_dir=$peers/apt-trixie
  rm -rf "$apt_dir"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs"
  # Use the Debian mirror this machine's apt already uses (deb822 .sources or one-line
  # .list format), skipping the security archive, which has no trixie main suite.
  mirror=$(
    {
      # Either file may be missing: a grep that finds nothing must not stop the script.
      grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' || true
      grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed -E 's/^deb (\[[^]]*\] )?//' | awk '{print $1}' || true
    } | grep -v security | head -n1
  )
  if [ -z "$mirror" ]; then
    echo "install-peers: no Debian mirror found in /etc/apt/sources.list*; cannot fetch nats-server 2.10" >&2
    exit 1
  fi
  # The trixie keys ship in Debian 12's debian-archive-keyring.
  keys=/usr/share/keyrings/debian-archive-trixie-stable.gpg,/usr/share/keyrings/debian-archive-trixie-automatic.gpg
  echo "deb [signed-by=$keys] $mirror trixie main" >"$apt_dir/sources.list"
  opts=(
    -o "APT::Sandbox::User=root"
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache::Archives=$apt_dir/archives"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
  )
  apt-get "${opts[@]}" update -qq
  # apt-get download writes into the current directory; it does not resolve or
  # install dependencies (nats-server is a static Go binary, so none are needed).
  (cd "$apt_dir/debs" && apt-get "${opts[@]}" download nats-server)
  deb=$(ls "$apt_dir"/debs/nats-server_*.deb | head -n1)
  rm -rf "$peers/nats-server-2.10"
  dpkg -x "$deb" "$peers/nats-server-2.10"
  rm -rf "$apt_dir/lists" "$apt_dir/archives"
fi

echo "install-peers: redis $(redis-server --version | awk '{print $3}' | sed 's/^v=//'), beanstalkd $(beanstalkd -v | awk '{print $2}'), nats 2.9 $(/usr/sbin/nats-server --version | awk '{print $2}'), nats 2.10 $("$nats210" --version | awk '{print $2}')"
