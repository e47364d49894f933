SHELL := /bin/bash
# ILA conformance suite. Main targets:
#   make conformance   build what is missing, boot the guest, run the cases
#   make test          everything CI runs: lib unit tests + conformance
#   make golden CASE=glob   bless golden captures from a run (exit 0: all blessed)
#   make new-case PROTO=tcp|udp|icmpv6 NAME=name [DIR=folder]   a case from the template
#   make list-cases [CASE=glob]   the case ids, with what each verifies
#   make kselftest     the catalog as a kselftest collection (out/kselftest/, out/kselftest.tar.gz)
#   make kselftest-run the collection in our QEMU, no host side, agreeing with make conformance
# Variables: IMPL=all|intree|module,...|external:DIR  NAME=  EXPECT=file  CASE=glob[,glob...]
#            KERNEL=default|debug  KVER=6.1|6.12|6.1.176-1|6.1,6.12  KSRC=/path/to/linux
#            QEMU_ACCEL=tcg|kvm  ILA_CACHE=dir
#   make reliability   the debug kernel: KUnit, fuzzing, load/unload cycles
#   make bench         ILA/plain ratios, translation cost, scale (BENCH_QUICK=1: smoke;
#                      BENCH_ONLY='veth udp-pps*,...' BENCH_ROUNDS=n: a focused run, no scale)
#   make bench-doc     BENCH.md's figures and BENCH.svg from the last make bench
#   make bench-profile perf in the guest: where a plain and an ILA flow spend their time
.DEFAULT_GOAL := conformance

IMPL       ?= all
CASE       ?= *
QEMU_ACCEL ?= tcg
PY         := /usr/bin/python3
KERNEL     ?= default
# KVER: Debian's kernel source, a series (its installed linux-source package)
# or one release (downloaded into the cache, not installed); several, comma
# separated, run make conformance once per kernel and merge the results.
# KSRC: any kernel tree instead (never written to). A kernel other than the
# default gets its own output directory.
KVER       ?= 6.1
KSRC       ?=
comma      := ,
KVERS      := $(subst $(comma), ,$(KVER))
KSERIES    := $(shell echo '$(KVER)' | cut -d. -f1,2)
# out_of,KVER: the output directory of one kernel's default flavour
out_of      = out$(if $(filter-out 6.1,$(1)),/kver-$(1))
BASE_OUT   := $(if $(KSRC),out/ksrc-$(notdir $(abspath $(KSRC))),$(call out_of,$(KVER)))
ifeq ($(KERNEL),default)
FRAGMENTS  := $(CURDIR)/kernel/config/base.config
OUT        := $(BASE_OUT)
else ifeq ($(KERNEL),debug)
FRAGMENTS  := $(CURDIR)/kernel/config/base.config $(CURDIR)/kernel/config/debug.config
OUT        := $(BASE_OUT)/debug
else
$(error KERNEL=$(KERNEL): use KERNEL=default or KERNEL=debug)
endif
KBUILD     := KVER='$(KVER)' KSRC='$(KSRC)' KERNEL_FRAGMENTS='$(FRAGMENTS)' kernel/build-kernel.sh
KBUILD_MODULE := kernel/build-module.sh
# The O= build directory of the cached kernel (outside the repository).
KDIR        = $(shell $(KBUILD) --dir)
# "LABEL VERSION" of the kernel (6.12 6.12.118-1~deb12u1), for the results
KDESC       = $(shell $(KBUILD) --describe)
CFLAGS_GUEST := -static -O2 -Wall -Wextra -Werror -std=gnu11
CFLAGS_HOST  := -O2 -g -Wall -Wextra -Werror -std=gnu11 -fsanitize=address,undefined
LIB_SRC    := lib/csum.c lib/addr.c lib/pkt.c lib/nl.c lib/verbs.c lib/send.c lib/rxtap.c \
	      lib/leftovers.c
LIB_HDR    := $(LIB_SRC:.c=.h)
RUN        := PYTHONPATH=conformance $(PY) -m ilaconf

.PHONY: lava lava-up lava-down lava-artifacts lava-mutants lava-smoke patch-series leave-one-out leave-one-out-run kselftest kselftest-run kselftest-mutants bench bench-doc bench-profile deps fuzz mutation mutation-detectors kernel module intree-patched intree-old externals guest initramfs lib-test conformance golden test test-steps matrix clean new-case \
	reliability reliability-run

# Every target that compiles or runs something depends on deps, so that
# each of them works alone on a machine with nothing but make. File targets
# take it order-only (after the |): it runs first but never forces a rebuild.
deps:
	@scripts/deps.sh $(if $(KSRC)$(findstring -,$(KVER))$(findstring $(comma),$(KVER)),,linux-source-$(KSERIES)) \
		$(if $(findstring $(comma),$(KVER)),$(foreach k,$(KVERS),$(if $(findstring -,$(k)),,linux-source-$(k))))

kernel: deps
	@$(KBUILD)

# Copied into out/ so that kbuild never writes into the source directory.
# The second build is make bench's floor column: ours with the translation
# compiled out (CONFIG_ILA_REF_BENCH_FLOOR), built here so that it cannot rot.
module: kernel
	@ko=$$($(KBUILD_MODULE) $(KDIR) kernel/ila $(OUT)/build/ila_ref) && echo "module: built" $$ko
	@KCFLAGS=-DCONFIG_ILA_REF_BENCH_FLOOR=1 $(KBUILD_MODULE) $(KDIR) kernel/ila \
		$(OUT)/build/ila_ref_floor >/dev/null && echo "module: built the floor variant"

# The fix series (kernel/patches/net/, net-next/) in order, without LEAVE_OUT=
# (net/0002,...: a leave-one-out build); the runner's deviations follow it.
export ILA_LEAVE_OUT := $(LEAVE_OUT)

# The in-tree module with kernel/patches/ applied, for the intree+patches column.
intree-patched: kernel
	@series=$$(kernel/series.sh) && ko=$$($(KBUILD_MODULE) $(KDIR) $(KDIR)/source/net/ipv6/ila \
		$(OUT)/build/intree-patched/net/ipv6/ila \
		--patch-root $(OUT)/build/intree-patched $$series) && \
		echo "intree-patched: built $$ko"

# A released in-tree module from before the CVE-2026-68127 fix, for a column
# of its own (intree-$(INTREE_OLD)): only its net/ipv6/ila is fetched, then
# built against the cached kernel exactly as intree-patched is, with
# kernel/patches/ applied, so that the CVE is the one bug it has beyond
# intree+patches. Only on 6.1 kernels, whose module it is;
# impls.PREFIX_RELEASE names the same release.
INTREE_OLD := 6.1.176-1
OLD_DIR    := $(OUT)/build/intree-$(INTREE_OLD)
OLD_KO     := $(OLD_DIR)/net/ipv6/ila/ila.ko
intree-old: kernel
ifeq ($(KSERIES)$(KSRC),6.1)
	@series=$$(kernel/series.sh) && src=$$(kernel/fetch-ila.sh $(INTREE_OLD)) && \
		ko=$$($(KBUILD_MODULE) $(KDIR) $$src $(OLD_DIR)/net/ipv6/ila --patch-root $(OLD_DIR) \
			$$series) && \
		echo "intree-old: built $$ko"
else
	@rm -rf $(OLD_DIR)
	@echo "intree-old: the intree-$(INTREE_OLD) column is a 6.1 module: not built for this kernel"
endif

$(OUT)/guest/init: guest-init/init.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/init.c $(LIB_SRC)

$(OUT)/guest/ila-inject: guest-init/inject.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/inject.c $(LIB_SRC)

$(OUT)/guest/ila-nl: guest-init/ila-nl.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/ila-nl.c $(LIB_SRC)

$(OUT)/guest/ila-fuzz: guest-init/ila-fuzz.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/ila-fuzz.c $(LIB_SRC)

$(OUT)/guest/ila-rx: guest-init/ila-rx.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/ila-rx.c $(LIB_SRC)

$(OUT)/guest/ila-sock: guest-init/ila-sock.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ $<

$(OUT)/guest/ila-map: guest-init/ila-map.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ guest-init/ila-map.c $(LIB_SRC)

$(OUT)/guest/ila-relay: guest-init/ila-relay.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ $<

$(OUT)/guest/ila-churn: guest-init/ila-churn.c lib/addr.c lib/addr.h | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -pthread -o $@ guest-init/ila-churn.c lib/addr.c

$(OUT)/guest/ila-bench: guest-init/ila-bench.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GUEST) -o $@ $<

guest: deps $(OUT)/guest/init $(OUT)/guest/ila-inject $(OUT)/guest/ila-nl $(OUT)/guest/ila-fuzz \
	$(OUT)/guest/ila-bench $(OUT)/guest/ila-rx $(OUT)/guest/ila-relay $(OUT)/guest/ila-map \
	$(OUT)/guest/ila-sock $(OUT)/guest/ila-churn

# External implementations named in IMPL (external:DIR), see README.md.
externals: kernel
	@kernel/build-externals.sh $(KDIR) $(OUT)/build/external '$(IMPL)' '$(NAME)'

INITRAMFS_FILES = $(KDIR)/usr/gen_init_cpio \
	$(OUT)/guest/init $(OUT)/guest/ila-inject $(OUT)/guest/ila-nl \
	$(OUT)/guest/ila-fuzz $(OUT)/guest/ila-bench $(OUT)/guest/ila-rx $(OUT)/guest/ila-relay $(OUT)/guest/ila-map $(OUT)/guest/ila-sock $(OUT)/guest/ila-churn $(wildcard $(OUT)/build/ila_ref/*.ko) $(KDIR)/net/ipv6/ila/ila.ko \
	/usr/sbin/nft \
	patched=$(OUT)/build/intree-patched/net/ipv6/ila/ila.ko \
	floor=$(OUT)/build/ila_ref_floor/ila_ref.ko \
	$$(test -f $(OLD_KO) && echo intree-$(INTREE_OLD)=$(OLD_KO)) \
	$$(awk '{ print "ext=$(OUT)/build/external/" $$1 ".ko" }' $(OUT)/build/external/list)

initramfs: module intree-patched intree-old externals guest
	@guest-init/mkinitramfs.sh $(OUT)/initramfs.cpio.gz $(INITRAMFS_FILES)

$(OUT)/lib-tests: lib/tests/test_lib.c $(LIB_SRC) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_HOST) -o $@ lib/tests/test_lib.c $(LIB_SRC)

lib-test: $(OUT)/lib-tests
	@$(OUT)/lib-tests | tee $(OUT)/lib-tests.ktap; test $${PIPESTATUS[0]} -eq 0

# The pre-fix in-tree columns exist only where make intree-old built their module.
NO_OLD = $(if $(wildcard $(OLD_KO)),,--no-column intree-$(INTREE_OLD) --no-column intree-$(INTREE_OLD)-map)
# The guest, the columns (IMPL=, EXPECT=) and the kernel, for run and fuzz.
COLUMN_ARGS = --kernel $(KDIR)/arch/x86/boot/bzImage --initrd $(OUT)/initramfs.cpio.gz \
	--impl '$(IMPL)' --accel $(QEMU_ACCEL) --out $(OUT) \
	--externals $(OUT)/build/external/list --expect '$(EXPECT)' \
	--kernel-label '$(word 1,$(KDESC))' --kernel-version '$(word 2,$(KDESC))' \
	--fixed '$(shell $(KBUILD) --fixed)' $(NO_OLD)
# JOBS guests run a run's columns side by side (default: one per CPU; TCG
# runs each guest on one host thread, and the guest is where a case's time
# goes). The reports are the same whatever JOBS is.
JOBS ?= $(shell nproc)
RUN_ARGS = $(COLUMN_ARGS) --case '$(CASE)' --jobs $(JOBS) $(if $(filter debug,$(KERNEL)),--detectors)

ifneq ($(words $(KVERS)),1)
# Several kernels: each one's run in its own output directory, then one
# report over all (out/kernels/results.{ktap,json,junit.xml}), with the
# cases whose result differs between kernels listed as findings.
conformance:
	@rc=0; for k in $(KVERS); do \
		$(MAKE) --no-print-directory conformance KVER=$$k || rc=1; done; \
	$(RUN) merge --out out/kernels $(foreach k,$(KVERS),$(call out_of,$(k))/results.json) || rc=1; \
	exit $$rc
else
conformance: initramfs
	@$(RUN) run $(RUN_ARGS)
endif

# Each patch of kernel/patches/ earns its place: for each (PATCHES=net/0002,...
# for some), the in-tree module built without it and judged as if it held
# the whole series, on its own cases and a few of every other patch's, must
# fail exactly its own (conformance/ilaconf/leave_one_out.py). One output
# directory per patch under $(OUT)/leave-one-out/; the verdicts in
# $(OUT)/leave-one-out/leave-one-out.ktap.
LOO := $(OUT)/leave-one-out
leave-one-out: deps
	@mkdir -p $(LOO); names=; for p in $$(ILA_LEAVE_OUT=$(PATCHES) kernel/series.sh --only); do \
		n=$$(basename $$p); d=$$(basename $$(dirname $$p))-$${n:0:4}; names="$$names --patch $$n"; \
		cases=$$($(RUN) leave-one-out-cases --patch $$n --kernel-version '$(word 2,$(KDESC))' \
			--fixed '$(shell $(KBUILD) --fixed)') || exit 1; \
		echo "leave-one-out: $$n, $$(echo $$cases | tr , '\n' | wc -l) cases"; \
		$(MAKE) --no-print-directory initramfs OUT=$(LOO)/$$d LEAVE_OUT=$$n >/dev/null || exit 1; \
		$(MAKE) --no-print-directory leave-one-out-run OUT=$(LOO)/$$d LEAVE_OUT= \
			IMPL=intree+patches,intree+patches-map CASE="$$cases" >$(LOO)/$$d.log 2>&1; \
		echo "leave-one-out: $$n: $$(grep -E "^[0-9]+ passed" $(LOO)/$$d.log | tail -n 1)"; \
	done; \
	$(RUN) leave-one-out-check $$names --out $(LOO) --kernel-label '$(word 1,$(KDESC))' \
		--kernel-version '$(word 2,$(KDESC))' --fixed '$(shell $(KBUILD) --fixed)'

# Each series of kernel/patches/ as it would be mailed, in out/patches/<series>/:
# the fixes, the selftest generated from the catalog for the cases they fix,
# the cover letter, checkpatch.pl --strict's report (README "Sending the
# fixes upstream"). Against the 6.12 source, whatever KVER= says.
patch-series: deps
	@$(MAKE) --no-print-directory kernel KVER=6.12 >/dev/null
	@$(RUN) patch-series --ksrc $$(KVER=6.12 kernel/build-kernel.sh --source) --out out/patches \
		--kernel-version "$$(KVER=6.12 kernel/build-kernel.sh --describe | cut -d' ' -f2)"

leave-one-out-run:
	@$(RUN) run $(RUN_ARGS)

# Differential fuzzing: N random packets (default 10,000) over random ILA
# routes from SEED, against every column of IMPL=, judged by the oracle;
# results in $(OUT)/fuzz/, findings minimized into $(OUT)/fuzz/cases/.
fuzz: initramfs
	@$(RUN) fuzz $(COLUMN_ARGS) $(if $(SEED),--seed $(SEED)) $(if $(N),--count $(N))

# Mutation testing of our module: every mutant of kernel/ila/*.c and every
# broken copy in conformance/strength/broken/, built, then the catalog
# against each in one boot (stopping at its first failing case); the score,
# the survivors and conformance/strength/equivalent-mutants.toml's entries
# in $(OUT)/mutation/.
# The survivors then get a second chance on the debug kernel: their KUnit
# tests (mutants of xlat.c), a few cases, kmemleak and the serial log.
# MUTANTS=glob[,glob...] picks mutants by id (MUTANTS='icmp.c:*,xlat.c:ila_ref_xlat:*').
# MUTATION_JOBS guests run side by side (default: one per CPU; TCG is one
# thread per guest).
MUTATION := $(OUT)/mutation
MUTATION_JOBS ?= $(shell nproc)
MUTATION_RUN = $(RUN) mutation-run --kernel $(KDIR)/arch/x86/boot/bzImage \
	--initrd $(MUTATION)/initramfs.cpio.gz --manifest $(MUTATION)/mutants.json --out $(OUT) \
	--accel $(QEMU_ACCEL) --kernel-label '$(word 1,$(KDESC))' --kernel-version '$(word 2,$(KDESC))' \
	--fixed '$(shell $(KBUILD) --fixed)' --jobs $(MUTATION_JOBS)
mutation: initramfs
	@$(if $(LAVA),test ! -f $(MUTATION)/fates.json || cp $(MUTATION)/fates.json $(OUT)/mutation-direct-fates.json)
	@$(RUN) mutation-build --kdir $(KDIR) --src kernel/ila --out $(MUTATION) --mutants '$(MUTANTS)'
	@guest-init/mkinitramfs.sh $(MUTATION)/initramfs.cpio.gz $(INITRAMFS_FILES) $$(cat $(MUTATION)/mutants.kos)
	@$(if $(LAVA),$(MAKE) --no-print-directory lava-mutants,$(MUTATION_RUN) --case '$(CASE)' || \
		$(MAKE) --no-print-directory KERNEL=debug mutation-detectors PHASE1=$(abspath $(MUTATION)))

mutation-detectors: initramfs
	@test -n '$(PHASE1)' || { echo "mutation-detectors: make mutation runs it"; exit 2; }
	@$(RUN) mutation-build --kdir $(KDIR) --src kernel/ila --out $(MUTATION) \
		--only $(PHASE1)/fates.json --kunit
	@guest-init/mkinitramfs.sh $(MUTATION)/initramfs.cpio.gz $(INITRAMFS_FILES) $$(cat $(MUTATION)/mutants.kos)
	@$(MUTATION_RUN) --debug --phase1 $(PHASE1)

golden: initramfs
	@test '$(CASE)' != '*' || { echo "golden: name the cases to bless: make golden CASE=tcp/output-syn"; exit 2; }
	@$(RUN) run $(RUN_ARGS) --bless

# Everything CI runs, each step to the end, then one summary line over all:
# the lib unit tests, the conformance cases on both Debian kernels (6.1 and
# 6.12: the same golden captures judge both), the kselftest collection on
# each, agreeing with them case by case, a small fuzz against every
# column (6.1), the reliability suite on the
# 6.1 debug kernel, and the JUnit file read back by junitparser. Stale
# results are removed first: a step that cannot run counts as a failure in
# the summary, never as an old pass. KVER= or KSRC= on the command line
# narrows the conformance step to that kernel.
# linux-source-6.12 is in bookworm-security only: without it, 6.12 is a
# reported skip in the summary, not a failure. Whether apt offers it is
# asked by a second make, after deps: on a new machine the package lists
# are empty until deps runs apt-get update.
# A small fuzz (a fixed seed, a few hundred packets per column), so that
# the tool cannot rot; make fuzz alone runs 10,000.
TEST_FUZZ  := 300
TEST_SEED  := 20261204
HAVE_612   := $(shell apt-cache show linux-source-6.12 >/dev/null 2>&1 && echo yes)
TEST_KVER  := $(if $(KSRC),$(KVER),$(if $(filter command line,$(origin KVER)),$(KVER),6.1$(if $(HAVE_612),$(comma)6.12)))
TEST_OUT   := $(if $(findstring $(comma),$(TEST_KVER)),out/kernels,$(BASE_OUT))
TEST_SKIPS := $(if $(KSRC)$(filter command line,$(origin KVER))$(HAVE_612),,$(BASE_OUT)/skip-6.12.ktap)
# The kselftest collection on each kernel, agreeing with that kernel's
# conformance run; the kernel trees' runners over a few cases only.
TEST_KVERS := $(subst $(comma), ,$(TEST_KVER))
TEST_AGREEMENT := $(if $(KSRC),$(BASE_OUT)/kselftest-run/agreement.ktap,\
	$(foreach k,$(TEST_KVERS),$(call out_of,$(k))/kselftest-run/agreement.ktap))
TEST_RUNNER_CASE := addr/*,control/iproute2-*,udp/input-port-unreachable*
# The LAVA smoke, on the first kernel: one job on a local lab, started and
# stopped around it.
TEST_LAVA_OUT := $(if $(KSRC),$(BASE_OUT),$(call out_of,$(firstword $(TEST_KVERS))))
TEST_LAVA := $(TEST_LAVA_OUT)/lava-smoke/agreement.ktap $(TEST_LAVA_OUT)/lava-smoke-panic/agreement.ktap
test: deps
	@$(MAKE) --no-print-directory test-steps

test-steps:
	@rm -f $(OUT)/lib-tests.ktap $(TEST_OUT)/results.ktap $(TEST_OUT)/junit-check.ktap \
		$(BASE_OUT)/fuzz/fuzz.ktap $(BASE_OUT)/debug/reliability.ktap $(TEST_AGREEMENT) $(TEST_LAVA)
	@rc=0; times=; \
	step() { local s=$$(date +%s) what=$$1; shift; "$$@" || rc=1; \
		times="$$times# make test: $$(( $$(date +%s) - s )) s for $$what\n"; }; \
	step lib-test $(MAKE) --no-print-directory lib-test; \
	$(if $(TEST_SKIPS),$(RUN) skip --out $(BASE_OUT) --name skip-6.12 --what 6.12/conformance \
		--why "linux-source-6.12 is not in this machine's apt sources (it is in bookworm-security)";) \
	step "conformance $(TEST_KVER)" $(MAKE) --no-print-directory conformance KVER=$(TEST_KVER); \
	$(foreach k,$(TEST_KVERS),step "kselftest-run $(k)" $(MAKE) --no-print-directory \
		kselftest-run KVER=$(k) KS_RUNNER_CASE='$(TEST_RUNNER_CASE)';) \
	step lava-smoke $(MAKE) --no-print-directory lava-smoke KVER=$(firstword $(TEST_KVERS)); \
	step fuzz $(MAKE) --no-print-directory fuzz N=$(TEST_FUZZ) SEED=$(TEST_SEED); \
	step reliability $(MAKE) --no-print-directory reliability; \
	step junit-check env $(RUN) junit-check $(TEST_OUT)/results.junit.xml $(TEST_OUT)/results.ktap \
		--out $(TEST_OUT); \
	printf "$$times"; \
	echo "# make test: lib unit tests, conformance cases, reliability and the JUnit check:"; \
	$(RUN) summary $(OUT)/lib-tests.ktap $(TEST_OUT)/results.ktap $(BASE_OUT)/fuzz/fuzz.ktap \
		$(BASE_OUT)/debug/reliability.ktap $(TEST_OUT)/junit-check.ktap $(TEST_SKIPS) \
		$(TEST_AGREEMENT) $(TEST_LAVA) || rc=1; \
	exit $$rc

clean:
	rm -rf $(OUT)

# The case ids CASE= can name (CASE= filters: comma-separated globs).
list-cases: deps
	@$(RUN) list-cases --case '$(CASE)'

# A new case file from conformance/templates/case.toml (DIR= for another folder).
new-case: deps
	@$(RUN) new-case --proto '$(PROTO)' --name '$(NAME)' $(if $(DIR),--dir '$(DIR)')

# The reliability suite on the debug kernel, with its own "N passed, N failed".
reliability: deps
	@$(MAKE) --no-print-directory KERNEL=debug reliability-run

reliability-run: initramfs
	@$(RUN) reliability --kernel $(KDIR)/arch/x86/boot/bzImage --initrd $(OUT)/initramfs.cpio.gz \
		--accel $(QEMU_ACCEL) --out $(OUT) $(if $(SEED),--seed $(SEED)) \
		--kernel-label '$(word 1,$(KDESC))' --kernel-version '$(word 2,$(KDESC))' \
		$(NO_OLD)

# The catalog as a kselftest collection (kselftest/, README "kselftest"):
# out/kselftest/ (drop it into tools/testing/selftests/net/ila/) and
# out/kselftest.tar.gz (kselftest_install.sh's layout, the kernel tree's
# install rule), generated from the case files and pcaps/.
kselftest: kernel
	@$(RUN) kselftest --out $(OUT) --ksrc $(KDIR)/source --kconfig $(KDIR)/.config \
		--fixed '$(shell $(KBUILD) --fixed)'

# The collection booted in our QEMU with nothing on the host but the serial
# console: every column of IMPL=, then each Debian kernel tree's own runner
# (run_kselftest.sh -c net/ila); the verdicts checked against the last make
# conformance of this kernel ($(OUT)/results.json), in
# $(OUT)/kselftest-run/agreement.ktap.
KS_RUNNER_CASE ?= *
KS_RUNNERS = $(foreach s,6.1 6.12,$(if $(wildcard $(shell KVER=$(s) kernel/build-kernel.sh --source)/tools/testing/selftests/run_kselftest.sh),--runner $(s)=$(shell KVER=$(s) kernel/build-kernel.sh --source)/tools/testing/selftests))
kselftest-run: kselftest initramfs
	@PYTHONPATH=conformance $(PY) -m ilaconf.kselftest.run --kernel $(KDIR)/arch/x86/boot/bzImage \
		--kconfig $(KDIR)/.config --initrd $(OUT)/initramfs.cpio.gz --gen-init-cpio $(KDIR)/usr/gen_init_cpio \
		--tarball $(OUT)/kselftest.tar.gz --bundle $(OUT)/kselftest/bundle \
		--out $(OUT)/kselftest-run --impl '$(IMPL)' $(NO_OLD:--no-column=--no-column) \
		$(KS_RUNNERS) --conformance $(OUT)/results.json --accel $(QEMU_ACCEL) --case '$(CASE)' \
		--runner-case '$(KS_RUNNER_CASE)' \
		--kernel-label '$(word 1,$(KDESC))' --kernel-version '$(word 2,$(KDESC))'

# The mutants the last make mutation built (MUTANTS=...) judged by the
# kselftest collection instead of the harness, each stopping at its first
# failure, against the kills of that run's catalog phase ($(MUTATION)/fates.json).
kselftest-mutants: kselftest initramfs
	@test -f $(MUTATION)/fates.json || { echo "kselftest-mutants: run make mutation" \
		"MUTANTS=... first: it builds the mutants and records their kills"; exit 2; }
	@PYTHONPATH=conformance $(PY) -m ilaconf.kselftest.run --kernel $(KDIR)/arch/x86/boot/bzImage \
		--kconfig $(KDIR)/.config --initrd $(MUTATION)/initramfs.cpio.gz --gen-init-cpio $(KDIR)/usr/gen_init_cpio \
		--tarball $(OUT)/kselftest.tar.gz --bundle $(OUT)/kselftest/bundle \
		--out $(OUT)/kselftest-mutants --mutants $(MUTATION)/mutants.json \
		--fates $(MUTATION)/fates.json --accel $(QEMU_ACCEL) --case '$(CASE)' \
		--kernel-label '$(word 1,$(KDESC))' --kernel-version '$(word 2,$(KDESC))'

# LAVA (lava/, README "LAVA"): a local lab, the matrix as LAVA jobs.
# lava-up installs and starts a server and one worker with LAVA_DEVICES
# QEMU devices, its state in LAVA_HOME; lava-down stops what it started.
LAVA_HOME ?= /var/lib/ila-conformance-lava
export LAVA_HOME LAVA_DEVICES LAVA_PORT
lava-up:
	@scripts/lava-lab.sh up
lava-down:
	@scripts/lava-lab.sh down

# One kernel's artifacts: its bzImage and one initramfs for every column of
# IMPL= (LAVA_MUTANTS=1: every mutant of the last make mutation).
lava-artifacts: kselftest initramfs
	@PYTHONPATH=conformance $(PY) -m ilaconf.lava.artifacts --kernel $(KDIR)/arch/x86/boot/bzImage \
		--kconfig $(KDIR)/.config --gen-init-cpio $(KDIR)/usr/gen_init_cpio \
		--tarball $(OUT)/kselftest.tar.gz --bundle $(OUT)/kselftest/bundle \
		--impl '$(IMPL)' $(NO_OLD:--no-column=--no-column) --case '$(CASE)' \
		$(if $(LAVA_MUTANTS),--initrd $(MUTATION)/initramfs.cpio.gz --out $(MUTATION)/lava \
			--mutants $(MUTATION)/mutants.json --fates $(OUT)/mutation-direct-fates.json,\
			--initrd $(OUT)/initramfs.cpio.gz --out $(OUT)/lava --conformance $(OUT)/results.json) \
		--kernel-label '$(word 1,$(KDESC))' --kernel-version '$(word 2,$(KDESC))'

# Every (kernel, column) of KVER= and IMPL= as a LAVA job, on the local lab
# (started if need be) or on LAVA_URL= with LAVA_TOKEN= (artifacts served
# from LAVA_SERVE=HOST:PORT as LAVA_ARTIFACTS=http://...); TAP parsed on
# the host, verdicts checked against each kernel's last make conformance;
# out/lava/results.{ktap,json,junit.xml} and agreement.*.
LAVA_RUN = PYTHONPATH=conformance $(PY) -m ilaconf.lava.run $(if $(LAVA_URL),--url '$(LAVA_URL)' \
	--token '$(LAVA_TOKEN)',--local $(LAVA_HOME)) $(if $(LAVA_SERVE),--serve '$(LAVA_SERVE)') \
	$(if $(LAVA_ARTIFACTS),--artifacts '$(LAVA_ARTIFACTS)') $(if $(LAVA_CPUS),--cpus $(LAVA_CPUS)) \
	$(if $(LAVA_APPEND),--append '$(LAVA_APPEND)')
LAVA_OUT ?= out/lava
lava: deps
	@scripts/deps.sh python3-yaml
	@for k in $(KVERS); do $(MAKE) --no-print-directory lava-artifacts KVER=$$k || exit 1; done
	@$(if $(LAVA_URL),,scripts/lava-lab.sh up)
	@$(LAVA_RUN) --out $(LAVA_OUT) $(foreach k,$(KVERS),--set $(call out_of,$(k))/lava)

# make mutation LAVA=1's catalog phase: the mutants make mutation built, in
# batches, each batch a LAVA job running the kselftest collection until its
# first failure; each mutant's fate checked against the last direct run's
# catalog phase (kept as $(OUT)/mutation-direct-fates.json).
lava-mutants: deps
	@scripts/deps.sh python3-yaml
	@$(MAKE) --no-print-directory lava-artifacts LAVA_MUTANTS=1
	@$(if $(LAVA_URL),,scripts/lava-lab.sh up)
	@$(LAVA_RUN) --out $(OUT)/lava-mutation --set $(MUTATION)/lava

# make test's LAVA smoke: the local lab up; one job (ours, the addr/
# cases) whose verdicts must be this kernel's conformance run's, and one
# whose guest's kernel is made to die (init exits at once), which must be
# reported as such; the lab down again.
LAVA_SMOKE_CASE := addr/*
lava-smoke: deps
	@rc=0; scripts/lava-lab.sh up && $(MAKE) --no-print-directory lava IMPL=module \
		CASE='$(LAVA_SMOKE_CASE)' LAVA_OUT=$(OUT)/lava-smoke || rc=1; \
	$(LAVA_RUN) --out $(OUT)/lava-smoke-panic --set $(OUT)/lava \
		--append rdinit=/bin/false --expect-panic || rc=1; \
	scripts/lava-lab.sh down || rc=1; exit $$rc

# A benchmark, not a test: make test only builds what it needs (initramfs).
bench: initramfs
	@scripts/deps.sh gnuplot-nox
	@$(RUN) bench --kernel $(KDIR)/arch/x86/boot/bzImage --initrd $(OUT)/initramfs.cpio.gz \
		--accel $(QEMU_ACCEL) --out $(OUT) $(if $(BENCH_QUICK),--quick) \
		$(if $(BENCH_ONLY),--only '$(BENCH_ONLY)') $(if $(BENCH_ROUNDS),--rounds $(BENCH_ROUNDS)) \
		--impl '$(IMPL)' --externals $(OUT)/build/external/list

# Where the time goes: perf (the host's, with its libraries) in the guest.
bench-profile: initramfs
	@scripts/deps.sh linux-perf
	@guest-init/mkinitramfs.sh $(OUT)/initramfs-perf.cpio.gz $(INITRAMFS_FILES) /usr/bin/perf
	@$(RUN) bench --profile --kernel $(KDIR)/arch/x86/boot/bzImage \
		--initrd $(OUT)/initramfs-perf.cpio.gz --accel $(QEMU_ACCEL) --out $(OUT)

# BENCH.md's figures and BENCH.svg from the last make bench.
bench-doc: deps
	@$(RUN) bench-doc $(OUT)/bench.json BENCH.md

# Regenerate CONFORMANCE.md's results matrix from the last run
# (KVER=6.1,6.12: from the last run over both kernels; RESULTS=FILE: from
# another run's results.json, such as make lava's out/lava/results.json).
matrix: deps
	@PYTHONPATH=conformance $(PY) -m ilaconf.reports.matrix \
		$(or $(RESULTS),$(if $(findstring $(comma),$(KVER)),out/kernels,$(OUT))/results.json) CONFORMANCE.md
