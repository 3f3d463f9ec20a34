# storebench — see README.md. The two commands a new machine needs:
#   make run    build (installing engine libraries when it can) and run the default study
#   make test   install what the tests need and run them all

GO      ?= go
BIN     := bin/storebench
# Evaluated when a recipe runs, i.e. after deps installed the libraries.
TAGS     = $(shell scripts/build-tags.sh)
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X storebench/internal/cli.Version=$(VERSION)
STUDY   ?= ledger
ARGS    ?=

.PHONY: docs test-cluster test-slow all build run test vet deps deps-strict bench-overhead bench-memory bench-native bench-ycsb bench-cost list clean

all: build

deps:
	@scripts/install-deps.sh

deps-strict:
	@scripts/install-deps.sh --strict

build: deps
	@echo "go build -tags '$(TAGS)' -o $(BIN) ./cmd/storebench"
	@$(GO) build -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/storebench

run: build
	./$(BIN) run $(STUDY) $(ARGS)

list: build
	./$(BIN) list

vet: deps-strict
	$(GO) vet -tags '$(TAGS)' ./...

# Tests need every engine and every server: one that cannot be installed
# or started fails the run rather than silently skipping its tests.
test:
	scripts/test.sh

# Re-render every figures block of docs/ from the run it names
# (docs/runs/NAME/results.json); make test fails while one is stale.
docs:
	STOREBENCH_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestDocsFiguresComeFromKeptRuns|TestVerdictsDocIsCurrent' ./docs/

# Real clusters with nodes that fail (3 Cassandra JVMs: minutes on 2
# cores, so apart from make test): a node killed mid-insert, nothing lost;
# a Redis Cluster primary paused, its replica promoted.
test-cluster:
	scripts/install-cassandra.sh
	scripts/install-servers.sh redis
	$(GO) build -tags '$(TAGS)' -o $(BIN) ./cmd/storebench
	$(GO) test -tags '$(TAGS) cluster' -p 1 -timeout 40m -run 'Cluster' ./internal/server/cassandra/ ./internal/server/rediscluster/ ./internal/target/rediscluster/ ./cmd/storebench/

# Crash tests of servers whose start takes minutes on 2 cores (Cassandra):
# a power failure under sync loses nothing acknowledged.
test-slow:
	scripts/install-cassandra.sh
	$(GO) test -tags '$(TAGS) slow' -p 1 -timeout 30m -run 'Slow' ./internal/workload/durability/

# The runner's own cost, side by side with a bare loop at 1, 2, 4 and 8
# goroutines (target <= 1.03).
bench-overhead: build
	./$(BIN) overhead --concurrency 1,2,4,8

# Harness memory as data grows: coordinator and worker RSS at 1e4 and 1e6.
bench-memory: build
	scripts/bench-memory.sh pebble 1e4 1e6

# storebench side by side with redis-benchmark, pgbench, ab, wrk and sysbench:
# median ratio over ROUNDS (5) alternating rounds and client CPU per operation,
# each pair with client and server sharing the cores and separated (PLACEMENT).
bench-native: build
	scripts/bench-native.sh

# storebench's ycsb side by side with go-ycsb v1.0.1 (built into
# ~/.cache/storebench) on the same Redis and PostgreSQL, workloads A and C,
# 1 and 8 threads: throughput ratios and client CPU per operation over
# ROUNDS (5) alternating rounds.
bench-ycsb: build
	scripts/bench-ycsb.sh

# The cost model's held-out check on a real run: 0.25 and 0.5 vCPU predict
# 1 vCPU (SHAPES; YCSB C and A on rocksdb and redis); fails above BOUND (0.25).
bench-cost: build
	scripts/bench-cost.sh

clean:
	rm -rf bin
