# Monitoring tools of the RocketMQ ecosystem driven against rmqd (docs/observability.md). Included by the
# top-level Makefile. Neither apache/rocketmq-exporter nor apache/rocketmq-dashboard is published on a
# registry, so these targets fetch their source from GITHUB (a pinned commit; TOOLS_GIT_BASE or a local
# clone in EXPORTER_SRC / DASHBOARD_SRC overrides) and build it with Maven Central dependencies and, for the
# dashboard's frontend, the system Node/npm. Because CI reaches only the registries, they are not part of
# `make test`. Everything lands in integration/.tools (git-ignored); nothing fetched is committed.
#
#   make exporter-test    rocketmq-exporter against Apache 5.3.3 (control) and rmqd (RMQD_TARGET narrows)
#   make dashboard-test   rocketmq-dashboard against rmqd: every page's REST endpoints, and headless
#                         Chromium screenshots of the cluster and topic pages (docs/img/)

_tools_default_goal := $(.DEFAULT_GOAL)

TOOLS          := integration/.tools
TOOLS_GIT_BASE ?= https://github.com/apache
EXPORTER_REF   ?= e1ab2dd569d431c88c9eb599a9284aedc7abeb7c
DASHBOARD_REF  ?= 770822bbc812bfd0c2a94aa0128ab6f59b50d076
EXPORTER_SRC   ?= $(TOOLS_GIT_BASE)/rocketmq-exporter.git
DASHBOARD_SRC  ?= $(TOOLS_GIT_BASE)/rocketmq-dashboard.git
EXPORTER_JAR   := $(TOOLS)/rocketmq-exporter/rocketmq-exporter.jar
DASHBOARD_JAR  := $(TOOLS)/rocketmq-dashboard/rocketmq-dashboard.jar
TOOLS_MVN      := $(MVN) -q -B -Dcheckstyle.skip -Drat.skip -Dmaven.test.skip=true
CHROMIUM       ?= /usr/bin/chromium
PLAYWRIGHT     := playwright-core@1.64.1
DASHBOARD_TARGET ?= rmqd

.PHONY: exporter-deps exporter-test dashboard-deps dashboard-test

# tools_checkout(src, ref, dir): a fresh clone of src at ref in dir.
define tools_checkout
	rm -rf $(3) && mkdir -p $(dir $(3))
	git clone -q $(1) $(3)
	git -C $(3) -c advice.detachedHead=false checkout -q $(2)
endef

exporter-deps: $(EXPORTER_JAR)
$(EXPORTER_JAR):
	@echo "exporter-deps: building apache/rocketmq-exporter $(EXPORTER_REF) from GitHub source (Maven Central dependencies)"
	$(call tools_checkout,$(EXPORTER_SRC),$(EXPORTER_REF),$(TOOLS)/src/rocketmq-exporter)
	$(TOOLS_MVN) -f $(TOOLS)/src/rocketmq-exporter/pom.xml package
	mkdir -p $(dir $@) && cp $(TOOLS)/src/rocketmq-exporter/target/rocketmq-exporter-*-exec.jar $@

exporter-test: integration-deps exporter-deps
	RMQD_TARGET=$(RMQD_TARGET) RMQD_EXPORTER_JAR=$(CURDIR)/$(EXPORTER_JAR) \
		$(GO) test -count=1 -timeout 20m -run 'TestExporterScrape' ./integration/

# The frontend (create-react-app) is built with the system npm; the pom's frontend-maven-plugin, which
# downloads its own Node from nodejs.org, is skipped; its antrun step copies the build into the jar. The
# lockfile resolves every package at registry.npmmirror.com: npm fetches the same tarballs (same integrity
# hashes) from the configured registry instead.
dashboard-deps: $(DASHBOARD_JAR)
$(DASHBOARD_JAR):
	@echo "dashboard-deps: building apache/rocketmq-dashboard $(DASHBOARD_REF) from GitHub source (Maven Central, npm)"
	$(call tools_checkout,$(DASHBOARD_SRC),$(DASHBOARD_REF),$(TOOLS)/src/rocketmq-dashboard)
	cd $(TOOLS)/src/rocketmq-dashboard/frontend-new && $(NPM) ci --no-audit --no-fund --replace-registry-host=registry.npmmirror.com && \
		CI=false GENERATE_SOURCEMAP=false $(NPM) run build
	$(TOOLS_MVN) -Dskip.installnodenpm -Dskip.npm -f $(TOOLS)/src/rocketmq-dashboard/pom.xml package
	mkdir -p $(dir $@) && cp $(TOOLS)/src/rocketmq-dashboard/target/rocketmq-dashboard-*[0-9T].jar $@

# Debian's chromium (apt) and playwright-core (npm) drive the screenshots; the browser playwright would
# download is never used.
dashboard-test: dashboard-deps
	@test -x $(CHROMIUM) || { apt-get update -q && apt-get install -y -q chromium chromium-driver; }
	@test -f $(TOOLS)/node/node_modules/playwright-core/package.json || \
		$(NPM) install -s --no-audit --no-fund --no-save --prefix $(TOOLS)/node '$(PLAYWRIGHT)'
	RMQD_TARGET=$(DASHBOARD_TARGET) RMQD_DASHBOARD_JAR=$(CURDIR)/$(DASHBOARD_JAR) RMQD_CHROMIUM=$(CHROMIUM) \
		RMQD_DASHBOARD_SHOTS=$(CURDIR)/docs/img \
		RMQD_PLAYWRIGHT=$(CURDIR)/$(TOOLS)/node/node_modules/playwright-core \
		$(GO) test -count=1 -timeout 20m -run 'TestDashboard' ./integration/

.DEFAULT_GOAL := $(_tools_default_goal)
