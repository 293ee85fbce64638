#!/usr/bin/env bash
# Makes sure redis-server and redis-cli (7.x) are installed: the integration tests start their own
# servers on free loopback ports, so only the binaries are needed, never a running service.
set -euo pipefail
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "redis-server missing: installing it with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server redis-tools >/dev/null
  exit 0
fi
echo "redis-server is missing. Install it with: sudo apt-get install -y redis-server redis-tools" >&2
if [ "${CI:-}" = true ]; then exit 1; fi
echo "(the integration tests will be skipped)" >&2
