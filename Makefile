# The two commands of the README's quick start: `make demo` and `make test`.
# Both install the system programs they need first (scripts/deps.sh).

GO       ?= go
BIN      := bin/harness
# The whole suite took 9 min 57 s on a quiet 2-core AMD machine (2026-11-28,
# 12:37-12:47 UTC) and 11 min 11 s on a 2-core Intel one (15:52-16:03 UTC; the
# scenarios' 4.2 min the longest); the bound is a backstop
# against a hang, not a target. -count=1: the integration tests
# depend on redis-server and friends, which Go's test cache cannot see.
TESTFLAGS ?= -count=1 -timeout 25m

.PHONY: all deps build demo test test-short lint fuzz bench clean image

all: build

deps:
	@./scripts/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/harness

# A lock that breaks, in a picture, with words that say why: set-nx-ex with a
# client that pauses longer than its TTL (a GC pause). Its late DEL deletes the
# next holder's lock. Exit code 1 (invalid) is the expected outcome here.
demo: deps build
	@echo "== a lock that is safe without faults: token (SET NX PX + compare-and-delete)"
	@./$(BIN) run --lock token --clients 5 --ttl 1s --time-limit 5s --recovery 2s --seed 7 --store store || true
	@echo
	@echo "== a lock that breaks: set-nx-ex, with a client pausing 1.5s past its 1s TTL"
	@./$(BIN) run --lock set-nx-ex --clients 5 --ttl 1s --client-pause 1.5s --time-limit 10s --recovery 2s --seed 7 --store store; \
	  code=$$?; if [ $$code -eq 1 ]; then echo; echo "demo: set-nx-ex broke mutual exclusion, as expected. Look at store/latest/timeline.png and store/latest/index.html"; \
	  else echo "demo: expected exit code 1 (invalid), got $$code"; exit 1; fi

# With a Docker engine here, the Docker backend's tests run too and need the
# image (built once, offline, by `make image`); without one they skip.
test: deps
	@if docker info >/dev/null 2>&1; then ./scripts/image.sh; fi
	$(GO) test $(TESTFLAGS) ./...

# The Redis image of the Docker backend, from Debian's packages with
# debootstrap (no registry needed): redis-server, redis-sentinel,
# libfaketime and the malloc shim, iptables. About 40 s and 96 MB.
# FORCE=1 rebuilds it; IMAGE names it.
IMAGE ?= lockharness/redis:bookworm
image:
	@./scripts/image.sh $(IMAGE)

# The fuzz targets, briefly (CI); by hand, longer: make fuzz FUZZTIME=5m.
# `make test` runs their seed corpora. Every parser of outside data has
# one: histories, the checker's input, expectations files, matrix specs,
# shards' matrix.json, target files, schedules and the lock-client
# protocol's answers.
FUZZTIME ?= 15s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./history/
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./checker/
	$(GO) test -run '^$$' -fuzz '^FuzzWindowedIsWhole$$' -fuzztime $(FUZZTIME) ./checker/
	$(GO) test -run '^$$' -fuzz '^FuzzExpectations$$' -fuzztime $(FUZZTIME) ./matrix/
	$(GO) test -run '^$$' -fuzz '^FuzzSpec$$' -fuzztime $(FUZZTIME) ./matrix/
	$(GO) test -run '^$$' -fuzz '^FuzzShard$$' -fuzztime $(FUZZTIME) ./matrix/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./sut/target/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./schedule/
	$(GO) test -run '^$$' -fuzz '^FuzzDecoderAgrees$$' -fuzztime $(FUZZTIME) ./history/
	$(GO) test -run '^$$' -fuzz '^FuzzAnswer$$' -fuzztime $(FUZZTIME) ./locks/adapter/
	$(GO) test -run '^$$' -fuzz '^FuzzEncodePNG$$' -fuzztime $(FUZZTIME) ./reports/

# The checks a reader should not have to make: gofmt; go vet; staticcheck at the
# version go.mod's tool line pins (`go tool staticcheck` builds it from the
# module cache, so it runs offline after `go mod download`); and the size of
# every function (scripts/funcsize): none over 100 lines or cyclomatic
# complexity 30, but the data tables its allow-list names, each with why.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) run ./scripts/funcsize -allow scripts/funcsize/allow.txt ./...

# Unit tests only: no Redis needed.
test-short:
	$(GO) test -short ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

clean:
	rm -rf bin
