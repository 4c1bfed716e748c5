# SPDX-License-Identifier: BSD-2-Clause
# SeaCache: the two commands are `make lab` and `make test`; both install
# what is missing (Debian packages) and build first.

BUILD      ?= build
ASAN_BUILD ?= build-asan
GEN        := -G Ninja
LAB_ARGS   ?=
FUZZ_SECONDS ?= 600

.PHONY: all deps deps-kernel deps-test build build-asan test test-unit test-kernel test-kernel-debug \
	test-fsal crash-test lab bench bench-fsal bench-kernel bench-fuse bench-storms checkpatch fuzz clean help sim-plots module dkms-source deb

all: build

help:
	@echo "make lab          run the main job: boot, virus-scan and patch storms from 2 hosts x 4 VMs against"
	@echo "                  ganesha.nfsd with FSAL_DEDUP on loopback: Baseline (NFS), the dedup boxes,"
	@echo "                  SeaCache; a report with charts in lab-results/<time>/"
	@echo "make test         all tests: unit (plain and ASan+UBSan), a short fuzz run, kernel (QEMU guest),"
	@echo "                  FSAL (a real ganesha.nfsd with FSAL_VFS and FSAL_DEDUP)"
	@echo "make test-unit    unit tests only (plain and ASan+UBSan)"
	@echo "make test-kernel  kernel tests only"
	@echo "make test-kernel-debug  kernel tests on two debug kernels, KASAN's (with kmemleak) and"
	@echo "                  KCSAN's, both with lockdep and hung-task checks; each built once from"
	@echo "                  Debian's linux-source-6.1 and cached (a first build takes 10 to 30"
	@echo "                  minutes, so make test does not run it); DEBUG_CHECKERS=kcsan: one"
	@echo "make test-fsal    FSAL tests only (ganesha.nfsd in private namespaces, libnfs client)"
	@echo "make crash-test   power cuts on the dedup store: 10000 crash states per seed, CRASH_SEEDS (1..4)"
	@echo "make bench        speed and memory of the core, the CSI codec and transport, the dedup"
	@echo "                  store (dstore-bench), NFS over FSAL_VFS vs FSAL_DEDUP and the CSI"
	@echo "                  service's READ targets (csi-service-bench), the simulator's trace replay beside libCacheSim's"
	@echo "                  seacache.ko against plain NFS in a guest (bench-kernel), seacache-fuse against bindfs (bench-fuse)"
	@echo "make bench-fsal   NFS over FSAL_VFS vs FSAL_DEDUP only (scripts/fsal-bench)"
	@echo "make bench-storms the lab's boot, scan and patch storms, Baseline against SeaCache, $(STORM_ROUNDS)"
	@echo "                  interleaved rounds: median, range and ratio to the Baseline per round"
	@echo "make bench-kernel seacache.ko against the plain NFS mount in a QEMU guest, as ratios"
	@echo "make bench-fuse   seacache-fuse's cached 4 KiB O_DIRECT random reads against bindfs over tmpfs"
	@echo "make sim-plots    seacache-sim on a generated VDI workload: CSV and paper-style PNGs in plots/"
	@echo "make checkpatch   kernel style check of everything compiled into a module"
	@echo "make module       seacache.ko for Debian's 6.1 headers, in $(BUILD)/kmod/seacache/"
	@echo "make dkms-source  seacache.ko's DKMS source tree in /usr/src/seacache-VERSION (as root;"
	@echo "                  then: dkms install seacache/VERSION)"
	@echo "make deb          Debian packages of the build in $(BUILD)/deb: seacache-server, seacache-host,"
	@echo "                  seacache-dkms, seacachectl, seacache-dedupbox (vagrant/ installs them)"
	@echo "make fuzz         libFuzzer on every CSI decoder, FUZZ_SECONDS (600) per target"
	@echo "make clean        remove build outputs (the kernel and Ganesha caches in /var/cache/seacache stay)"
	@echo "LAB_ARGS='--help' make lab   shows the lab's options"

# build: compilers and libraries; ganesha: ganesha.nfsd, libnfs and what
# building FSAL_DEDUP needs (part of every non-sanitizer build).
deps:
	@scripts/install-deps build ganesha

deps-kernel:
	@scripts/install-deps kernel

# Everything a test uses (gnuplot, debootstrap, e2fsprogs, QEMU, clang, ...):
# no test is skipped for a missing tool, and the check system_headers_packaged
# holds the list to every header the build reads.
deps-test:
	@scripts/install-deps test

build: deps
	@cmake -S . -B $(BUILD) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) $(GEN) -DCMAKE_BUILD_TYPE=Debug \
		-DSEACACHE_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD)

# The sanitizer run first, the full run (unit, protocol, kernel, fsal) last:
# its summary is the closing line.
test: deps-test build build-asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure
	ctest --test-dir $(BUILD) --output-on-failure

test-unit: deps-test build build-asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure
	ctest --test-dir $(BUILD) --output-on-failure -L unit

test-kernel: deps-kernel build
	ctest --test-dir $(BUILD) --output-on-failure -L kernel

# Every kernel test on each debug kernel (scripts/debug-kernel): KASAN's,
# then KCSAN's.  A kernel's path is taken first: a failed build must not
# leave the tests running on Debian's kernel.  The checkers slow the guest.
DEBUG_CHECKERS ?= kasan kcsan
test-kernel-debug: deps-kernel build
	@scripts/install-deps debug-kernel
	@scale=$$(sed -n 's/^SEACACHE_GUEST_TIMEOUT_SCALE_MAX:STRING=//p' $(BUILD)/CMakeCache.txt); \
	for c in $(DEBUG_CHECKERS); do \
		kdir=$$(scripts/debug-kernel --checker $$c) || exit 1; \
		echo "test-kernel-debug: the kernel tests on the $$c kernel"; \
		SEACACHE_GUEST_KERNEL=$$kdir SEACACHE_GUEST_TIMEOUT_SCALE=$$scale \
			ctest --test-dir $(BUILD) --output-on-failure -L kernel || exit 1; \
	done

test-fsal: build
	ctest --test-dir $(BUILD) --output-on-failure -L fsal

# make test runs 700 states: dedup_store_power_cut, its POSIX directory
# model (_posix) and in-batch delta application (_burst).
CRASH_SEEDS ?= 1 2 3 4
crash-test: build
	@for s in $(CRASH_SEEDS); do \
		$(BUILD)/tests/crash/crash_store --seed $$s --states 10000 || exit 1; \
		$(BUILD)/tests/crash/crash_store --seed $$s --states 10000 --posix-dirs || exit 1; \
		$(BUILD)/tests/crash/crash_store_burst --seed $$s --states 10000 || exit 1; \
	done

lab: build
	@scripts/install-deps lab
	scripts/lab --build $(abspath $(BUILD)) $(LAB_ARGS)

bench: build
	scripts/bench $(BUILD)
	tools/sim/sim-bench $(BUILD)
	$(BUILD)/tools/bench/dstore-bench
	scripts/fsal-bench --build $(BUILD)
	$(BUILD)/tools/bench/csi-service-bench
	scripts/bench-kernel --build $(BUILD)
	scripts/bench-fuse --build $(BUILD)
	$(MAKE) bench-storms

# Storm latency against the Baseline (the target: at or below it, so that
# the bytes SeaCache saves are not paid for in a slower storm):
# one lab run is inside the machine's run-to-run spread, so the variants
# run in interleaved rounds and are compared per round.
STORM_ROUNDS ?= 5
bench-storms: build
	@scripts/install-deps lab
	scripts/lab --build $(abspath $(BUILD)) --storms "boot scan patch" \
		--variants "nfs seacache" --rounds $(STORM_ROUNDS) --no-sim $(LAB_ARGS)

bench-fsal: build
	scripts/fsal-bench --build $(BUILD)

bench-kernel: deps-kernel build
	scripts/bench-kernel --build $(BUILD)

bench-fuse: build
	scripts/bench-fuse --build $(BUILD)

sim-plots: build
	@scripts/install-deps sim
	tools/sim/sim-plots $(BUILD) plots

module: deps-kernel
	scripts/kbuild-module client-module $(BUILD)/kmod/seacache

dkms-source:
	scripts/dkms-tree

deb: build
	scripts/make-deb --build $(BUILD)

checkpatch:
	@scripts/install-deps style
	scripts/checkpatch

fuzz:
	scripts/fuzz --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
