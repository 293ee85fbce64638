#!/usr/bin/env bash
# Makes sure buildah, podman and runc are installed (Debian's packages: they build and run images
# offline, with no Docker engine). As root it installs them with apt-get, as ensure-redis.sh does;
# otherwise it says how.
set -euo pipefail
if command -v buildah >/dev/null && command -v podman >/dev/null && command -v runc >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "buildah/podman/runc missing: installing them with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq podman buildah runc >/dev/null
  exit 0
fi
echo "buildah, podman and runc are needed. Install them with: sudo apt-get install -y podman buildah runc" >&2
exit 1
