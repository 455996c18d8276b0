# `make test` is what CI runs (.ci/run) and what the README gives.
GO       ?= go
FUZZTIME ?= 5s

.PHONY: test short deps fmt-check tidy-check lint vet unit fuzz bench soak

test: deps fmt-check tidy-check vet lint unit fuzz

# The inner loop: every package's tests with -short (the histories and the slow
# end-to-end, cluster and restart tests skip: redistest.Slow), under a minute on 2 cores.
short: deps
	$(GO) test -race -short ./...

deps:
	@scripts/deps.sh

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# go.mod and go.sum of both modules must be exactly what `go mod tidy` writes.
tidy-check:
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff

# staticcheck, pinned; `go run` fetches it from the module proxy once and caches it.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...
	cd bench && $(GO) run $(STATICCHECK) ./...

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

unit:
	$(GO) test -race -timeout 9m ./...

# A short run of every fuzz target; longer: make fuzz FUZZTIME=10m
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz-short.sh

# Long fault-injected histories of locklib (locklib/history_test.go): TestHistory on one
# server, TestHistoryRedlock on three; `make test` runs them for 25 s and 15 s, this for
# SOAK each. LOCKLIB_HISTORY_SEED=<seed> repeats a run's random choices.
# Then every deployment × fault cell of docs/guarantees.md's table (internal/contend; `make
# test` runs three), written to internal/contend/matrix.md (about 5 minutes).
# Then the demo's failover-replica scenario for 2 minutes (about ten failovers; `make test`
# runs it for 10 s, one). Then locklib's lock-loss rate over FAILOVER_ROUNDS rounds of three
# forced failovers each (locklib/failover_loss_test.go; `make test` runs one round; about
# 20 s a round): docs/locklib.md, "Sentinel, replicas and WAIT", has the figures.
SOAK ?= 10m
FAILOVER_ROUNDS ?= 10
soak: deps
	LOCKLIB_HISTORY=$(SOAK) $(GO) test -race -run '^TestHistory(Redlock)?$$' -count=1 -timeout 0 ./locklib/
	GUARANTEES_MATRIX=full GUARANTEES_MATRIX_OUT=matrix.md $(GO) test -race -run '^TestGuaranteesMatrix$$' -count=1 -timeout 0 -v ./internal/contend/
	DEMO_FAILOVER_REPLICA=2m $(GO) test -race -run '^TestFailoverReplica$$' -count=1 -timeout 0 -v ./demo/
	LOCKLIB_FAILOVER=$(FAILOVER_ROUNDS) $(GO) test -race -run '^TestFailoverLossRate$$' -count=1 -timeout 0 -v ./locklib/

# Benchmarks are not part of `make test`; docs/benchmarks.md has the commands and results.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem ./...
