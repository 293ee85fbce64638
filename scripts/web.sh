#!/usr/bin/env bash
# web.sh builds and checks the browser client in web/ (see docs/web.md).
#
#   scripts/web.sh deps       npm ci in web/ (the versions of web/package-lock.json)
#   scripts/web.sh generate   regenerate web/src/gen from proto/ (buf + protoc-gen-es)
#   scripts/web.sh build      generate, then bundle web/src into web/dist
#   scripts/web.sh check      fail if web/src/gen or web/dist drift from a fresh build;
#                             typecheck and run the unit tests
#   scripts/web.sh chromium   install Debian's chromium when /usr/bin/chromium is missing
#
# buf is the repository's pinned buf (tools/buf/go.mod, as in scripts/proto.sh);
# protoc-gen-es, TypeScript and esbuild come from web/node_modules. The web app
# needs Node 20+ to build and test, never to run: web/dist is committed and
# `make run` serves it with Go alone.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export GOWORK=off

usage() {
	sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

need_node() {
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "web: node and npm are needed to build and check web/ (Debian: apt-get install -y nodejs npm)" >&2
		exit 1
	fi
}

buf() {
	local bin
	bin=$(go -C tools/buf tool -n buf)
	"$bin" "$@"
}

deps() {
	need_node
	# npm ci installs exactly package-lock.json; the stamp skips it when
	# node_modules already holds that lock file's packages.
	if cmp -s web/package-lock.json web/node_modules/.fk-lock 2>/dev/null; then
		return 0
	fi
	(cd web && npm ci --no-audit --no-fund --loglevel=error)
	cp web/package-lock.json web/node_modules/.fk-lock
}

generate() {
	deps
	buf generate --template buf.gen.web.yaml
}

build() {
	generate
	(cd web && node build.mjs)
	local js
	js=$(echo web/dist/assets/app-*.js)
	echo "web/dist built: $js, $(wc -c <"$js") bytes, $(gzip -9c "$js" | wc -c) gzipped"
}

check() {
	deps
	# Global, not local: the EXIT trap runs after this function returns.
	check_tmp=$(mktemp -d)
	trap 'rm -rf "$check_tmp"' EXIT
	local tmp=$check_tmp
	buf generate --template buf.gen.web.yaml --output "$tmp"
	if ! diff -r web/src/gen "$tmp/web/src/gen"; then
		echo "web/src/gen is out of date (lines marked > are what generation produces): run make web" >&2
		exit 1
	fi
	echo "web/src/gen is up to date"
	(cd web && node build.mjs --check)
	(cd web && npx tsc --noEmit -p .)
	(cd web && node build.mjs --tests && node --test .test-out/)
}

chromium() {
	if [[ -x /usr/bin/chromium ]]; then
		return 0
	fi
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "installing Debian's chromium for the browser tests ..."
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
		return 0
	fi
	echo "web: the browser tests need /usr/bin/chromium (Debian: apt-get install -y chromium)" >&2
	exit 1
}

[[ $# -eq 1 ]] || usage
case $1 in
deps) deps ;;
generate) generate ;;
build) build ;;
check) check ;;
chromium) chromium ;;
*) usage ;;
esac
