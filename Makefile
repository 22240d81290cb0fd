# Makefile — thin wrapper over CMake/CTest. `make run` and `make test` set up
# a fresh Debian machine themselves (scripts/bootstrap.sh).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
# The unit tier waits about half its time (children, sockets, deadlines), so
# test-fast runs two tests per core: 51 s instead of 60 s on 2 idle cores.
FAST_JOBS  ?= $(shell echo $$(( $$(nproc) * 2 )))
FUZZ_SECONDS ?= 20
CMAKE_FLAGS ?=
# Ninja when installed (bootstrap installs it): a no-op rebuild takes well
# under a second, against ~15 s for the Makefile generator's checks. Only a
# new build directory picks a generator; an existing one keeps its own.
cmake_gen = $(if $(wildcard $(1)/CMakeCache.txt),,$(if $(shell command -v ninja 2>/dev/null),-G Ninja))

.PHONY: all setup build run test test-fast test-asan bench fuzz acp-matrix format lint clean

all: build

setup:
	@scripts/bootstrap.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(call cmake_gen,$(BUILD)) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: setup build
	$(BUILD)/cdsh web

# Test tiers (CTest labels, tests/CMakeLists.txt): unit (fast), slow (deep
# perft, long crash runs, the browser-driven xiangqi panel, the lone-clone
# build), e2e (browsers and real peers through node).
#   make test       every tier in the normal build, then unit+slow again under
#                   ASan+UBSan; prints each run's wall time and slowest tests
#   make test-fast  the unit tier only (no browser, no npm peer)
#   make test-asan  the sanitizer build's unit and slow tiers
# CDSH_TEST_TIMEOUT_SCALE=N multiplies the tests' wait budgets (busy machines);
# CDSH_TEST_SEED=N replays a randomised test.
# Configure again after setup: bootstrap may just have installed
# tests/node_modules, which decides which e2e tests exist.
test: setup build
	@cmake -S . -B $(BUILD) >/dev/null
	@start=$$(date +%s); rc=0; \
	(cd $(BUILD) && ctest --output-on-failure -j $(JOBS) \
	  --output-junit $(abspath $(BUILD))/Testing/ctest-all.xml) || rc=$$?; \
	tests/support/test_report.sh $(BUILD)/Testing/ctest-all.xml $$start \
	  "all tiers ($(BUILD))"; \
	[ $$rc -eq 0 ]
	$(MAKE) --no-print-directory test-asan

test-fast: build
	@start=$$(date +%s); rc=0; \
	(cd $(BUILD) && ctest --output-on-failure -j $(FAST_JOBS) -L '^unit$$' \
	  --output-junit $(abspath $(BUILD))/Testing/ctest-unit.xml) || rc=$$?; \
	tests/support/test_report.sh $(BUILD)/Testing/ctest-unit.xml $$start \
	  "unit tier ($(BUILD))"; \
	[ $$rc -eq 0 ]

test-asan:
	cmake -S . -B $(ASAN_BUILD) $(call cmake_gen,$(ASAN_BUILD)) -DCMAKE_BUILD_TYPE=Debug -DCDSH_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	@start=$$(date +%s); rc=0; \
	(cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -L '^(unit|slow)$$' \
	  --output-junit $(abspath $(ASAN_BUILD))/Testing/ctest-asan.xml) || rc=$$?; \
	tests/support/test_report.sh $(ASAN_BUILD)/Testing/ctest-asan.xml $$start \
	  "unit+slow under ASan+UBSan ($(ASAN_BUILD))"; \
	[ $$rc -eq 0 ]

bench: setup build
	@scripts/run_benchmarks.sh $(BUILD)

# Every real ACP agent against the fake model endpoints (about 40 minutes on
# 2 cores; not part of `make test`), then docs/acp-matrix.md from the results.
acp-matrix: setup build
	CDSH_BIN=$(abspath $(BUILD))/cdsh CDSH_ACP_MATRIX_OUT=$(abspath $(BUILD))/acp-matrix.json \
	  node --test tests/e2e/acp_matrix.test.mjs; rc=$$?; \
	node scripts/acp_matrix_render.mjs docs/acp-matrix.json $(BUILD)/acp-matrix.json -o docs/acp-matrix.md --json docs/acp-matrix.json; \
	exit $$rc

fuzz: setup
	CC=clang cmake -S . -B $(FUZZ_BUILD) $(call cmake_gen,$(FUZZ_BUILD)) -DCMAKE_BUILD_TYPE=Debug -DCDSH_FUZZ=ON -DCDSH_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@scripts/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# cppcheck reads no system headers, so jansson's json_*_foreach macros are
# unknown to it: unknownMacro is suppressed for that reason alone.
lint: build
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --std=c11 -I src --suppress=missingIncludeSystem \
	  --suppress=unknownMacro \
	  $$(git ls-files 'src/*.c')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
