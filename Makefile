# rmqd: the two commands a newcomer needs are `make run` and `make test`.
GO       ?= go
BIN      := bin/rmqd
FUZZTIME ?= 10s

.PHONY: all build run test unit vet fuzz bench clean tools

include integration/integration.mk

all: build

build:
	$(GO) build -o $(BIN) ./cmd/rmqd

# Standalone name server (:9876) and broker (:10911); data under .run/store.
run: build
	mkdir -p .run && cd .run && ../$(BIN)

test: vet unit fuzz integration-test

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /integration)

fuzz:
	FUZZTIME=$(FUZZTIME) .ci/fuzz.sh

clean:
	rm -rf bin .run
