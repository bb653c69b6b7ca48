# Benchmarks (issue 5): included from the Makefile. See docs/benchmarks.md.
#
#   make bench            the whole pipeline on 1,000 synthetic portals (pwbench e2e)
#   make bench-history    the same, replaying ../shared/corpus/history
#   make bench-sources    the same with every portal's feed and news sitemap as sources, against off, alternating
#   make bench-ab A=rev [B=rev]  two revisions side by side, alternating runs, each figure as B/A
#   make bench-scheduler  1,000,000 due pages vs raw confirmed publishing
#   make bench-peer       urlwatch and portalwatch on the same 200 pages
#   make bench-polite     4 origins asking more than a 1 s spacing allows: the rate each gets
#   make bench-go         the Go benchmarks, with -benchmem, on ../shared/corpus/pages
#   make bench-hostile    crawler peak RSS under hostile pages (bench/hostile)
#   make bench-partition  the check and retention on 00006's partitioned tables vs 00005's (bench/partition)
#   make bench-articles   the extractor on real article pages, and the history pipeline with articles on vs off
#   make bench-render     the renderer on the corpus pages and hostile pages: pages/s, per CPU second, peak memory
#
# Every pipeline run but bench-articles' keeps articles off
# (PORTALWATCH_ARTICLES=false, no extractor), so its figures stay
# comparable with those from before articles; pwbench e2e -articles turns
# them on.
#
# Each pwbench run builds the real programs into a temporary folder, uses its
# own database, queue names and Redis prefix, sends traffic to loopback only,
# is bounded in time, and removes what it created. Its last output line is
# one JSON object. BENCH_RUNS repeats a run; BENCH_FLAGS passes flags
# (bin/pwbench e2e -h lists them), e.g. BENCH_FLAGS='-pages 300 -perf 15s'.

BENCH_RUNS  ?= 1
BENCH_FLAGS ?=
BENCH_COUNT ?= 3
BENCH_TIME  ?= 1s
BENCH_PKGS  ?= $(shell $(GO) list ./... | grep -v -e /e2e -e /cmd/ -e /bench/)
PWBENCH     := bin/pwbench

.PHONY: bench bench-ab bench-sources bench-history bench-scheduler bench-peer bench-polite bench-go bench-redis bench-hostile bench-partition bench-articles bench-render pwbench

pwbench:
	@scripts/services.sh check-go
	@mkdir -p bin
	$(GO) build -o $(PWBENCH) ./bench/cmd/pwbench

## bench: the whole pipeline, saturated then at half rate, with correctness.
bench: services pwbench
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(PWBENCH) e2e -repo . $(BENCH_FLAGS) || exit 1; done

## bench-ab: revisions A and B (B defaults to HEAD) built once each and run
## in turn on the same farm and services, AB_PAIRS pairs alternating A B, B A,
## printing every figure's ratio B/A with its spread over the pairs. By
## default every body served is unique (-vary-bodies): with repeated bodies
## the unchanged-body shortcut makes a run's speed feed on itself.
AB_PAIRS ?= 3
AB_FLAGS ?= -mode history -vary-bodies -redis-links 0
bench-ab: services pwbench
	@scripts/bench-ab.sh $(PWBENCH) "$(A)" "$(B)" $(AB_PAIRS) -- $(AB_FLAGS)

## bench-sources: feeds and news sitemaps off (-port-per-page: the same farm,
## one origin a page, as a news sitemap named by robots.txt needs) and on
## (-sources), SOURCES_PAIRS pairs alternating; compare each pair's pages/s
## and CPU a page (docs/benchmarks.md, issue 32).
SOURCES_PAIRS ?= 2
SOURCES_FLAGS ?= -redis-links 0
bench-sources: services pwbench
	@for i in $$(seq 1 $(SOURCES_PAIRS)); do \
		$(PWBENCH) e2e -repo . -port-per-page $(SOURCES_FLAGS) $(BENCH_FLAGS) || exit 1; \
		$(PWBENCH) e2e -repo . -sources $(SOURCES_FLAGS) $(BENCH_FLAGS) || exit 1; \
	done

## bench-history: the pipeline replaying the real homepage histories.
bench-history: services pwbench
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(PWBENCH) e2e -repo . -mode history $(BENCH_FLAGS) || exit 1; done

## bench-scheduler: jobs published per second from 1,000,000 due pages.
bench-scheduler: services pwbench
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(PWBENCH) scheduler -repo . $(BENCH_FLAGS) || exit 1; done

## bench-peer: urlwatch (Debian package) and portalwatch side by side.
bench-peer: services pwbench
	@command -v urlwatch >/dev/null || { echo "installing urlwatch"; \
		if [ "$$(id -u)" = 0 ]; then apt-get install -y -qq urlwatch >/dev/null; \
		else sudo apt-get install -y -qq urlwatch >/dev/null; fi; }
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(PWBENCH) peer -repo . $(BENCH_FLAGS) || exit 1; done

## bench-polite: a few origins whose pages ask more checks than their spacing
## allows; each origin should get the rate the spacing allows, never more.
bench-polite: services pwbench
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(PWBENCH) polite -repo . $(BENCH_FLAGS) || exit 1; done

## bench-redis: the seen-set's bytes per link alone.
bench-redis: services pwbench
	@$(PWBENCH) redis $(BENCH_FLAGS)

## bench-go: Go benchmarks (real pages, real PostgreSQL and Redis).
bench-go: services
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) $(BENCH_PKGS)

## bench-hostile: crawler peak RSS and normal-page recall under hostile pages.
bench-hostile: services
	$(GO) run ./bench/hostile -repo . $(BENCH_FLAGS)

## bench-render: the renderer at its default 2 tabs on the corpus' real pages
## and on hostile pages (scripts that allocate, loop, or open sockets
## forever), served from loopback with every other address refused: rendered
## pages/s, pages per CPU second of the renderer and its browser, and their
## peak memory, which must stay under 1 GiB (bench/render).
bench-render:
	@scripts/services.sh ensure chromium
	$(GO) run ./bench/render $(BENCH_FLAGS)

## bench-web: the web program's reads over 10,000 pages and 1,000,000 updates
## (p50/p99 of each request kind, and the plans PostgreSQL chose).
.PHONY: bench-web
bench-web: services
	PORTALWATCH_WEB_BENCH=1 $(GO) test -count=1 -timeout 15m -run '^TestReadLatencyAtScale$$' -v ./internal/web 2>&1 | \
		grep -vE 'level=INFO|migration applied'; exit $${PIPESTATUS[0]}

## bench-partition: the check statement at 10 M links, partitioned vs single tables, and retention.
bench-partition: services
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(GO) run ./bench/partition $(BENCH_FLAGS) || exit 1; done

## bench-articles: (a) articles fetched and extracted a second per core, end
## to end, by one extractor on the real article pages of
## internal/article/testdata served on loopback, and (c) its peak RSS
## (pwbench articles), BENCH_RUNS times; then (b) the history pipeline's
## pages/s with articles off and on, ARTICLES_PAIRS pairs alternating off
## on, on off, every link of the replayed homepages pointing at the farm,
## which answers it with a real article page (-local-links). The ratio of
## (b) is on/off of e2e_pages_per_s, pair by pair.
ARTICLES_PAIRS ?= 2
ARTICLES_FLAGS ?= -mode history -local-links -redis-links 0 -latency-intervals 1
bench-articles: services pwbench
	@for i in $$(seq 1 $(BENCH_RUNS)); do $(PWBENCH) articles -repo . || exit 1; done
	@for i in $$(seq 1 $(ARTICLES_PAIRS)); do \
		if [ $$((i % 2)) = 1 ]; then order="off on"; else order="on off"; fi; \
		for arm in $$order; do \
			flag=; [ $$arm = on ] && flag=-articles; \
			echo "pair $$i, articles $$arm" >&2; \
			$(PWBENCH) e2e -repo . $(ARTICLES_FLAGS) $$flag $(BENCH_FLAGS) || exit 1; \
		done; \
	done
