#!/usr/bin/env bash
# `make run`: the whole cluster on one machine. The local-run work (issue "make run") replaces this
# placeholder with the dev launcher; until then it says what is missing instead of pretending.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d cmd/devcluster ]; then
  exec go run ./cmd/devcluster "$@"
fi
echo "make run: the local cluster launcher (cmd/devcluster) is not built yet." >&2
echo "Until it lands, start the services by hand (see README: Running the services)." >&2
exit 1
