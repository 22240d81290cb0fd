# Makefile — thin wrapper over CMake/CTest. `make run` and `make test` set up
# a fresh Debian machine themselves (scripts/bootstrap.sh).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 20
CMAKE_FLAGS ?=

.PHONY: all setup build run test test-fast test-asan bench fuzz format lint clean

all: build

setup:
	@scripts/bootstrap.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: setup build
	$(BUILD)/cdsh web

# The normal build runs every test (end-to-end ones included); the sanitizer
# build runs the C tests again under ASan+UBSan.
test: setup build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-asan

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCDSH_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -LE e2e

bench: setup build
	@scripts/run_benchmarks.sh $(BUILD)

fuzz: setup
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCDSH_FUZZ=ON -DCDSH_TESTS=OFF $(CMAKE_FLAGS)
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
