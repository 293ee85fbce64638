#!/usr/bin/env bash
# `make run`: the whole cluster on one machine (see docs/local-run.md). Arguments go to the launcher:
# `make run` takes none, `scripts/run.sh -bots 3 -base-port 18081` passes its flags.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./cmd/devcluster "$@"
