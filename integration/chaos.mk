# Reliability under faults (issue #21, docs/reliability.md): producers and consumers through the official Go
# and Java clients against rmqd and the Apache 5.3.3 broker side by side, while the broker is killed, paused,
# partitioned off, its name server killed, its disk slowed or filled, a master or slave of a pair killed;
# every message accounted for by id. Included by the top-level Makefile. The partition and disk-full faults
# need root (iptables, a tmpfs mount) and skip, saying why, without it.
#
#   make chaos                       the full run (about 30 minutes on 2 cores), both targets side by side
#   make chaos RMQD_TARGET=rmqd      one target
#
# A short version (rmqd only, about a minute) runs inside `make test` with the rest of ./integration/...

_chaos_default_goal := $(.DEFAULT_GOAL)

CHAOS_TIMEOUT ?= 80m

.PHONY: chaos chaos-deps

# The partition fault needs iptables: installed from Debian's packages when missing and this is root; the
# fault skips (saying why) when it still cannot add a rule.
chaos-deps:
	@command -v iptables >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		apt-get install -y -q iptables >/dev/null; } || echo "chaos: no iptables; the partition fault will be skipped"

chaos: integration-deps chaos-deps
	RMQD_CHAOS=full RMQD_TARGET=$(RMQD_TARGET) $(GO) test -count=1 -v -timeout $(CHAOS_TIMEOUT) -run 'TestChaos' ./integration/chaos
	@echo "figures: integration/.logs/TestChaos/results.md"

.DEFAULT_GOAL := $(_chaos_default_goal)
