# portalwatch: `make up` brings everything up on a Debian/Ubuntu machine and
# runs the service under supervisord; `make test` runs the tests.

SHELL      := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO         ?= go
SUPERVISOR := deploy/supervisor
SUPCONF    := $(SUPERVISOR)/supervisord.conf
SUPCTL     := supervisorctl -c $(SUPCONF)
# The database make up creates where it runs PostgreSQL: the one DATABASE_URL
# names (the programs and watchctl migrate use that one), else portalwatch.
ifeq ($(origin DB_NAME),command line)
$(error DB_NAME is not a setting: name the database in DATABASE_URL (postgres://postgres@127.0.0.1:5432/NAME?sslmode=disable), which make up creates here and the programs use)
endif
DB_NAME    := $(or $(shell printf '%s' "$$DATABASE_URL" | sed -nE 's|^postgres(ql)?://[^/]*/([^?]+).*|\2|p'),portalwatch)
PROGRAMS   := scheduler crawler processor extractor watchctl web notifier renderer
FUZZTIME   ?= 5s
# What one machine runs (make up ROLES=crawler,processor): a comma-separated
# subset of scheduler, crawler, processor, extractor, web, notifier and
# renderer; empty means the first six (the renderer, which needs Chromium,
# runs only when named: ROLES=scheduler,crawler,processor,extractor,web,notifier,renderer).
ROLES      ?=
# How many crawler processes the crawler role starts.
CRAWLERS   ?= 2
# How many extractor processes the extractor role starts.
EXTRACTORS ?= 1
# no: PostgreSQL, Redis and RabbitMQ run elsewhere (DATABASE_URL, AMQP_URL and
# REDIS_URL name them); make up neither installs nor starts them here.
LOCAL_SERVICES ?= yes

.PHONY: up check-roles down status build services test vet fuzz chaos chaos-short clean eval-articles

# Benchmarks: make bench, bench-history, bench-scheduler, bench-peer, bench-go,
# bench-redis, bench-hostile, bench-web, bench-partition (see bench.mk).
include bench.mk

## up: install and start PostgreSQL, Redis, RabbitMQ and supervisord as needed
## (LOCAL_SERVICES=no: supervisord only), create and migrate the database
## (where the scheduler runs), build, and (re)start the programs of ROLES
## (default: all) under supervisord with the current environment.
up: check-roles build
	@if [ "$(LOCAL_SERVICES)" = yes ]; then \
		scripts/services.sh ensure all && scripts/services.sh redis-limits && scripts/services.sh ensure-db $(DB_NAME); \
	else scripts/services.sh ensure supervisor; fi
	@# The renderer drives Debian's chromium; only its machines install it.
	@case "$$(scripts/supervisor-roles.sh "$(ROLES)")" in *renderer*) scripts/services.sh ensure chromium;; esac
	@# Migrations take a lock, but only the machine that runs the scheduler
	@# needs them: a crawler machine may have no database access at all.
	@case "$$(scripts/supervisor-roles.sh "$(ROLES)")" in *scheduler*) bin/watchctl migrate;; esac
	@# The programs and watchctl read the recorded settings: this shell's,
	@# over those of the last make up (UNSET=NAME,... drops some).
	@UNSET="$(UNSET)" scripts/supervise.sh record
	@scripts/supervise.sh start "$$(scripts/supervisor-roles.sh "$(ROLES)")" $(CRAWLERS) $(EXTRACTORS)

# check-roles: refuse a bad ROLES, CRAWLERS, EXTRACTORS or LOCAL_SERVICES in one line,
# before anything is built or started.
check-roles:
	@scripts/supervisor-roles.sh "$(ROLES)" >/dev/null
	@case "$(CRAWLERS)" in [1-9]|[1-9][0-9]|100) ;; *) echo "CRAWLERS=$(CRAWLERS): want 1 to 100 crawler processes" >&2; exit 2;; esac
	@case "$(EXTRACTORS)" in [1-9]|[1-9][0-9]|100) ;; *) echo "EXTRACTORS=$(EXTRACTORS): want 1 to 100 extractor processes" >&2; exit 2;; esac
	@case "$(LOCAL_SERVICES)" in yes|no) ;; *) echo "LOCAL_SERVICES=$(LOCAL_SERVICES): want yes or no" >&2; exit 2;; esac

## down: stop every program (gracefully) and supervisord itself, and return
## once they have exited. The databases and the broker keep running.
down:
	@scripts/supervise.sh stop

## status: each program's state; exit status 3 when portalwatch is not running.
status:
	@scripts/supervise.sh status

services:
	@scripts/services.sh check-go
	@scripts/services.sh ensure all

build:
	@scripts/services.sh check-go
	@mkdir -p bin
	$(GO) build -o bin/ $(addprefix ./cmd/,$(PROGRAMS))

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...

## test: the whole suite against the real services (started if needed):
## vet, unit and integration tests with the race detector (Chromium is installed
## for the web page's browser test), the end-to-end
## tests that run the real programs, short fuzz runs, and then, on their own,
## a short fault-injection run with its negative controls.
test: services vet
	@scripts/services.sh ensure chromium
	@scripts/services.sh ensure axe
	$(GO) test -race -count=1 -timeout 15m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)
	$(MAKE) --no-print-directory chaos-short

## chaos-short: the fault-injection suite at its default size (50 pages, 12
## rounds), the cluster, notifier and supervisord tests and the negative
## controls; every test file's lines are shown, so a failure says why. It
## starts private PostgreSQL, Redis and RabbitMQ servers, so it never restarts
## the shared ones.
chaos-short:
	$(GO) test -tags chaos -count=1 -timeout 20m -v ./chaos 2>&1 | grep -vE '^=== (RUN|PAUSE|CONT)' | \
		grep -E '^(---|ok|FAIL|PASS|panic)|[a-z_]+_test\.go:[0-9]+:|farm.go' ; exit $${PIPESTATUS[0]}

## chaos: the long fault-injection run (100 pages, 30 rounds, broker kills).
chaos:
	CHAOS_LONG=true $(GO) test -tags chaos -count=1 -timeout 60m -v -run 'TestChaos$$' ./chaos 2>&1 | \
		grep -vE '^=== (RUN|PAUSE|CONT)' | grep -E '^(---|ok|FAIL|PASS|panic)|chaos_test.go|farm.go' ; exit $${PIPESTATUS[0]}

## fuzz: run each fuzz target for FUZZTIME (default 5s; 60s for a real run).
# A failing input is written to the package's testdata/fuzz and fails every
# later run, the second one included. A failure that a second run does not
# repeat is the fuzzing engine's own (on a loaded machine its workers can be
# reported as hung): it is shown, and the run goes on.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg >$$log 2>&1 && continue; \
			grep -v '^fuzz: elapsed' $$log | tail -20; \
			echo "$$target failed; running it again"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg >$$log 2>&1 || \
				{ grep -v '^fuzz: elapsed' $$log | tail -40; exit 1; }; \
			echo "$$target passed when run again: the first failure was not an input's"; \
		done; \
	done

clean:
	rm -rf bin

## eval-articles: internal/article's body F1 and publication-day accuracy on
## the committed evaluation sets, beside go-trafilatura and go-readability
## (not part of make test; see internal/article/testdata/README.md).
eval-articles:
	$(GO) test -tags articleeval -count=1 -run '^TestEval$$' -v ./internal/article 2>&1 | grep -vE '^(=== RUN|--- PASS|PASS|ok )'; exit $${PIPESTATUS[0]}
