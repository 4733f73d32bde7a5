# Benchmarks: the Apache RocketMQ 5.3.3 broker and rmqd, one after the other on this machine, driven by the
# same load generators; figures, ratios and a chart go to docs/benchmarks.md. Included by the top-level
# Makefile (after integration/integration.mk); run from the repository root. See docs/benchmarks.md.
#
#   make bench                      quick run (~17 min on 2 cores with the capability, POP and path rows, bounded at 25)
#   make bench BENCH_FULL=1         full matrix: longer runs, 1,000,000-message catch-up (bounded at 70 min)
#   make bench BENCH_ARGS='-brokers rmqd -micro=false -n 50000'    any flag of integration/bench

_bench_default_goal := $(.DEFAULT_GOAL)

GO         ?= go
MVN        ?= mvn
PYTHON     ?= python3
BENCH_FULL ?= 0
BENCH_OUT  := integration/bench/.out
BENCH_ARGS ?=
BENCH_BOUND = $(if $(filter 1,$(BENCH_FULL)),70m,25m)

.PHONY: bench bench-tools bench-java

# The chart needs matplotlib: installed once from PyPI, offline afterwards. Without it the run still
# produces every figure, only no PNG.
bench-tools:
	@$(PYTHON) -c 'import matplotlib' 2>/dev/null || $(PYTHON) -m pip install --quiet matplotlib \
		|| echo "bench: matplotlib could not be installed; the run will have no chart" >&2

# The Java benchmark Producer (rocketmq-example 5.5.0: the release nearest 5.3.3 on Maven Central), offline
# first. Without it the run skips that cross-check and says so.
bench-java:
	@$(MVN) -q -B -o -f integration/bench/java/pom.xml package >/dev/null 2>&1 \
		|| $(MVN) -q -B -f integration/bench/java/pom.xml package \
		|| echo "bench: rocketmq-example could not be fetched; no Java producer cross-check" >&2

bench: integration-deps bench-tools bench-java
	@mkdir -p $(BENCH_OUT)
	$(GO) build -o $(BENCH_OUT)/rmqd ./cmd/rmqd
	$(GO) build -o $(BENCH_OUT)/bench ./integration/bench
	BENCH_FULL=$(BENCH_FULL) timeout -k 30s $(BENCH_BOUND) $(BENCH_OUT)/bench -rmqd $(BENCH_OUT)/rmqd $(BENCH_ARGS)

.DEFAULT_GOAL := $(_bench_default_goal)
