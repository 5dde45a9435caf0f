# gpuledger — one GNU Makefile. `make help` lists the targets.
.DEFAULT_GOAL := all
SHELL := /bin/bash

CC ?= cc
BUILD ?= build
PKGS := libpq libmicrohttpd libcjson yaml-0.1 libcurl libcrypto zlib pangocairo cairo-pdf
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -Wno-format-truncation
ifeq ($(CI),true)
WARN += -Werror
endif
ifdef WERROR
WARN += -Werror
endif
OPT ?= -O2 -g
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -Iinclude $(PKG_CFLAGS) -MMD -MP $(CFLAGS)
LDFLAGS_ALL := $(LDFLAGS)
ifdef SANITIZE
CFLAGS_ALL += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS_ALL += -fsanitize=$(SANITIZE)
endif
LIBS := $(PKG_LIBS) -lpthread -lm

LIB_SRC := $(filter-out src/cli/main.c src/sim/sim_main.c,$(shell find src -name '*.c' | sort))
SQL_FILES := $(sort $(wildcard sql/[0-9][0-9][0-9]_*.sql))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/migrations.o
MAIN_OBJ := $(BUILD)/obj/src/cli/main.o
SIM_MAIN_OBJ := $(BUILD)/obj/src/sim/sim_main.o
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
INTEG_SRC := $(sort $(wildcard tests/integration/test_*.c))
INTEG_BIN := $(INTEG_SRC:tests/integration/%.c=$(BUILD)/tests/integration/%)
HTTP_SRC := $(sort $(wildcard tests/http/test_*.c))
HTTP_BIN := $(HTTP_SRC:tests/http/%.c=$(BUILD)/tests/http/%)
HA_SRC := $(sort $(wildcard tests/ha/test_*.c))
HA_BIN := $(HA_SRC:tests/ha/%.c=$(BUILD)/tests/ha/%)
TESTLIB_SRC := $(sort $(wildcard tests/lib/*.c))
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all deps run reports-sample test test-unit test-integration test-http test-web test-valgrind test-ha test-slurm test-slurm-hook test-abuse bench fuzz clean help check-config-doc
all: $(BUILD)/gpuledger $(BUILD)/gpuledger-sim

help:
	@echo "make            build $(BUILD)/gpuledger"
	@echo "make run        install deps, build, start embedded PostgreSQL, migrate, load demo history, start the fleet simulator, serve on 127.0.0.1:8080"
	@echo "make run SIM=0  the same with the static demo data and no simulator"
	@echo "make test       install deps, build, run unit + integration + http + web (headless Chromium) tests"
	@echo "make reports-sample   a CSV, HTML and PDF report of the current month from the demo data in $(BUILD)/reports-sample/"
	@echo "make bench      run the benchmarks (never part of make test)"
	@echo "make test-abuse slowloris, idle sockets, a flood and heavy requests against the daemon, with figures (~2 min; never part of make test)"
	@echo "make test-ha    several daemons (HA_TRIALS kills), standby reads, failover under load (never part of make test)"
	@echo "make SANITIZE=address,undefined test   the same under ASan/UBSan"
	@echo "make test-valgrind [SUITES=all|integration] [TESTS=\"test_x ...\"]   under valgrind memcheck (never part of make test)"

deps:
	@scripts/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/gen/migrations.c: $(SQL_FILES) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	scripts/embed-sql.sh $@ $(SQL_FILES)

$(BUILD)/obj/gen/migrations.o: $(BUILD)/gen/migrations.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/libgl.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/gpuledger: $(MAIN_OBJ) $(BUILD)/libgl.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# the demo fleet simulator (docs/demo.md)
$(BUILD)/gpuledger-sim: $(SIM_MAIN_OBJ) $(BUILD)/libgl.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libgl.a $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -Isrc -o $@ $< $(TESTLIB_OBJ) $(BUILD)/libgl.a $(LDFLAGS_ALL) $(LIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/integration/%: tests/integration/%.c $(BUILD)/libgl.a $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -Isrc -o $@ $< $(TESTLIB_OBJ) $(BUILD)/libgl.a $(LDFLAGS_ALL) $(LIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/http/%: tests/http/%.c $(BUILD)/libgl.a $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -Isrc -o $@ $< $(TESTLIB_OBJ) $(BUILD)/libgl.a $(LDFLAGS_ALL) $(LIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/ha/%: tests/ha/%.c $(BUILD)/libgl.a $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -Isrc -o $@ $< $(TESTLIB_OBJ) $(BUILD)/libgl.a $(LDFLAGS_ALL) $(LIBS) $(CMOCKA_LIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libgl.a $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -Isrc -o $@ $< $(TESTLIB_OBJ) $(BUILD)/libgl.a $(LDFLAGS_ALL) $(LIBS)

build-tests: $(BUILD)/gpuledger $(BUILD)/gpuledger-sim $(UNIT_BIN) $(INTEG_BIN) $(HTTP_BIN)

# prometheus: promtool and the server the /metrics tests run (test_metrics_ledger).
# The checks run in a sub-make, after deps: this make read PKG_CFLAGS
# before deps installed the -dev packages, so on a new machine it has none.
test: deps
	@$(MAKE) --no-print-directory check-layers check-bench
	@scripts/deps.sh prometheus
	@$(MAKE) --no-print-directory build-tests
	@BUILD=$(BUILD) tests/run.sh all

# the layering rules of docs/ARCHITECTURE.md, and the check itself on planted
# violations; the module renamer on a small tree of its own
.PHONY: check-layers
check-layers:
	@scripts/check-layers.sh
	@tests/scripts/test_check_layers.sh
	@tests/scripts/test_rename_modules.sh

# the benchmarks compile (no link, a few seconds): an API change that breaks
# one fails `make test`, not the next `make bench`
.PHONY: check-bench
check-bench:
	@$(CC) $(filter-out -MMD -MP,$(CFLAGS_ALL)) -Werror -Itests -Isrc -fsyntax-only $(BENCH_SRC)
	@echo "check-bench: the $(words $(BENCH_SRC)) benchmarks compile"

test-unit: $(BUILD)/gpuledger $(UNIT_BIN)
	@BUILD=$(BUILD) tests/run.sh unit

test-integration: $(BUILD)/gpuledger $(INTEG_BIN) $(HTTP_BIN)
	@BUILD=$(BUILD) tests/run.sh integration

# under valgrind memcheck (never part of `make test`): the unit suites (~4
# min); SUITES=integration the real binary the integration and http suites
# run (~45 min), SUITES=all both; TESTS="test_a test_b" picks programs
VALGRIND_SUITES := $(or $(SUITES),unit)
test-valgrind:
	@scripts/deps.sh valgrind
	@$(MAKE) --no-print-directory build-tests
	@VALGRIND=1 TESTS="$(TESTS)" BUILD=$(BUILD) tests/run.sh $(VALGRIND_SUITES)

# SIM=0: the static demo data instead of the simulated fleet (docs/demo.md)
run: deps
	@$(MAKE) --no-print-directory -j$$(nproc) $(BUILD)/gpuledger $(BUILD)/gpuledger-sim
	@SIM=$(SIM) scripts/run.sh

# several daemons, read replicas and failover (docs/scale.md; ~6 min, never part of
# `make test`): failover under load with asynchronous and synchronous replication,
# and the multi-daemon kill test with HA_TRIALS kills (default 20)
HA_TRIALS ?= 20
test-ha: $(BUILD)/gpuledger $(BUILD)/tests/http/test_ha_leases $(BUILD)/tests/http/test_ha_replica $(HA_BIN)
	@GL_HA_TRIALS=$(HA_TRIALS) BUILD=$(BUILD) tests/run.sh ha

# end to end against a real Slurm 22.05 (root, ~5 min; never part of `make test`)
test-slurm: $(BUILD)/gpuledger
	@BUILD=$(BUILD) tests/slurm/run.sh && BUILD=$(BUILD) tests/slurm/hook.sh

# only the idle-hook part of test-slurm (a real idle job cancelled by the hook, ~4 min)
test-slurm-hook: $(BUILD)/gpuledger
	@BUILD=$(BUILD) tests/slurm/hook.sh

# one report of each format for the current month from the demo data, in
# build/reports-sample/ (not committed: it changes every month)
reports-sample: $(BUILD)/gpuledger
	@scripts/reports-sample.sh $(BUILD)

bench: $(BUILD)/gpuledger $(BENCH_BIN)
	@BUILD=$(BUILD) bench/run.sh

# issue 24's abuse scenarios on loopback, bounded, with their figures
# (bench/bench_abuse.c; never part of `make test`)
test-abuse: $(BUILD)/gpuledger $(BUILD)/bench/bench_abuse
	@BUILD=$(BUILD) bench/run.sh bench_abuse

FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
fuzz:
	@BUILD=$(BUILD) tests/fuzz/run.sh $(FUZZ_SRC)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
