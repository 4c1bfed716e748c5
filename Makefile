# SPDX-License-Identifier: BSD-2-Clause
# SeaCache: the two commands are `make lab` and `make test`; both install
# what is missing (Debian packages) and build first.

BUILD      ?= build
ASAN_BUILD ?= build-asan
GEN        := -G Ninja
LAB_ARGS   ?=
FUZZ_SECONDS ?= 600

.PHONY: all deps deps-kernel build build-asan test test-unit test-kernel \
	lab bench checkpatch fuzz clean help

all: build

help:
	@echo "make lab          run the main job: the core demo on a generated VDI storm"
	@echo "make test         all tests: unit (plain and ASan+UBSan), a short fuzz run, kernel (QEMU guest)"
	@echo "make test-unit    unit tests only (plain and ASan+UBSan)"
	@echo "make test-kernel  kernel tests only"
	@echo "make bench        speed and memory of the core and the CSI codec and transport"
	@echo "make checkpatch   kernel style check of everything compiled into a module"
	@echo "make fuzz         libFuzzer on every CSI decoder, FUZZ_SECONDS (600) per target"
	@echo "make clean        remove build outputs (the kernel cache in /var/cache/seacache stays)"
	@echo "LAB_ARGS='--help' make lab   shows the demo's options"

deps:
	@scripts/install-deps build

deps-kernel:
	@scripts/install-deps kernel

build: deps
	@cmake -S . -B $(BUILD) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) $(GEN) -DCMAKE_BUILD_TYPE=Debug \
		-DSEACACHE_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD)

# The sanitizer run first, the full run (unit + kernel) last: its summary
# is the closing line.
test: deps-kernel build build-asan
	@scripts/install-deps fuzz
	ctest --test-dir $(ASAN_BUILD) --output-on-failure
	ctest --test-dir $(BUILD) --output-on-failure

test-unit: build build-asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure
	ctest --test-dir $(BUILD) --output-on-failure -L unit

test-kernel: deps-kernel build
	ctest --test-dir $(BUILD) --output-on-failure -L kernel

lab: build
	$(BUILD)/tools/core-demo/seacache-core-demo $(LAB_ARGS)

bench: build
	scripts/bench $(BUILD)

checkpatch:
	@scripts/install-deps style
	scripts/checkpatch

fuzz:
	scripts/fuzz --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
