# The two jobs the README opens with. Both get a real Redis first.
GO ?= go

.PHONY: conformance test bench redis

## conformance: grade the reference limiter against real Redis and print the table
conformance: redis
	$(GO) run ./cmd/rlconform run

## test: every test, with the race detector
test: redis
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## bench: decisions per second of the reference against a local Redis
bench: redis
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./reference

redis:
	@./scripts/ensure-redis
