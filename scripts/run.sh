#!/usr/bin/env bash
# `make run`: the whole cluster on one machine (see docs/local-run.md). Arguments go to the launcher:
# `make run` takes none, `make run-fresh` passes -fresh (start with an empty embedded store),
# `scripts/run.sh -bots 3 -base-port 18081` passes its flags.
#
# Every binary (the launcher, the three services, fk) is built by one `go build`, so shared
# packages compile once and in parallel, with a progress line per 20 packages compiled. The
# launcher then starts from the binaries built here (-build=false).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DEV_DIR:-.run}
pkgs=(./cmd/devcluster ./cmd/fk ./services/rating/cmd/rating ./services/match/cmd/match ./services/matchmaking/cmd/matchmaking)
start=$SECONDS
echo "fetching modules and listing packages ..."
total=$(go list -deps "${pkgs[@]}" | wc -l)
echo "building the launcher, the services and fk into $dir/bin (at most $total packages; minutes the first time, seconds after) ..."
mkdir -p "$dir/bin"
# go build -v names each package as it compiles it (only those not cached); anything else is
# a compiler message and is shown as is.
go build -v -o "$dir/bin/" "${pkgs[@]}" 2>&1 | awk -v total="$total" '
	/^[A-Za-z0-9_.\/-]+$/ { n++; if (n % 20 == 0) printf "  %4d/%d  %s\n", n, total, $0; fflush(); next }
	{ print; fflush() }
	END { printf "  compiled %d packages (the rest were cached)\n", n }'
echo "built in $((SECONDS - start))s"
exec "$dir/bin/devcluster" -build=false "$@"
