# `make test` is what CI runs (.ci/run) and what the README gives.
GO       ?= go
FUZZTIME ?= 5s

.PHONY: test short deps fmt-check tidy tidy-check core-deps-check lint vet unit fuzz bench soak

# Every Go module of the repository: the root; the comparison benchmarks; locklib's
# metrics and tracing adapters, modules of their own (as go-redis's extra/) so that an
# importer of locklib never downloads Prometheus or OpenTelemetry.
MODULES := . bench locklib/extra/lockprom locklib/extra/lockotel
# each runs a command in every module, stopping at the first that fails
each = set -e; for m in $(MODULES); do echo "$$m: $(1)"; (cd $$m && $(1)); done

test: deps fmt-check tidy-check core-deps-check vet lint unit fuzz

# The inner loop: every package's tests with -short (the histories and the slow
# end-to-end, cluster and restart tests skip: redistest.Slow), under a minute on 2 cores.
short: deps
	@$(call each,$(GO) test -race -short ./...)

deps:
	@scripts/deps.sh

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# go.mod and go.sum of every module must be exactly what `go mod tidy` writes. The
# modules under locklib/extra import the root module's packages (with replace), so a change
# of those packages' imports can need `make tidy`, which tidies every module.
tidy-check:
	@$(call each,$(GO) mod tidy -diff)

tidy:
	@$(call each,$(GO) mod tidy)

# The core module (locklib and all) must not depend on what only the adapters need.
ADAPTER_DEPS := prometheus|opentelemetry
core-deps-check:
	@if grep -E '$(ADAPTER_DEPS)' go.mod go.sum; then \
		echo "core-deps-check: the root module's go.mod/go.sum name an adapter's dependency (above)"; exit 1; fi
	@deps=$$($(GO) list -deps -test ./locklib/...) || exit 1; \
	if echo "$$deps" | grep -E '$(ADAPTER_DEPS)'; then \
		echo "core-deps-check: locklib imports an adapter's dependency (above)"; exit 1; fi

# staticcheck, pinned; `go run` fetches it from the module proxy once and caches it.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@$(call each,$(GO) run $(STATICCHECK) ./...)

vet:
	@$(call each,$(GO) vet ./...)

# The root module's tests with the adapter modules' beside them, and locklib's (the long
# pole, mostly waiting on servers) started on its own at once rather than whenever `go
# test ./...` reaches it, so the rest of the packages run in its shadow. bench/ holds only
# benchmarks (vet and lint build it).
EXTRA_MODULES := $(filter-out . bench,$(MODULES))
LONG_POLE := github.com/lockscope/lockscope/locklib
unit:
	@pkgs=$$($(GO) list ./...) || exit 1; status=0; pids=""; \
	for m in $(EXTRA_MODULES); do (cd $$m && $(GO) test -race -timeout 9m ./...) & pids="$$pids $$!"; done; \
	$(GO) test -race -timeout 9m $(LONG_POLE) & pids="$$pids $$!"; \
	$(GO) test -race -timeout 9m $$(echo "$$pkgs" | grep -vx '$(LONG_POLE)') || status=1; \
	for p in $$pids; do wait $$p || status=1; done; \
	exit $$status

# A short run of every fuzz target; longer: make fuzz FUZZTIME=10m
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz-short.sh

# Long fault-injected histories of locklib (locklib/history_test.go): TestHistory on one
# server, TestHistoryRedlock on three, TestHistorySemaphore on a lease semaphore; `make test`
# runs them for 25 s, 15 s and 4 s, this for SOAK each. LOCKLIB_HISTORY_SEED=<seed> repeats a run's random choices.
# Then every deployment × fault cell of docs/guarantees.md's table (internal/contend; `make
# test` runs three), written to internal/contend/matrix.md (about 5 minutes).
# Then the demo's failover-replica scenario for 2 minutes (about ten failovers; `make test`
# runs it for 10 s, one), and its rw-pool scenario for 2 minutes on miniredis and on
# redis-server (`make test`: 7 s each). Then locklib's lock-loss rate over FAILOVER_ROUNDS rounds of three
# forced failovers each (locklib/failover_loss_test.go; `make test` runs one round; about
# 20 s a round): docs/locklib.md, "Sentinel, replicas and WAIT", has the figures.
SOAK ?= 10m
FAILOVER_ROUNDS ?= 10
soak: deps
	LOCKLIB_HISTORY=$(SOAK) $(GO) test -race -run '^TestHistory(Redlock|Semaphore|RW)?$$' -count=1 -timeout 0 ./locklib/
	GUARANTEES_MATRIX=full GUARANTEES_MATRIX_OUT=matrix.md $(GO) test -race -run '^TestGuaranteesMatrix$$' -count=1 -timeout 0 -v ./internal/contend/
	DEMO_FAILOVER_REPLICA=2m $(GO) test -race -run '^TestFailoverReplica$$' -count=1 -timeout 0 -v ./demo/
	DEMO_RW_POOL=2m $(GO) test -race -run '^TestRWPool(RealRedis)?$$' -count=1 -timeout 0 -v ./demo/
	LOCKLIB_FAILOVER=$(FAILOVER_ROUNDS) $(GO) test -race -run '^TestFailoverLossRate$$' -count=1 -timeout 0 -v ./locklib/

# Benchmarks are not part of `make test`; docs/benchmarks.md has the commands and results.
bench:
	@$(call each,$(GO) test -run='^$$' -bench=. -benchmem ./...)
