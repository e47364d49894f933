SHELL := /bin/bash
# ILA conformance suite. Main targets:
#   make conformance   build what is missing, boot the guest, run the cases
#   make test          everything CI runs: lib unit tests + conformance
#   make golden CASE=glob   bless golden captures from a run
# Variables: IMPL=all|intree|module,...|external:DIR  NAME=  EXPECT=file  CASE=glob
#            KERNEL=default|debug  KVER=6.1|6.12|6.1.176-1  QEMU_ACCEL=tcg|kvm  ILA_CACHE=dir
#   make reliability   the debug kernel: KUnit, fuzzing, load/unload cycles
#   make bench         ILA/plain ratios, translation cost, scale (BENCH_QUICK=1: smoke)
#   make bench-doc     BENCH.md's figures and BENCH.svg from the last make bench
#   make bench-profile perf in the guest: where a plain and an ILA flow spend their time
.DEFAULT_GOAL := conformance

IMPL       ?= all
CASE       ?= *
QEMU_ACCEL ?= tcg
PY         := /usr/bin/python3
KERNEL     ?= default
# KVER: Debian's kernel source, a series (its installed linux-source package)
# or one release (downloaded into the cache, not installed). Another kernel
# than the default gets its own output directory.
KVER       ?= 6.1
KSERIES    := $(shell echo '$(KVER)' | cut -d. -f1,2)
BASE_OUT   := out$(if $(filter-out 6.1,$(KVER)),/kver-$(KVER))
# KERNEL=debug: the same source with KASAN, kmemleak, lockdep and KUnit
# (kernel/config/debug.config), in its own build and output directories.
ifeq ($(KERNEL),default)
FRAGMENTS  := $(CURDIR)/kernel/config/base.config
OUT        := $(BASE_OUT)
else ifeq ($(KERNEL),debug)
FRAGMENTS  := $(CURDIR)/kernel/config/base.config $(CURDIR)/kernel/config/debug.config
OUT        := $(BASE_OUT)/debug
else
$(error KERNEL=$(KERNEL): use KERNEL=default or KERNEL=debug)
endif
KBUILD     := KVER='$(KVER)' KERNEL_FRAGMENTS='$(FRAGMENTS)' kernel/build-kernel.sh
KBUILD_MODULE := kernel/build-module.sh
# The O= build directory of the cached kernel (outside the repository).
KDIR        = $(shell $(KBUILD) --dir)
CFLAGS_GUEST := -static -O2 -Wall -Wextra -Werror -std=gnu11
CFLAGS_HOST  := -O2 -g -Wall -Wextra -Werror -std=gnu11 -fsanitize=address,undefined
LIB_SRC    := lib/csum.c lib/addr.c lib/pkt.c lib/nl.c
LIB_HDR    := $(LIB_SRC:.c=.h)
RUN        := PYTHONPATH=conformance $(PY) -m ilaconf

.PHONY: bench bench-doc bench-profile deps kernel module intree-patched externals guest initramfs lib-test conformance golden test matrix clean \
	reliability reliability-run

# Every target that compiles or runs something depends on deps, so that
# each of them works alone on a machine with nothing but make. File targets
# take it order-only (after the |): it runs first but never forces a rebuild.
deps:
	@scripts/deps.sh $(if $(findstring -,$(KVER)),,linux-source-$(KSERIES))

kernel: deps
	@$(KBUILD)

# Copied into out/ so that kbuild never writes into the source directory.
module: kernel
	@ko=$$($(KBUILD_MODULE) $(KDIR) kernel/ila $(OUT)/build/ila_ref) && echo "module: built" $$ko

# The in-tree module with kernel/patches/ applied, for the intree+patches column.
intree-patched: kernel
	@rm -rf $(OUT)/build/intree-patched && mkdir -p $(OUT)/build/intree-patched/net/ipv6
	@ko=$$($(KBUILD_MODULE) $(KDIR) $(KDIR)/source/net/ipv6/ila \
		$(OUT)/build/intree-patched/net/ipv6/ila \
		--patch-root $(OUT)/build/intree-patched $(sort $(wildcard kernel/patches/*.patch))) && \
		echo "intree-patched: built $$ko"

$(OUT)/guest/init: guest-init/init.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ $<

$(OUT)/guest/ila-inject: guest-init/inject.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/inject.c $(LIB_SRC)

$(OUT)/guest/ila-nl: guest-init/ila-nl.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/ila-nl.c $(LIB_SRC)

$(OUT)/guest/ila-fuzz: guest-init/ila-fuzz.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/ila-fuzz.c $(LIB_SRC)

$(OUT)/guest/ila-bench: guest-init/ila-bench.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ $<

guest: deps $(OUT)/guest/init $(OUT)/guest/ila-inject $(OUT)/guest/ila-nl $(OUT)/guest/ila-fuzz \
	$(OUT)/guest/ila-bench

# External implementations named in IMPL (external:DIR), see README.md.
externals: kernel
	@kernel/build-externals.sh $(KDIR) $(OUT)/build/external '$(IMPL)' '$(NAME)'

INITRAMFS_FILES = $(KDIR)/usr/gen_init_cpio \
	$(OUT)/guest/init $(OUT)/guest/ila-inject $(OUT)/guest/ila-nl \
	$(OUT)/guest/ila-fuzz $(OUT)/guest/ila-bench $(wildcard $(OUT)/build/ila_ref/*.ko) $(KDIR)/net/ipv6/ila/ila.ko \
	patched=$(OUT)/build/intree-patched/net/ipv6/ila/ila.ko \
	$$(awk '{ print "ext=$(OUT)/build/external/" $$1 ".ko" }' $(OUT)/build/external/list)

initramfs: module intree-patched externals guest
	@guest-init/mkinitramfs.sh $(OUT)/initramfs.cpio.gz $(INITRAMFS_FILES)

$(OUT)/lib-tests: lib/tests/test_lib.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_HOST) -o $@ lib/tests/test_lib.c $(LIB_SRC)

lib-test: $(OUT)/lib-tests
	@$(OUT)/lib-tests | tee $(OUT)/lib-tests.ktap; test $${PIPESTATUS[0]} -eq 0

RUN_ARGS = --kernel $(KDIR)/arch/x86/boot/bzImage --initrd $(OUT)/initramfs.cpio.gz \
	--impl '$(IMPL)' --case '$(CASE)' --accel $(QEMU_ACCEL) --out $(OUT) \
	--externals $(OUT)/build/external/list --expect '$(EXPECT)' \
	$(if $(filter debug,$(KERNEL)),--detectors)

conformance: initramfs
	@$(RUN) run $(RUN_ARGS)

golden: initramfs
	@test '$(CASE)' != '*' || { echo "golden: name the cases to bless: make golden CASE=tcp/output-syn"; exit 2; }
	@$(RUN) run $(RUN_ARGS) --bless

# Runs both suites to the end, then one summary line over both.
# Everything CI runs. Stale results are removed first: a step that cannot
# run counts as a failure in the summary, never as an old pass.
test: deps
	@rm -f $(OUT)/lib-tests.ktap $(OUT)/results.ktap $(BASE_OUT)/debug/reliability.ktap
	@rc=0; $(MAKE) --no-print-directory lib-test || rc=1; \
	$(MAKE) --no-print-directory conformance || rc=1; \
	$(MAKE) --no-print-directory reliability || rc=1; \
	echo "# make test: lib unit tests, conformance cases and reliability together:"; \
	$(RUN) summary $(OUT)/lib-tests.ktap $(OUT)/results.ktap $(BASE_OUT)/debug/reliability.ktap || rc=1; \
	exit $$rc

clean:
	rm -rf $(OUT)

# The reliability suite on the debug kernel, with its own "N passed, N failed".
reliability: deps
	@$(MAKE) --no-print-directory KERNEL=debug reliability-run

reliability-run: initramfs
	@$(RUN) reliability --kernel $(KDIR)/arch/x86/boot/bzImage --initrd $(OUT)/initramfs.cpio.gz \
		--accel $(QEMU_ACCEL) --out $(OUT) $(if $(SEED),--seed $(SEED))

# A benchmark, not a test: make test only builds what it needs (initramfs).
bench: initramfs
	@scripts/deps.sh gnuplot-nox
	@$(RUN) bench --kernel $(KDIR)/arch/x86/boot/bzImage --initrd $(OUT)/initramfs.cpio.gz \
		--accel $(QEMU_ACCEL) --out $(OUT) $(if $(BENCH_QUICK),--quick)

# Where the time goes: perf (the host's, with its libraries) in the guest.
bench-profile: initramfs
	@scripts/deps.sh linux-perf
	@guest-init/mkinitramfs.sh $(OUT)/initramfs-perf.cpio.gz $(INITRAMFS_FILES) /usr/bin/perf
	@$(RUN) bench --profile --kernel $(KDIR)/arch/x86/boot/bzImage \
		--initrd $(OUT)/initramfs-perf.cpio.gz --accel $(QEMU_ACCEL) --out $(OUT)

# BENCH.md's figures and BENCH.svg from the last make bench.
bench-doc: deps
	@$(RUN) bench-doc $(OUT)/bench.json BENCH.md

# Regenerate CONFORMANCE.md's results matrix from the last run.
matrix: deps
	@PYTHONPATH=conformance $(PY) -m ilaconf.matrix $(OUT)/results.json CONFORMANCE.md
