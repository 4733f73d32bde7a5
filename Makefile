# rmqd: the two commands a newcomer needs are `make run` and `make test`.
GO       ?= go
BIN      := bin/rmqd
# make test fuzzes each target briefly over its corpus (52 targets); `make fuzz FUZZTIME=1m` digs deeper.
FUZZTIME ?= 3s
STATICCHECK_VERSION := v0.8.2
GOBIN ?= $(shell $(GO) env GOPATH)/bin

.PHONY: all build run test unit vet lint fuzz compat-java compat-ha compat-filter compat-bodies bench chaos clean tools

include integration/integration.mk
include integration/bench.mk
include integration/chaos.mk
include integration/tools.mk

all: build

# One static binary: no cgo (the pure-Go resolver), nothing to install beside it.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/rmqd

# Standalone name server (:9876) and broker (:10911); data under .run/store.
run: build
	mkdir -p .run && cd .run && ../$(BIN)

test: vet lint unit fuzz compat-java compat-ha compat-filter compat-bodies integration-test integration-lite

vet:
	$(GO) vet ./...

# staticcheck comes from the Go module proxy, pinned, the first time.
lint:
	@test -x $(GOBIN)/staticcheck && $(GOBIN)/staticcheck -version | grep -q '($(STATICCHECK_VERSION:v%=%))' || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck ./...

# Allocation tests skip under -race (it changes allocation), so they run again
# without it; so does TestGoClientEndToEnd (the official Go client races with
# itself, which -race would report as ours).
unit:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /integration)
	$(GO) test -count=1 -run 'Alloc|TestGoClientEndToEnd' $$($(GO) list ./... | grep -v /integration)

# The store's on-disk format checked both ways against Java's DefaultMessageStore
# (rocketmq-store from Maven Central).
compat-java:
	RMQD_JAVA_COMPAT=1 $(GO) test -count=1 -run 'TestJava' ./store

# Controller-mode HA against Apache 5.3.3's AutoSwitchHAService both ways (a Java store
# in controller mode per test, from the integration classpath; some 35 s).
compat-ha: integration-deps
	RMQD_HA_INTEROP=1 $(GO) test -count=1 -run 'TestJava' ./store/ha

# The SQL92 and tag filters checked against Java's own evaluator (rocketmq-filter and
# rocketmq-remoting 5.3.3, from the integration classpath) on random selectors.
ORACLE_CP := $(CURDIR)/integration/java/target/lib/apache/*:$(CURDIR)/.run/oracle
compat-filter: integration-deps
	mkdir -p .run/oracle
	javac -cp '$(ORACLE_CP)' -d .run/oracle processor/filter/testdata/oracle/*.java
	RMQD_FILTER_ORACLE="java -cp '$(ORACLE_CP)' Oracle" RMQD_FILTER_TAG_ORACLE="java -cp '$(ORACLE_CP)' TagOracle" \
		$(GO) test -count=1 -run 'TestJava' ./processor/filter

# Client bodies (HEART_BEAT, LOCK_BATCH_MQ; captured from the C++ client and ali-ons) decoded by codec and
# by the Java broker's own RemotingSerializable (fastjson 1.2.83), compared.
compat-bodies: integration-deps
	mkdir -p .run/oracle
	javac -cp '$(ORACLE_CP)' -d .run/oracle codec/testdata/oracle/BodyOracle.java
	RMQD_BODY_ORACLE="java -cp '$(ORACLE_CP)' BodyOracle" $(GO) test -count=1 -run 'TestJavaBodyOracle' ./codec

fuzz:
	FUZZTIME=$(FUZZTIME) .ci/fuzz.sh

clean:
	rm -rf bin .run
