# The two jobs the README opens with. Both get a real Redis first.
GO ?= go
# A source build says which version and commit it is (rlconform version,
# every report): git describe and git rev-parse, stamped into
# internal/version.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/rlconform/rlconform/internal/version.stamped=$(VERSION) -X github.com/rlconform/rlconform/internal/version.stampedCommit=$(COMMIT)
# goreleaser, pinned, run with go run (docs/versioning.md).
GORELEASER := github.com/goreleaser/goreleaser/v2@v2.15.1

.PHONY: conformance test test-full lint bench redis node-deps container-rung gateways chromium arch-check api-check cards cards-update cards-deps cards-envoy build release-snapshot

## conformance: grade the reference limiter against real Redis and print the table
conformance: redis build
	./bin/rlconform run

## build: bin/rlconform, stamped with git describe
build:
	@mkdir -p bin
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/rlconform ./cmd/rlconform

## release-snapshot: every release archive (.goreleaser.yaml) into dist/,
## as a release would build them, without publishing (--snapshot)
release-snapshot:
	$(GO) run $(GORELEASER) release --snapshot --clean

## test: every test: test binaries run 4 at a time (the real-time ones
## mostly wait; 8 at a time loaded two cores so far that loopback Redis
## calls took 140ms and real-time runs decided little), and without the
## race detector, which test-full (CI) adds. Of the report cards (cards/, a
## module of its own), the six with an injected clock and no store
## (cards/cmd/cards TestFastCards). Where a test grades
## a matrix of equivalent targets in real time, or repeats a run to catch a
## rare failure, it takes a sample (logged with its RLCONFORM_SEED, which
## picks it again) or fewer runs: test-full runs the rest of them. The edit loop:
## go test -short ./... (about a minute). The timeout is raised from go
## test's 10 minutes: on a loaded machine the cli package's real-time
## identify runs have taken minutes (7m52s for one, seen under -p 8).
test: redis gateways chromium cards-deps node-deps container-rung arch-check api-check
	$(GO) vet ./...
	$(GO) test -count=1 -p 4 -timeout 30m ./...
	cd cards && $(GO) vet ./... && $(GO) test -count=1 -timeout 30m ./...

## lint: go vet and staticcheck (pinned) over both modules, the main one
## and cards/; CI runs it before make test. staticcheck is fetched by go
## run from the module proxy the first time.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd cards && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

## cards: grade every report card (docs/cards.md) with rlconform, four at
## a time (each on its own Redis and ports; -parallel 1 one at a time),
## compare the verdicts with cards/expected.txt (a difference fails), and
## write docs/cards.md. About 17 minutes on two cores, mostly in real time
## (53 cards and their second scales graded in 16m20s and 16m52s,
## 2026-12-07); a card that differs is graded once more in its lane.
## CI runs it with CARDS_FLAGS="-fail-fast -realtime-identify print": each
## run against the sliding log of a card graded against another profile
## stops at its first failure (expected.txt holds only its outcome), what
## identify names in real time (which varies with the machine's load) is
## printed where it differs, not compared, and docs/cards.md is not written.
CARDS_FLAGS =
cards: redis gateways cards-deps cards-envoy
	cd cards && $(GO) run -ldflags '$(LDFLAGS)' ./cmd/cards $(CARDS_FLAGS)

## cards-update: the same, taking this run's verdicts as expected (after
## the card's notes say why)
cards-update: redis gateways cards-deps cards-envoy
	cd cards && $(GO) run -ldflags '$(LDFLAGS)' ./cmd/cards -update

# PHP with Symfony RateLimiter, Ruby with rack-attack and puma, a JDK and
# Maven, from Debian's packages, and the npm packages of the Node.js cards
# (cards/node, npm ci from its package-lock.json) (scripts/ensure-cards);
# then the Java cards' libraries from Maven Central, pinned by
# cards/java/pom.xml, and the cards compiled offline against them
# (scripts/ensure-cards-java); the Python cards' libraries from PyPI,
# pinned with their hashes in cards/python/requirements.txt, in the
# virtual environment cards/.venv (scripts/ensure-cards-python); and the
# Rust cards' crates from crates.io (governor, limitador with envoy-types
# and tonic, tower_governor with axum), pinned by cards/rust/Cargo.lock,
# built offline, about 2 minutes on two cores (scripts/ensure-cards-rust).
cards-deps:
	@./scripts/ensure-cards
	@./scripts/ensure-cards-java
	@./scripts/ensure-cards-python
	@./scripts/ensure-cards-rust

# Envoy's ratelimit service, built from its pinned commit into cards/.bin
# (scripts/ensure-envoy); only make cards grades it.
cards-envoy:
	@GO=$(GO) ./scripts/ensure-envoy

## test-full: what make test leaves out, and nothing it ran, in two
## halves. The race detector over the edit loop's tests (go test -race
## -short, both modules). The rest of the full tier
## (scripts/test-rest): the tests of internal/testtier/rest.txt with
## RLCONFORM_FULL=rest, each running the rest of what make test sampled
## with the same RLCONFORM_SEED (every mutant, profile and seed make test
## left out, the repeated runs beyond its count, the CI recipes as
## written); without a seed, each matrix whole. .ci/run runs it after make
## test with one RLCONFORM_SEED for both. RLCONFORM_FULL=1 go test ./...
## still runs every matrix whole.
test-full: redis gateways chromium cards-deps node-deps container-rung
	$(GO) test -race -short -count=1 -timeout 45m ./...
	cd cards && $(GO) test -race -short -count=1 -timeout 45m ./...
	GO=$(GO) ./scripts/test-rest

## bench: the reference side by side with its ceilings, in interleaved runs
## (docs/performance.md): AllowRequest against a bare go-redis Script.Run,
## AllowRequests against redis-benchmark's pipelined EVALSHA, on one Redis
## and on a 3-master cluster; the compact log (a LIST) against the ZSET
## reference, allow and deny paths, N = 10 to 10,000; benchstat's tables,
## the ratios, then the memory of one user's log by size, ZSET and LIST.
## About 5 minutes on two cores.
bench: redis
	GO=$(GO) ./scripts/bench-reference
	GO=$(GO) ./scripts/bench-ceiling
	GO=$(GO) ./scripts/bench-compact
	$(GO) test -count=1 -run '^(TestMemoryPerEntryByLogSize|TestMemoryCompactVsZSET)$$' -v ./reference

redis:
	@./scripts/ensure-redis

# rlconform is 64-bit only (docs/contract.md, "Platforms"): a 32-bit build
# must stop with the error that says so, not with an overflow.
arch-check:
	@GOARCH=386 $(GO) build ./contract 2>&1 | grep -q rlconform_requires_a_64_bit_platform || \
		{ echo "make test: GOARCH=386 go build ./contract must fail naming rlconform_requires_a_64_bit_platform" >&2; exit 1; }

# The public API against its recorded baseline (docs/api.md): a change is
# deliberate, recorded with scripts/api-check --record.
api-check:
	@GO=$(GO) ./scripts/api-check

# nginx and HAProxy (package gateways) are graded over HTTP by the tests,
# each started by them on a free loopback port; installed with apt-get
# (as root on Debian) without letting apt start them on port 80.
gateways:
	@./scripts/ensure-gateways

# The HTML report is opened in Debian's chromium by a test
# (cli.TestHTMLReportInABrowser), which starts it headless itself;
# installed with apt-get as root. Without it the test skips, saying so
# (unless RLCONFORM_REQUIRE_CHROMIUM is set, as .ci/run does).
chromium:
	@./scripts/ensure-chromium || echo "make test: no chromium: TestHTMLReportInABrowser will skip" >&2

# The container rung (redisenv/container) is graded through a Docker engine
# when one answers; its tests skip otherwise. Says which, before the tests.
container-rung:
	@./scripts/docker-engine status

# The Node.js example (examples/node) is graded over HTTP by the tests.
node-deps:
	@command -v node >/dev/null 2>&1 || { echo "make test grades examples/node: install Node.js and npm (apt-get install -y nodejs npm)" >&2; exit 1; }
	@[ -d examples/node/node_modules/ioredis ] || (cd examples/node && npm ci --no-audit --no-fund --loglevel=error)
