#!/usr/bin/env bash
# make deploy-check: validates every overlay against a real Kubernetes API server on loopback.
#
#  1. builds kube-apiserver and kubectl v1.37.2 from the Go module proxy (scripts/kube-tools.sh;
#     cold about 12 minutes, warm a relink) and starts them with Debian's etcd, on 127.0.0.1 only;
#  2. installs the CRDs the overlays use (deploy/check/crds: cert-manager, Prometheus Operator,
#     Gateway API, copied from their releases), so the server validates those kinds as well;
#  3. applies every overlay with server-side dry run and strict field validation, and fails on any
#     error or Pod Security warning;
#  4. sends each deliberately broken fixture in deploy/check/broken and expects a refusal naming
#     its "# server:" text;
#  5. dumps the OpenAPI v3 documents the server publishes for the group-versions the overlays use
#     and compares them with deploy/check/openapi, which the in-test validation reads (`-update`
#     rewrites them instead).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
update=false
[[ ${1:-} == -update ]] && update=true

say() { printf 'deploy-check: %s\n' "$*" >&2; }
need() {
	command -v "$1" >/dev/null && return
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		say "installing $2 with apt-get"
		apt-get install -y -qq "$2" >/dev/null || { apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null; }
	else
		say "$1 is missing: apt-get install $2"
		exit 1
	fi
}
need etcd etcd-server
need jq jq
need openssl openssl

start=$SECONDS
"$root/scripts/kube-tools.sh"
say "tools built in $((SECONDS - start)) s"
kubectl=$root/bin/kubectl
apiserver=$root/bin/kube-apiserver

work=$(mktemp -d)
pids=()
cleanup() {
	# The API server's graceful shutdown can take a minute; nothing here needs it.
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
	echo $((20000 + RANDOM % 20000)); }
etcd_port=$(freeport) peer_port=$(freeport) api_port=$(freeport)

etcd --name deploy-check --data-dir "$work/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
	--initial-cluster "deploy-check=http://127.0.0.1:$peer_port" >"$work/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
token=$(openssl rand -hex 16)
echo "$token,deploy-check,deploy-check,system:masters" >"$work/tokens.csv"
"$apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
	--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
	--cert-dir "$work/certs" --token-auth-file "$work/tokens.csv" \
	--authorization-mode=AlwaysAllow --endpoint-reconciler-type=none \
	--service-account-issuer=https://kubernetes.default.svc --service-account-key-file "$work/sa.key" \
	--service-account-signing-key-file "$work/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
	>"$work/apiserver.log" 2>&1 &
pids+=($!)

cat >"$work/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: check, cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}}]
users: [{name: check, user: {token: "$token"}}]
contexts: [{name: check, context: {cluster: check, user: check}}]
current-context: check
KC
export KUBECONFIG=$work/kubeconfig

for i in $(seq 1 120); do
	"$kubectl" get --raw /readyz >/dev/null 2>&1 && break
	if ((i == 120)); then
		say "API server not ready after 60 s"; tail -20 "$work/apiserver.log" >&2; exit 1
	fi
	sleep 0.5
done
say "API server $("$kubectl" version -o json | jq -r .serverVersion.gitVersion) ready $((SECONDS - start)) s after start"

"$kubectl" apply --server-side -f "$root/deploy/check/crds" >/dev/null
"$kubectl" wait --for condition=established --timeout=60s crd --all >/dev/null

fail=0
# The namespace exists for real (dry runs of namespaced objects need it), with its Pod Security labels.
"$kubectl" apply --server-side -f "$root/deploy/base/namespace.yaml" >/dev/null
for ov in "$root"/deploy/overlays/*/; do
	name=$(basename "$ov")
	"$kubectl" kustomize "$ov" >"$work/$name.yaml"
	if ! out=$("$kubectl" apply --server-side --dry-run=server --validate=strict -f "$work/$name.yaml" 2>&1); then
		say "overlay $name refused:"; echo "$out" >&2; fail=1
	elif grep -qi 'warning' <<<"$out"; then
		say "overlay $name: warnings:"; grep -i warning <<<"$out" >&2; fail=1
	else
		say "overlay $name: $(grep -c . <<<"$out") objects accepted (server-side dry run, strict)"
	fi
done

for f in "$root"/deploy/check/broken/*.yaml; do
	want=$(sed -n 's/^# server: //p' "$f")
	if out=$("$kubectl" apply --server-side --dry-run=server --validate=strict -f "$f" 2>&1); then
		say "broken fixture $(basename "$f") was accepted"; fail=1
	elif ! grep -qF -- "$want" <<<"$out"; then
		say "broken fixture $(basename "$f") refused, but not with \"$want\":"; echo "$out" >&2; fail=1
	else
		say "broken fixture $(basename "$f") refused: $(head -c 160 <<<"$out")"
	fi
done

# The group-versions the overlays and fixtures use, as OpenAPI v3 paths (api/v1, apis/apps/v1, ...).
gvs=$(cat "$work"/*.yaml "$root"/deploy/check/broken/*.yaml | sed -n 's/^apiVersion: *//p' | sort -u |
	awk '{ if (index($0, "/")) print "apis/" $0; else print "api/" $0 }')
mkdir -p "$work/openapi"
for gv in $gvs; do
	"$kubectl" get --raw "/openapi/v3/$gv" | jq -S . >"$work/openapi/${gv//\//__}.json"
done
dir=$root/deploy/check/openapi
if $update; then
	rm -rf "$dir"; cp -r "$work/openapi" "$dir"
	say "wrote $(ls "$dir" | wc -l) OpenAPI documents to deploy/check/openapi: commit them"
elif ! diff -rq "$work/openapi" "$dir" >/dev/null 2>&1; then
	say "deploy/check/openapi differs from what the API server publishes:"
	diff -rq "$work/openapi" "$dir" >&2 || true
	say "run scripts/deploy-check.sh -update (make deploy-check-update) and commit the result"
	fail=1
else
	say "deploy/check/openapi matches the server ($(ls "$dir" | wc -l) documents)"
fi
say "done in $((SECONDS - start)) s"
exit $fail
