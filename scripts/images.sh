#!/usr/bin/env bash
# Builds the OCI images (make images): one per service (match, matchmaking, rating), one for the
# bots and one for the web app (web: cmd/webserve and the committed web/dist), each a static Go
# binary (CGO_ENABLED=0) on an empty base, running as user 65532; those that call out also hold the
# CA certificates. Containerfiles: deploy/images/. Offline, with Debian's buildah.
#
#   scripts/images.sh [IMAGE...]     IMAGE: match matchmaking rating bots web (default: all five),
#                                    redis-test (the image test's Redis, never deployed)
#
# Settings: IMAGE_PREFIX (default fourkingdoms: images fourkingdoms/match ...), IMAGE_TAG (default
# the version, `git describe --tags --always --dirty`; every image is also tagged latest),
# IMAGE_SOURCE (the source label).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-podman.sh
export CONTAINERS_CONF="$PWD/deploy/images/containers.conf"

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(match matchmaking rating bots web)
prefix=${IMAGE_PREFIX:-fourkingdoms}
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
tag=${IMAGE_TAG:-$version}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source=${IMAGE_SOURCE:-https://github.com/fourkingdoms/fourkingdoms}
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$certs" ]; then
  echo "images: $certs is missing: install Debian's ca-certificates (apt-get install -y ca-certificates)" >&2
  exit 1
fi

ctx=.build/images
rm -rf "$ctx"
mkdir -p "$ctx"
cp "$certs" "$ctx/ca-certificates.crt"

# The Go binaries, in one go build (static: no cgo, so no libc in the image).
pkgs=()
for img in "${images[@]}"; do
  case $img in
    match | matchmaking | rating) pkgs+=("./services/$img/cmd/$img") ;;
    bots) pkgs+=(./cmd/bots) ;;
    web)
      # The committed build (make web regenerates it; make test checks it for drift).
      if [ ! -s web/dist/index.html ]; then
        echo "images: web/dist/index.html is missing: build the web app with make web" >&2
        exit 1
      fi
      pkgs+=(./cmd/webserve)
      cp -R web/dist "$ctx/web"
      chmod -R a+rX,go-w "$ctx/web" # readable by the image's user whatever the umask
      ;;
    redis-test) ;;
    *) echo "images: unknown image $img (match matchmaking rating bots web redis-test)" >&2; exit 2 ;;
  esac
done
if [ ${#pkgs[@]} -gt 0 ]; then
  CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags='-s -w' -o "$ctx/" "${pkgs[@]}"
fi

# The test Redis: redis-server (Debian's /usr/bin/redis-server is a link whose target's name
# would start it as redis-check-rdb, so it is copied under its own name) and every library ldd
# lists, at their paths.
redis_rootfs() {
  local root=$ctx/rootfs bin
  bin=$(readlink -f "$(command -v redis-server)")
  mkdir -p "$root/usr/bin"
  cp "$bin" "$root/usr/bin/redis-server"
  ldd "$bin" | grep -o '/[^ ]*' | sort -u | while read -r lib; do
    cp --parents -L "$lib" "$root"
  done
}

for img in "${images[@]}"; do
  [ "$img" = redis-test ] && redis_rootfs
  buildah build --quiet --network host --layers=false \
    -f "deploy/images/$img.Containerfile" \
    --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    --build-arg SOURCE="$source" --build-arg CREATED="$created" \
    -t "$prefix/$img:$tag" -t "$prefix/$img:latest" "$ctx" >/dev/null
  echo "built $prefix/$img:$tag"
done
