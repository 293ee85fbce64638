#!/usr/bin/env bash
# proto.sh runs the protobuf tooling with pinned versions.
#
#   scripts/proto.sh generate   regenerate proto/gen from scratch
#   scripts/proto.sh check      fail if proto/gen differs from a fresh generation
#   scripts/proto.sh lint       buf lint, and buf format in check mode
#   scripts/proto.sh format     rewrite the .proto files in buf's format
#   scripts/proto.sh breaking   buf breaking against the main branch
#
# buf is pinned in tools/buf/go.mod and the protoc plugins in
# tools/protoc/go.mod. Both are tool modules outside go.work, so everything
# here runs with GOWORK=off; buf.gen.yaml runs each plugin as
# `go -C tools/protoc tool <plugin>`, which inherits that setting.
# Environment: PROTO_BREAKING_BRANCH (default main) is the baseline branch.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export GOWORK=off

usage() {
	sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# buf runs the pinned buf from the repository root. `go tool -n` builds the
# tool on first use (a few minutes) and prints the cached binary's path;
# running that binary directly keeps buf's working directory at the root,
# where buf.yaml and buf.gen.yaml are.
buf() {
	local bin
	bin=$(go -C tools/buf tool -n buf)
	"$bin" "$@"
}

generate() {
	# clean: true in buf.gen.yaml empties proto/gen first, so files of
	# deleted .proto sources disappear too.
	buf generate
}

check() {
	# Global, not local: the EXIT trap runs after this function returns.
	check_tmp=$(mktemp -d)
	trap 'rm -rf "$check_tmp"' EXIT
	local tmp=$check_tmp
	# --output prefixes every plugin's out directory: a fresh copy lands in
	# $tmp/proto/gen without touching the committed one.
	buf generate --output "$tmp"
	mkdir -p proto/gen
	if ! diff -r proto/gen "$tmp/proto/gen"; then
		echo "proto/gen is out of date (lines marked > are what generation produces): run scripts/proto.sh generate" >&2
		exit 1
	fi
	echo "proto/gen is up to date"
}

lint() {
	buf lint
	if ! buf format --diff --exit-code; then
		echo "the .proto files are not in buf's format: run scripts/proto.sh format" >&2
		exit 1
	fi
}

breaking() {
	local branch=${PROTO_BREAKING_BRANCH:-main} gitdir
	if ! git rev-parse --verify --quiet "refs/heads/$branch^{commit}" >/dev/null; then
		echo "breaking: branch $branch has no commits yet; nothing to compare against (first commit), skipping"
		return 0
	fi
	if ! git ls-tree -r --name-only "$branch" -- proto | grep -q '\.proto$'; then
		echo "breaking: branch $branch has no .proto files yet; nothing to compare against (first commit), skipping"
		return 0
	fi
	# The common git directory works in linked worktrees too, where .git is
	# a file.
	gitdir=$(cd "$(git rev-parse --git-common-dir)" && pwd)
	buf breaking --against "$gitdir#format=git,branch=$branch"
	echo "breaking: no breaking changes against $branch"
}

[[ $# -eq 1 ]] || usage
case $1 in
generate) generate ;;
check) check ;;
lint) lint ;;
format) buf format --write ;;
breaking) breaking ;;
*) usage ;;
esac
