# Integration tests: official clients (Java 5.3.3 / 4.9.7, Go v2.1.2) and mqadmin against the Apache
# RocketMQ 5.3.3 broker (the reference) and against rmqd. Included by the top-level Makefile; run from the
# repository root. See docs/testing.md.
#
#   make integration-deps                       Java side: Maven Central the first time, offline after
#   make integration-clients                    C++ (PyPI rocketmq 0.4.4) and ali-ons (npm) clients
#   make integration-test                       every scenario against both targets
#   make integration-test RMQD_TARGET=apache    one target (apache | rmqd | all)
#   make integration-test IT_RUN='TestMatrix/apache/java5-push-clustering'
#   make integration-proxy                      every gRPC-client scenario through rocketmq-proxy, POP store swap
#   make integration-controller                 5.x controller mode: failover of a group of three, and under ACL/TLS
#   make integration-ha-control                 the HA tests' Java->Java control pairs (make test leaves them out)
#   make integration-security-combos            the inter-broker tests under ACL 1.0 and mTLS too (make test: plain, acl2, tls)
#   make integration-rocketmq55                 every scenario with the RocketMQ 5.5.0 client, mqadmin, proxy and broker
#   make integration-lite                       lite topics (TestLiteTopics, TestLiteSharding) with the 5.5.0 build

# Keep the including Makefile's default goal: save it here, restore it at the end (an empty value lets the
# next target defined after the include, e.g. `all`, become the default as if this file were not there).
_it_default_goal := $(.DEFAULT_GOAL)

GO          ?= go
MVN         ?= mvn
IT_JAVA     := integration/java
RMQD_TARGET ?= all
IT_RUN      ?= .
IT_TIMEOUT  ?= 40m

.PHONY: integration-deps integration-clients integration-test integration-proxy integration-controller integration-ha-control integration-security-combos integration-rocketmq55 integration-deps55 integration-lite

# Clients in other languages (docs/compatibility.md), installed under integration/.clients (git-ignored):
# rocketmq-client-cpp as PyPI's rocketmq 0.4.4 (a manylinux x86-64 wheel bundling librocketmq.so) in a
# venv, and ali-ons from npm. Idempotent: nothing is fetched once a marker or package.json is there.
# Offline-tolerant: a failed install warns and the tests that need the client skip, saying why.
IT_CLIENTS  := integration/.clients
PYTHON      ?= python3
NPM         ?= npm
CPP_PYPI    := rocketmq==0.4.4
ONS_NPM     := ali-ons@3.12.0
# The 5.x gRPC Node.js client (apache/rocketmq-clients), driven through rocketmq-proxy (TestProxy), in its own
# prefix so npm does not prune ali-ons.
GRPC_NODE_NPM := rocketmq-client-nodejs@1.0.8

# Offline first (no network once ~/.m2 has everything); online only when an artifact is missing.
integration-deps:
	@command -v java >/dev/null || { echo "integration-deps: java (17+) not found" >&2; exit 1; }
	@command -v $(MVN) >/dev/null || { echo "integration-deps: $(MVN) not found" >&2; exit 1; }
	@if $(MVN) -q -B -o -f $(IT_JAVA)/pom.xml package >/dev/null 2>&1; then \
		echo "integration-deps: $(IT_JAVA)/target/lib up to date (offline)"; \
	else \
		echo "integration-deps: fetching from Maven Central"; \
		$(MVN) -q -B -f $(IT_JAVA)/pom.xml package; \
	fi

integration-clients:
	@if test -f $(IT_CLIENTS)/venv/.rocketmq-0.4.4; then \
		echo "integration-clients: $(CPP_PYPI) installed"; \
	elif $(PYTHON) -m venv $(IT_CLIENTS)/venv && $(IT_CLIENTS)/venv/bin/pip install -q --disable-pip-version-check '$(CPP_PYPI)' && \
		$(IT_CLIENTS)/venv/bin/python -c 'import rocketmq.client'; then \
		touch $(IT_CLIENTS)/venv/.rocketmq-0.4.4; echo "integration-clients: installed $(CPP_PYPI)"; \
	else \
		echo "integration-clients: WARNING: could not install $(CPP_PYPI); the cpp-* client tests will skip" >&2; \
	fi
	@if test -f $(IT_CLIENTS)/node/node_modules/ali-ons/package.json; then \
		echo "integration-clients: $(ONS_NPM) installed"; \
	elif mkdir -p $(IT_CLIENTS)/node && $(NPM) install -s --prefer-offline --no-audit --no-fund --no-save \
		--prefix $(IT_CLIENTS)/node '$(ONS_NPM)'; then \
		echo "integration-clients: installed $(ONS_NPM)"; \
	else \
		echo "integration-clients: WARNING: could not install $(ONS_NPM); the ons-* client tests will skip" >&2; \
	fi
	@if test -f $(IT_CLIENTS)/grpc-node/node_modules/rocketmq-client-nodejs/package.json; then \
		echo "integration-clients: $(GRPC_NODE_NPM) installed"; \
	elif mkdir -p $(IT_CLIENTS)/grpc-node && $(NPM) install -s --prefer-offline --no-audit --no-fund --no-save \
		--prefix $(IT_CLIENTS)/grpc-node '$(GRPC_NODE_NPM)'; then \
		echo "integration-clients: installed $(GRPC_NODE_NPM)"; \
	else \
		echo "integration-clients: WARNING: could not install $(GRPC_NODE_NPM); TestProxy's node-* scenarios will skip" >&2; \
	fi

# -count=1: results depend on the servers and jars, which go test's cache does not see.
# The slowest tests are listed after the run (harness: integration/.logs/durations.txt), pass or fail.
integration-test: integration-deps integration-clients
	@rm -f integration/.logs/durations.txt
	RMQD_TARGET=$(RMQD_TARGET) $(GO) test -count=1 -timeout $(IT_TIMEOUT) -run '$(IT_RUN)' ./integration/...; \
		rc=$$?; echo "slowest integration tests (s, from their first harness use):"; \
		sort -rn integration/.logs/durations.txt 2>/dev/null | head -25; exit $$rc

# The 5.x gRPC clients through rocketmq-proxy 5.3.3, every scenario (make test runs TestProxy's short ones),
# and the POP store handed between rmqd and Apache (TestPopStoreSwap).
integration-proxy: integration-deps integration-clients
	RMQD_TARGET=$(RMQD_TARGET) RMQD_PROXY=all $(GO) test -count=1 -timeout 30m -v -run 'TestProxy|TestPopStoreSwap' ./integration/

# A 3-node Apache controller, a name server and three brokers per target: several minutes (JVMs).
integration-controller: integration-deps
	RMQD_TARGET=$(RMQD_TARGET) RMQD_CONTROLLER=1 $(GO) test -count=1 -timeout 30m -v -run 'TestControllerFailover|TestControllerSecured' ./integration/

# The inter-broker tests under every security set-up: make test's plain, acl2 and tls, plus ACL 1.0 and mutual
# TLS on the acting-master tests, ACL 1.0 and mutual TLS on a remapped static topic's forwards, and an rmqd
# slave signing to a Java master (TestSecuredSlaveOfJava). Some 8 minutes.
integration-security-combos: integration-deps
	RMQD_TARGET=$(RMQD_TARGET) RMQD_SECURITY_COMBOS=1 $(GO) test -count=1 -timeout 30m -v \
		-run 'TestActingMaster|TestSecuredMasterSlave|TestSecuredSlaveOfJava|TestStaticTopicRemapped' ./integration/

# The HA tests with Apache master and slave as well: checks that what they expect is what Java does.
integration-ha-control: integration-deps
	RMQD_TARGET=all RMQD_HA_CONTROL=1 $(GO) test -count=1 -timeout 30m -v -run 'TestHA' ./integration/

# Every scenario with the newest RocketMQ 5 release in place of the pinned 5.3.3 (client, mqadmin, proxy and the
# Apache broker; the 4.9.7 and gRPC clients stay): the Java side is built into a folder of its own, so the
# pinned one is left as it is. Some 25 minutes; the tests that depend on the version read it from the jars.
IT55_VERSION ?= 5.5.0
IT55_TARGET  := $(CURDIR)/$(IT_JAVA)/target-$(IT55_VERSION)
integration-rocketmq55: integration-deps55 integration-clients
	RMQD_TARGET=$(RMQD_TARGET) RMQD_JAVA_TARGET=$(IT55_TARGET) $(GO) test -count=1 -timeout $(IT_TIMEOUT) -run '$(IT_RUN)' ./integration/

# The Java side with RocketMQ $(IT55_VERSION) in its own folder: Maven Central the first time, offline after.
integration-deps55:
	@if $(MVN) -q -B -o -f $(IT_JAVA)/pom.xml -Drocketmq5.version=$(IT55_VERSION) -Dit.target=$(IT55_TARGET) package >/dev/null 2>&1; then \
		echo "integration-deps55: $(IT55_TARGET)/lib up to date (offline)"; \
	else \
		echo "integration-deps55: fetching RocketMQ $(IT55_VERSION) from Maven Central"; \
		$(MVN) -q -B -f $(IT_JAVA)/pom.xml -Drocketmq5.version=$(IT55_VERSION) -Dit.target=$(IT55_TARGET) package; \
	fi

# Lite topics (RocketMQ 5.5) need the 5.5 proxy and client-java 5.2.0 (TestLiteTopics skips with the pinned
# 5.3.3 build, TestLiteSharding's Apache half too): make test runs them with the 5.5 build, against both
# targets. About a minute and a half.
integration-lite: integration-deps55
	RMQD_TARGET=$(RMQD_TARGET) RMQD_JAVA_TARGET=$(IT55_TARGET) $(GO) test -count=1 -timeout 10m -run 'TestLiteTopics|TestLiteSharding' ./integration/

.DEFAULT_GOAL := $(_it_default_goal)
