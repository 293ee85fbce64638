#!/usr/bin/env bash
# The image test (make image-test, run by .ci/run): builds the images, then
# cmd/internal/imagetest starts Redis and the three services from them with podman (host network,
# loopback ports, TLS, split keys), plays one whole game with the bots' image, checks the result
# and the ratings, checks that the web image serves web/dist, and removes the containers. Needs root for podman; installs podman, buildah,
# runc and redis-server with apt-get when they are missing (as root).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-podman.sh
scripts/ensure-redis.sh
export CONTAINERS_CONF="$PWD/deploy/images/containers.conf"
start=$SECONDS
scripts/images.sh match matchmaking rating bots web redis-test
echo "images built in $((SECONDS - start))s"
# Static and trimmed like the images (scripts/images.sh) and the end-to-end test's services
# (cmd/devcluster): the test binary reuses the packages they compiled.
FK_IMAGE_TEST=1 CGO_ENABLED=0 GOFLAGS=-buildvcs=false go test -trimpath -count=1 -timeout 10m -run '^TestImagesPlayAGame$' -v \
  github.com/fourkingdoms/fourkingdoms/cmd/internal/imagetest
