# Four Kingdoms — developer entry points. `make run` and `make test` are the two commands of the README.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Every package of every module listed in go.work (the tool modules under tools/ are not in it).
PKGS := github.com/fourkingdoms/fourkingdoms/...
BIN := $(CURDIR)/bin
GOTEST_FLAGS ?= -race -count=1 -timeout 25m
export GOFLAGS ?= -buildvcs=false

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-z][a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: run
run: ## The whole cluster on this machine (embedded store unless REDIS_ADDR / REDIS_CLUSTER_ADDRS) with bots.
	@scripts/run.sh

.PHONY: run-fresh
run-fresh: ## `make run` with an empty embedded store: deletes .run/store.snapshot (ratings, games) first.
	@scripts/run.sh -fresh

.PHONY: test
test: redis chromium proto-check web-check vet staticcheck gotest ## Every check and every test (installs redis-server and chromium if it can).

.PHONY: redis
redis: ## Install redis-server/redis-cli with apt-get when missing (as root), else say how.
	@scripts/ensure-redis.sh

.PHONY: proto
proto: ## Regenerate proto/gen from proto/ with the pinned buf and plugins.
	@scripts/proto.sh generate

.PHONY: proto-check
proto-check: ## Fail when generated code drifts from proto/, lint the contracts, check breaking changes.
	@scripts/proto.sh check
	@scripts/proto.sh lint
	@scripts/proto.sh breaking

.PHONY: web
web: ## Regenerate web/src/gen and rebuild the committed bundle web/dist (needs node; see docs/web.md).
	@scripts/web.sh build

.PHONY: web-check
web-check: ## Fail when web/src/gen or web/dist drift from the sources; typecheck and unit-test the web client.
	@scripts/web.sh check

.PHONY: chromium
chromium: ## Install Debian's chromium for the browser tests when missing (as root), else say how.
	@scripts/web.sh chromium

.PHONY: vet
vet: ## go vet and gofmt over every module.
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PKGS)

.PHONY: staticcheck
staticcheck: $(BIN)/staticcheck ## staticcheck over every module.
	$(BIN)/staticcheck $(PKGS)

$(BIN)/staticcheck: tools/lint/go.mod
	cd tools/lint && GOWORK=off go build -o $@ honnef.co/go/tools/cmd/staticcheck

.PHONY: gotest
gotest: ## go test -race over every module (integration tests start their own redis-server processes).
	go test $(GOTEST_FLAGS) $(PKGS)

.PHONY: bench
bench: ## Benchmarks (compare runs with benchstat).
	go test -run '^$$' -bench . -benchmem -count 6 $(PKGS)

.PHONY: images
images: ## OCI images of the three services, the bots and the web app: static binaries on an empty base (docs/images.md).
	@scripts/images.sh

.PHONY: image-test
image-test: ## Build the images and play one game through them with podman, TLS on (needs root; .ci/run runs it).
	@scripts/image-test.sh

.PHONY: build
build: ## Build every binary into bin/.
	go build -o $(BIN)/ ./services/match/cmd/... ./services/matchmaking/cmd/... ./services/rating/cmd/... ./cmd/...

.PHONY: deploy-check
deploy-check: ## Every overlay against a real kube-apiserver (built from the module proxy; cold ~12 min), fixtures, schema drift.
	@scripts/deploy-check.sh

.PHONY: deploy-check-update
deploy-check-update: ## deploy-check, rewriting deploy/check/openapi from the server's OpenAPI v3 documents.
	@scripts/deploy-check.sh -update
