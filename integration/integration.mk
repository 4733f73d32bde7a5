# Integration tests: official clients (Java 5.3.3 / 4.9.7, Go v2.1.2) and mqadmin against the Apache
# RocketMQ 5.3.3 broker (the reference) and against rmqd. Included by the top-level Makefile; run from the
# repository root. See docs/testing.md.
#
#   make integration-deps                       Java side: Maven Central the first time, offline after
#   make integration-test                       every scenario against both targets
#   make integration-test RMQD_TARGET=apache    one target (apache | rmqd | all)
#   make integration-test IT_RUN='TestMatrix/apache/java5-push-clustering'

# Keep the including Makefile's default goal: save it here, restore it at the end (an empty value lets the
# next target defined after the include, e.g. `all`, become the default as if this file were not there).
_it_default_goal := $(.DEFAULT_GOAL)

GO          ?= go
MVN         ?= mvn
IT_JAVA     := integration/java
RMQD_TARGET ?= all
IT_RUN      ?= .
IT_TIMEOUT  ?= 20m

.PHONY: integration-deps integration-test

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

# -count=1: results depend on the servers and jars, which go test's cache does not see.
integration-test: integration-deps
	RMQD_TARGET=$(RMQD_TARGET) $(GO) test -count=1 -timeout $(IT_TIMEOUT) -run '$(IT_RUN)' ./integration/...

.DEFAULT_GOAL := $(_it_default_goal)
