#!/usr/bin/env bash
# Installs redis-server, PostgreSQL and chromium from Debian's packages when they are missing
# (as root, with apt-get); the tests start their own servers, and the dev console's browser
# tests (marked browser) drive chromium. Quiet when everything is there.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
  || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "scripts/_servers.sh: please install ${missing[*]} (the full tier's tests need them)" >&2
  exit 1
fi
echo "installing ${missing[*]} for the full tier's tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update -q >/dev/null
  apt-get install -y -q "${missing[@]}" >/dev/null
}
# The Debian packages start their own servers; the tests do not use them.
if command -v service >/dev/null 2>&1; then
  service redis-server stop >/dev/null 2>&1 || true
  service postgresql stop >/dev/null 2>&1 || true
fi
