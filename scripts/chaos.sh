#!/usr/bin/env bash
# The chaos run (docs/operations.md "Chaos run", issue 22): the whole system
# (6-node Redis Cluster, two instances of each service, players through the
# public API) under kill -9, SIGSTOP, Redis failovers and network faults,
# then a check that nothing acknowledged was lost. Exits 1 on any loss.
#
# Usage: scripts/chaos.sh [cmd/chaos flags], for example
#   scripts/chaos.sh -duration 10m -seed 7
#   scripts/chaos.sh -duration 3m -wait-replicas=false   # what is lost without WAIT
# Network faults need root (network namespaces); without it they are skipped
# and the report says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-redis.sh
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$bin/" ./services/match/cmd/match ./services/matchmaking/cmd/matchmaking ./services/rating/cmd/rating
go build -o "$bin/chaos" ./cmd/chaos
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
"$bin/chaos" -bin "$bin" "$@" || status=$?
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
