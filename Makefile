# gpuflock — one plain Makefile for everything.
#
#   make             build build/bin/{gpuflock,gpuflockd,gpuflock-worker}
#   make check       build and run every test (unit + integration), summary last
#   make unit        build and run the unit tests only
#   make sanitize    the unit tests under ASan + UBSan (separate build tree)
#   make fuzz        libFuzzer targets with clang (build/fuzz/)
#   make gpu-check   GPU tests (skip cleanly without a GPU)
#   make deps        install the Debian packages the project needs (tools/setup-deps)
#   make demo        diarize a made-up two-voice recording, print turns and DER (tools/demo)
#   make lib         build/lib/libgpuflock.so.0 and gpuflock.pc, the C API (docs/api.md)
#   make install-lib install them and api/gpuflock.h under $(DESTDIR)$(PREFIX)
#
# Sources are found by wildcard: a new module is a new .c/.h pair in its
# directory, nothing to register here. Each directory becomes one static
# library; the three programs link the libraries they need.

BUILD    ?= build
CC       ?= gcc
SAN      ?=
# CUDA parts build only where nvcc exists (later stages); see NVCC_FOUND.
NVCC     ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)

PKGS     := libzmq msgpack yaml-0.1 sqlite3 sndfile soxr openblas zlib libcrypto json-c
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wformat=2 -Wvla
CFLAGS   ?= -O2 -g
# Where a worker finds the evidence tables by default: this tree's evidence/
# ($GPUFLOCK_EVIDENCE overrides it at run time; an installed program takes
# the evidence installed beside it instead: route/evidence.c, make install).
EVIDENCE_DEFINE := -DGF_EVIDENCE_DIR='"$(abspath evidence)"'
# Where the voice activity detector's weights are by default: this tree's
# .cache/vad (tools/fetch-vad writes it); an installed program takes the file
# installed beside it instead (diar/vad.c, make install).
VAD_DEFINE := -DGF_VAD_DEFAULT='"$(abspath .cache/vad)/silero_vad.safetensors"'
ALL_CFLAGS := -std=c11 $(CFLAGS) $(WARN) -D_GNU_SOURCE -I. $(PKG_CFLAGS) $(SAN) -MMD -MP $(EVIDENCE_DEFINE) \
              $(VAD_DEFINE)
LDLIBS   := $(PKG_LIBS) -lm -ldl -lpthread
LDFLAGS  ?=
# The broker's metrics endpoint (broker/metrics_serve.c): libmicrohttpd,
# needed only by what links that file (--as-needed).
ALL_CFLAGS += $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
LDLIBS   += -Wl,--as-needed $(shell pkg-config --libs libmicrohttpd 2>/dev/null) -Wl,--no-as-needed

# One static library per folder (docs/architecture.md: the rooms and what each
# may use); main.c files are programs, not library code. Libraries link in
# floor order, highest first and no group: a call down the floors links, and
# tools/check-layout (run by every build) refuses an include of a room that
# a folder may not use, so a wrong-way dependency fails the build.
obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
ROOMS := cli api broker worker qualify diar diar/score diar/cluster diar/io kernels route gpu net common
room_src = $(filter-out $(1)/main.c,$(wildcard $(1)/*.c)) \
           $(if $(filter kernels,$(1)),$(wildcard kernels/*/*.c))
room_lib = $(BUILD)/lib/libgf$(subst /,,$(subst diar/,,$(1))).a
ALL_LIBS := $(foreach r,$(ROOMS),$(call room_lib,$(r)))
$(foreach r,$(ROOMS),$(eval $(call room_lib,$(r)): $(call obj,$(call room_src,$(r)))))
$(call room_lib,gpu): $(BUILD)/obj/gen/ptx_blobs.o
COMMON_SRC := $(call room_src,common)
NET_SRC    := $(call room_src,net)
CLI_SRC    := $(call room_src,cli)
LINK       = $(ALL_LIBS) $(LDLIBS)

BINS := $(BUILD)/bin/gpuflock $(BUILD)/bin/gpuflock-exec $(BUILD)/bin/gpuflock-cli \
        $(BUILD)/bin/gpuflockd $(BUILD)/bin/gpuflock-worker $(BUILD)/bin/gpuflock-guard

UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
GPU_TEST_SRC  := $(wildcard tests/gpu/test_gpu_*.c)
GPU_TEST_BINS := $(patsubst tests/gpu/%.c,$(BUILD)/tests/gpu/%,$(GPU_TEST_SRC)) \
                 $(BUILD)/tests/proof/gpu_proof
BENCH_SRC  := $(wildcard bench/*/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
TEST_HELPERS := $(wildcard tests/helpers/*.c)
TEST_HELPER_BINS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(TEST_HELPERS))

.SECONDARY:
.PHONY: all build check unit sanitize fuzz deps clean gpu-check gpu-proof bench demo lib install-lib uninstall-lib spank FORCE
all: $(BINS) $(UNIT_BINS) $(TEST_HELPER_BINS) $(GPU_TEST_BINS) $(BENCH_BINS) $(BUILD)/evidence.stamp \
     $(BUILD)/layout.stamp lib

# The floors (tools/check-layout), checked again whenever a source changes.
LAYOUT_FILES := $(shell find $(ROOMS) slurm -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' 2>/dev/null)
$(BUILD)/layout.stamp: tools/check-layout $(LAYOUT_FILES)
	tools/check-layout
	@mkdir -p $(dir $@) && touch $@

# The evidence tables are validated after every build that changes them or
# the validator (docs/evidence.md); directories are listed too, so a removed
# file also reruns the check.
EVIDENCE_FILES := $(shell find evidence 2>/dev/null)
$(BUILD)/evidence.stamp: $(BUILD)/bin/gpuflock $(EVIDENCE_FILES)
	$(BUILD)/bin/gpuflock evidence check evidence/
	@touch $@

# The README's commands install what is missing first, then build in a fresh
# make (so pkg-config sees the packages just installed).
deps:
	tools/setup-deps

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^ $(if $^,,$(BUILD)/obj/empty.o)

# An empty object keeps ar happy for a directory with no library code yet.
$(BUILD)/obj/empty.o:
	@mkdir -p $(dir $@)
	echo 'typedef int gf_empty_unit;' | $(CC) -x c -c - -o $@
$(ALL_LIBS): | $(BUILD)/obj/empty.o

# gpuflock is a light front (cli/front/main.c): `exec`, `locks` and the job
# commands on an ipc:// broker run in it (its broker client speaks ZMTP
# itself, net/transport_zmtp.c), as fast as flock(1) and tsp (bench/lock,
# bench/jobs); every other subcommand is exec'd in gpuflock-cli, the full
# command. libyaml and json-c are linked in from their static archives
# (Debian's -dev packages ship them), so the dynamic loader maps the C
# library only. gpuflock-exec is that front against glibc, which can
# dlopen the CUDA driver for `exec` and `locks`.
FRONT_LIBS := -Wl,-Bstatic -lyaml -ljson-c -Wl,-Bdynamic -lm -ldl -lpthread
$(BUILD)/bin/gpuflock-exec: $(call obj,cli/front/main.c) $(ALL_LIBS) | $(BUILD)/bin/gpuflock-cli
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -Wl,--as-needed -o $@ $< $(ALL_LIBS) $(FRONT_LIBS)

# Where musl-gcc is found (Debian: musl-tools) and no sanitizer is on,
# gpuflock is the same front built statically against musl (-DGF_FRONT_STATIC):
# glibc's start-up costs about 0.5 ms of CPU a call on a virtual machine (its
# cpuid probes trap to the hypervisor), musl's 0.02 ms; a submit's whole call
# goes from 1.24 to 0.72 ms (bench/RESULTS.md). It hands `exec` and `locks`
# on CUDA cards to gpuflock-exec. The cli and common sources compile under
# musl but for the five that need libzmq or OpenSSL, which the front never
# links; libyaml and json-c come from Debian's glibc archives, whose fortified
# calls cli/front/fortify.c supplies. Without musl-gcc, gpuflock is
# gpuflock-exec under its own name.
MUSL_CC ?= $(if $(SAN),,$(shell command -v musl-gcc 2>/dev/null))
MUSL_SKIP := common/sha256.c common/par.c
MUSL_NET := $(wildcard net/proto*.c) net/zmtp.c net/transport_zmtp.c
MUSL_SRC := $(filter-out $(MUSL_SKIP),$(CLI_SRC) $(COMMON_SRC)) $(MUSL_NET)
MUSL_OBJ := $(patsubst %.c,$(BUILD)/musl/obj/%.o,$(MUSL_SRC))
MUSL_HEADERS := yaml.h json-c msgpack.h msgpack   # from /usr/include, nothing else of glibc's
LIBYAML_A := $(shell $(CC) -print-file-name=libyaml.a)
LIBJSONC_A := $(shell $(CC) -print-file-name=libjson-c.a)
$(BUILD)/musl/include.stamp:
	@mkdir -p $(BUILD)/musl/include
	for h in $(MUSL_HEADERS); do ln -sfn /usr/include/$$h $(BUILD)/musl/include/$$h; done
	@touch $@
$(BUILD)/musl/obj/%.o: %.c | $(BUILD)/musl/include.stamp
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 $(CFLAGS) $(WARN) -D_GNU_SOURCE -DGF_FRONT_STATIC -I. \
	    -isystem $(BUILD)/musl/include -MMD -MP -c $< -o $@
$(BUILD)/musl/libgffront.a: $(MUSL_OBJ)
	@rm -f $@
	ar rcs $@ $^
ifneq ($(MUSL_CC),)
$(BUILD)/bin/gpuflock: $(BUILD)/musl/obj/cli/front/main.o $(BUILD)/musl/obj/cli/front/fortify.o \
                       $(BUILD)/musl/libgffront.a | $(BUILD)/bin/gpuflock-exec $(BUILD)/bin/gpuflock-cli
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static $(LDFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/musl/libgffront.a \
	    $(LIBYAML_A) $(LIBJSONC_A)
else
$(BUILD)/bin/gpuflock: $(BUILD)/bin/gpuflock-exec
	cp $< $@
endif
$(BUILD)/bin/gpuflock-cli: $(call obj,cli/main.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK)
$(BUILD)/bin/gpuflockd: $(call obj,broker/main.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK)
# The job's group leader: static and C library only, so that starting one
# per job costs little more than its exec (worker/guard/main.c). No
# sanitizers: they do not link statically.
$(BUILD)/bin/gpuflock-guard: worker/guard/main.c worker/guard/request.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -static -o $@ $<
$(BUILD)/bin/gpuflock-worker: $(call obj,worker/main.c) $(ALL_LIBS) | $(BUILD)/bin/gpuflock-guard
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK)

$(BUILD)/tests/%: $(call obj,tests/unit/%.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK) -lcmocka
$(BUILD)/tests/proof/%: $(call obj,tests/proof/%.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK)
$(BUILD)/tests/gpu/%: $(call obj,tests/gpu/%.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK) -lcmocka
# The submit-to-start benchmarks' job: static, C library only (bench/jobs/stamp.c).
$(BUILD)/bench/jobs/stamp: bench/jobs/stamp.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -static -o $@ $<
$(BUILD)/bench/%: $(call obj,bench/%.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK)
$(BUILD)/tests/helpers/%: $(call obj,tests/helpers/%.c) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $< $(LINK)

# The shared library (docs/api.md): api/ and the rooms below it compiled
# again with -fPIC under $(BUILD)/pic, api's objects linked whole and the
# rest from their archives in floor order (what api needs, no more); the
# version script exports the API's names alone, so the gf_* names of the
# archives stay inside. Its soname is libgpuflock.so.0 (GF_DIARIZE_ABI).
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SO_NAME    := libgpuflock.so.0
LIB_ROOMS  := diar diar/score diar/cluster diar/io kernels route gpu common
LIB_PKGS   := sndfile soxr openblas json-c yaml-0.1 libcrypto zlib
LIB_LDLIBS := $(shell pkg-config --libs $(LIB_PKGS) 2>/dev/null) -lm -ldl -lpthread
pic_obj = $(patsubst %.c,$(BUILD)/pic/obj/%.o,$(1))
pic_lib = $(patsubst $(BUILD)/lib/%,$(BUILD)/pic/lib/%,$(call room_lib,$(1)))
PIC_LIBS   := $(foreach r,$(LIB_ROOMS),$(call pic_lib,$(r)))
API_PIC    := $(call pic_obj,$(call room_src,api))
$(foreach r,$(LIB_ROOMS),$(eval $(call pic_lib,$(r)): $(call pic_obj,$(call room_src,$(r)))))
$(call pic_lib,gpu): $(BUILD)/pic/obj/gen/ptx_blobs.o
$(BUILD)/pic/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@
$(BUILD)/pic/obj/gen/ptx_blobs.o: $(BUILD)/gen/ptx_blobs.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@
$(BUILD)/pic/lib/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/lib/$(SO_NAME): $(API_PIC) $(PIC_LIBS) api/libgpuflock.map
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=api/libgpuflock.map \
	    -Wl,--no-undefined -Wl,--as-needed -o $@ $(API_PIC) $(PIC_LIBS) $(LIB_LDLIBS)
$(BUILD)/lib/libgpuflock.so: $(BUILD)/lib/$(SO_NAME)
	ln -sfn $(SO_NAME) $@
# The pkg-config file for PREFIX (rewritten only when PREFIX or the version
# changes, so a later `make install-lib PREFIX=...` gets its own). The
# header includes nothing of the libraries linked in, so they are private.
under_prefix = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
GF_VERSION_STR := $(shell sed -n 's/^\#define GF_VERSION "\(.*\)"/\1/p' common/version.h)
pc_text = printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call under_prefix,$(LIBDIR))' \
	  'includedir=$(call under_prefix,$(INCLUDEDIR))' '' \
	  'Name: gpuflock' \
	  'Description: speaker diarization (pyannote community-1 recipe) on the CPU or a CUDA card' \
	  'Version: $(GF_VERSION_STR)' \
	  'Libs: -L$${libdir} -lgpuflock' \
	  'Libs.private: $(LIB_LDLIBS)' \
	  'Cflags: -I$${includedir}'
$(BUILD)/lib/gpuflock.pc: FORCE
	@mkdir -p $(dir $@)
	@$(pc_text) > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; echo "wrote $@"; fi
FORCE:
lib: $(BUILD)/lib/$(SO_NAME) $(BUILD)/lib/libgpuflock.so $(BUILD)/lib/gpuflock.pc
# The library alone (DESTDIR for staging); `make install` includes it. Like
# install, it builds nothing: the .pc for PREFIX is written into DESTDIR.
install-lib:
	@test -f $(BUILD)/lib/$(SO_NAME) || { echo "make install-lib: $(BUILD)/lib/$(SO_NAME) is missing: run make first" >&2; exit 1; }
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 755 $(INSTALL_STRIP) $(BUILD)/lib/$(SO_NAME) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sfn $(SO_NAME) $(DESTDIR)$(LIBDIR)/libgpuflock.so
	install -m 644 api/gpuflock.h $(DESTDIR)$(INCLUDEDIR)/gpuflock.h
	@$(pc_text) > $(DESTDIR)$(PKGCONFIGDIR)/gpuflock.pc && chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/gpuflock.pc
uninstall-lib:
	rm -f $(DESTDIR)$(LIBDIR)/$(SO_NAME) $(DESTDIR)$(LIBDIR)/libgpuflock.so \
	  $(DESTDIR)$(INCLUDEDIR)/gpuflock.h $(DESTDIR)$(PKGCONFIGDIR)/gpuflock.pc

# The Slurm SPANK plugin (slurm/gpuflock_spank.c, docs/slurm.md): built
# where Slurm's spank.h is installed (Debian: libslurm-dev), skipped cleanly
# where it is not. It links the -fPIC build of common/ (the lock, the
# configuration, the card identities); its version script exports what
# slurmstepd looks up alone, so none of our gf_* names meets Slurm's. The
# spank_* calls are slurmstepd's, resolved when it loads the plugin.
SPANK_H    := $(shell printf '\#include <slurm/spank.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo yes)
SPANK_SO   := $(BUILD)/lib/slurm/gpuflock_spank.so
SPANK_LDLIBS := $(shell pkg-config --libs yaml-0.1 json-c 2>/dev/null) -lm -ldl -lpthread
ifeq ($(SPANK_H),yes)
all: $(SPANK_SO)
endif
spank: $(SPANK_SO)
$(SPANK_SO): $(call pic_obj,slurm/gpuflock_spank.c) $(call pic_lib,common) slurm/gpuflock_spank.map
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -shared -Wl,--version-script=slurm/gpuflock_spank.map -Wl,--as-needed \
	    -o $@ $< $(call pic_lib,common) $(SPANK_LDLIBS)

# CUDA: each kernels/<op>/<area>.cu becomes PTX for the sm75 baseline and sm90, embedded in
# the worker library through a generated table (gpu/modules.h). Without nvcc
# the table is empty and the build goes on.
CU_SRC   := $(wildcard kernels/*/*.cu)
CU_HDR   := $(wildcard kernels/*.cuh kernels/*/*.cuh)
ifneq ($(NVCC),)
PTX_TIERS := sm75 sm90
PTX_FILES := $(foreach t,$(PTX_TIERS),$(foreach f,$(CU_SRC),$(BUILD)/ptx/$(basename $(notdir $(f))).$(t).ptx))
NVCC_FLAGS := -std=c++17 -O3 -I.
# A module's area is its .cu file's name (kernels/<op>/<area>.cu).
# resnet.cu's sm90 tier is arch-specific (compute_90a: wgmma), so it loads
# on cc 9.0 only; gpu/device.c skips such a tier on any other card.
arch_sm75 = compute_75
arch_sm90 = $(if $(filter resnet,$(1)),compute_90a,compute_90)
define ptx_rule
$(BUILD)/ptx/$(basename $(notdir $(1))).$(2).ptx: $(1) $(CU_HDR)
	@mkdir -p $$(dir $$@)
	$(NVCC) $(NVCC_FLAGS) -arch=$(call arch_$(2),$(basename $(notdir $(1)))) -ptx $$< -o $$@
endef
$(foreach f,$(CU_SRC),$(foreach t,$(PTX_TIERS),$(eval $(call ptx_rule,$(f),$(t)))))
PTX_TRIPLES = $(foreach f,$(PTX_FILES),$(basename $(basename $(notdir $(f)))) $(subst .,,$(suffix $(basename $(f)))) $(f))
else
PTX_FILES :=
PTX_TRIPLES :=
endif

$(BUILD)/tools/embedgen: tools/embedgen.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -o $@ $<
$(BUILD)/gen/ptx_blobs.c: $(BUILD)/tools/embedgen $(PTX_FILES)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embedgen $@ $(PTX_TRIPLES)
$(BUILD)/obj/gen/ptx_blobs.o: $(BUILD)/gen/ptx_blobs.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Every test: unit binaries, then integration scripts; the runner prints
# "N passed, N failed, N skipped" last.
check: deps
	$(MAKE) all
	@BUILD=$(BUILD) tests/run-tests

# GPU tests: each skips cleanly without a CUDA device.
gpu-check: all
	@BUILD=$(BUILD) tests/run-tests --gpu-only

# The GPU proof suite, under the card's lock and the bench lock (--proof):
# GPU=N picks the card (default 0). Skips with a message without a GPU.
GPU ?= 0
gpu-proof: all
	@if $(BUILD)/tests/proof/gpu_proof --probe; then \
	  $(BUILD)/bin/gpuflock exec --proof -x --gpu $(GPU) -- $(BUILD)/tests/proof/gpu_proof $(BUILD)/tests/gpu; \
	else echo "gpu-proof: no CUDA device on this machine: the GPU proof suite is skipped"; fi

# The demo: two synthetic voices taking turns, diarized, turns and DER printed.
demo: deps
	@BUILD=$(BUILD) tools/demo

unit: all
	@BUILD=$(BUILD) tests/run-tests --unit-only

SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
sanitize:
	$(MAKE) BUILD=build/sanitize SAN="$(SANFLAGS)" CFLAGS="-O1 -g" all
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  BUILD=build/sanitize tests/run-tests --unit-only

FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_LIBS := $(patsubst $(BUILD)/%,build/fuzzlib/%,$(ALL_LIBS))
fuzz:
	$(MAKE) BUILD=build/fuzzlib CC=clang SAN="-fsanitize=fuzzer-no-link,address,undefined" CFLAGS="-O1 -g" \
	  $(FUZZ_LIBS)
	@mkdir -p build/fuzz
	@for f in $(FUZZ_SRC); do \
	  n=$$(basename $$f .c); \
	  echo "clang fuzz $$n"; \
	  clang -std=c11 -O1 -g -D_GNU_SOURCE -I. $(PKG_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    $$f $(FUZZ_LIBS) $(LDLIBS) -o build/fuzz/$$n || exit 1; \
	done

clean:
	rm -rf $(BUILD) build

# ---- Install: man pages, make install / uninstall, the .deb ----------------
#
#   make man          $(BUILD)/man/*: the man pages, from man/*.scd (scdoc);
#                     part of `make` wherever scdoc is installed
#   make install      PREFIX (default /usr/local) and DESTDIR: the programs, the
#                     systemd units and tmpfiles entry, the example configuration,
#                     the evidence tables, man pages and bash completion
#   make install-strip  the same with the programs stripped
#   make uninstall    remove what install put (never /etc/gpuflock/gpuflock.yaml)
#   make deb          $(DEB_DIR)/gpuflock_VERSION_ARCH.deb from the same staging
#
# install builds nothing: it copies the existing build (`make`, as yourself,
# then `sudo make install`), so it never writes into $(BUILD) as root nor
# races a test run on the same tree; a missing piece is named and it stops.
# The six programs live together in $(LIBEXECDIR) (each finds the others in
# its own folder: gf_beside_self), with links from $(BINDIR) for the three a
# person runs; the evidence tables are in $(DATADIR)/evidence, with an
# `evidence` link beside the programs (route/evidence.c); the voice activity
# detector's weights, when tools/fetch-vad has written them, are
# $(DATADIR)/silero_vad.safetensors (and its .LICENSE), with a link of that
# name beside the programs (diar/vad.c, gf_vad_default_path). The configuration
# path /etc/gpuflock/gpuflock.yaml is compiled in (common/config.h), so it
# does not follow PREFIX.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
LIBEXECDIR  ?= $(PREFIX)/lib/gpuflock
DATADIR     ?= $(PREFIX)/share/gpuflock
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/gpuflock
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR     ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
CONFDIR     := /etc/gpuflock
INSTALL_STRIP ?=
D = $(DESTDIR)

VERSION := $(shell sed -n 's/^\#define GF_VERSION "\(.*\)"$$/\1/p' common/version.h)
# The pages' date (and the .deb's changelog and file times): the last
# commit's, so that two builds of one commit give the same bytes; now, where
# git cannot tell.
DOC_EPOCH ?= $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null),$(shell date +%s))

SCDOC     ?= $(shell command -v scdoc 2>/dev/null)
MAN_SRC   := $(wildcard man/*.scd)
MAN_PAGES := $(patsubst man/%.scd,$(BUILD)/man/%,$(MAN_SRC))
MAN_GZ    := $(addsuffix .gz,$(MAN_PAGES))
USER_PROGRAMS := gpuflock gpuflockd gpuflock-worker
UNITS     := gpuflockd.service gpuflock-worker@.service
EXAMPLES  := config/gpuflock.example.yaml config/cpu2.yaml

VAD_FILE    := .cache/vad/silero_vad.safetensors
VAD_LICENSE := .cache/vad/silero_vad.LICENSE

.PHONY: man install install-strip install-check uninstall deb
ifneq ($(SCDOC),)
all: $(MAN_PAGES) $(MAN_GZ)
endif
man: $(MAN_PAGES) $(MAN_GZ)
$(BUILD)/man/%: man/%.scd man/roff.sed common/version.h
	@test -n "$(SCDOC)" || { echo "make man: scdoc not found (Debian package scdoc; tools/setup-deps installs it)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	sed 's/@VERSION@/$(VERSION)/g' $< >$@.scd
	SOURCE_DATE_EPOCH=$(DOC_EPOCH) $(SCDOC) <$@.scd >$@.roff
	sed -f man/roff.sed $@.roff >$@.tmp
	rm -f $@.scd $@.roff
	mv $@.tmp $@
$(BUILD)/man/%.gz: $(BUILD)/man/%
	gzip -9n <$< >$@

# The library block (libgpuflock, its header, its .pc: install-lib above)
# joins install and uninstall, but for the .deb's staging (WITH_LIB=0): a
# shared library belongs in packages of its own (libgpuflock0 and -dev,
# with shlibs and an ldconfig trigger), which `make deb` does not make yet.
WITH_LIB ?= 1
ifeq ($(WITH_LIB),1)
install: install-lib
uninstall: uninstall-lib
endif

# The SPANK plugin (when built: where spank.h is) goes to $(SPANKDIR), the
# path plugstack.conf names (docs/slurm.md). Not in the .deb (WITH_SPANK=0
# there): slurmstepd loads a plugin only of its own exact version
# (plugin_version is SLURM_VERSION_NUMBER), so it belongs in a package that
# depends on that one slurm-wlm.
SPANKDIR   ?= $(LIBDIR)/slurm
WITH_SPANK ?= 1
ifeq ($(WITH_SPANK)$(SPANK_H),1yes)
install: install-spank
uninstall: uninstall-spank
endif
.PHONY: install-spank uninstall-spank
install-spank:
	@test -f $(SPANK_SO) || { echo "make install: $(SPANK_SO) is missing: run make first" >&2; exit 1; }
	install -d -m 0755 "$(D)$(SPANKDIR)"
	install -m 0755 $(INSTALL_STRIP) $(SPANK_SO) "$(D)$(SPANKDIR)/gpuflock_spank.so"
uninstall-spank:
	rm -f "$(D)$(SPANKDIR)/gpuflock_spank.so"
	if [ -d "$(D)$(SPANKDIR)" ]; then rmdir --ignore-fail-on-non-empty "$(D)$(SPANKDIR)"; fi

install-check:
	@for f in $(BINS) $(MAN_GZ); do \
	  test -f $$f || { echo "make install: $$f is missing: run make first (as yourself), then make install$(if $(MAN_SRC), (the man pages need scdoc: tools/setup-deps))" >&2; exit 1; }; \
	done

install: install-check
	install -d -m 0755 "$(D)$(BINDIR)" "$(D)$(LIBEXECDIR)" "$(D)$(DATADIR)" "$(D)$(UNITDIR)" \
	  "$(D)$(TMPFILESDIR)" "$(D)$(BASHCOMPDIR)" "$(D)$(DOCDIR)" "$(D)$(DOCDIR)/examples" "$(D)$(CONFDIR)" \
	  $(foreach s,$(sort $(subst .,,$(suffix $(basename $(MAN_GZ))))),"$(D)$(MANDIR)/man$(s)")
	install -m 0755 $(INSTALL_STRIP) $(BINS) "$(D)$(LIBEXECDIR)/"
	for p in $(USER_PROGRAMS); do \
	  ln -sfn "$$(realpath -m --relative-to="$(BINDIR)" "$(LIBEXECDIR)")/$$p" "$(D)$(BINDIR)/$$p" || exit 1; \
	done
	rm -rf "$(D)$(DATADIR)/evidence"
	cp -R evidence "$(D)$(DATADIR)/evidence"
	find "$(D)$(DATADIR)/evidence" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
	ln -sfn "$$(realpath -m --relative-to="$(LIBEXECDIR)" "$(DATADIR)")/evidence" "$(D)$(LIBEXECDIR)/evidence"
	@if [ -f $(VAD_FILE) ]; then \
	  want=$$(sed -n 's/^const char GF_VAD_SHA256\[65\] = "\([0-9a-f]*\)";$$/\1/p' diar/vad.c); \
	  got=$$(sha256sum $(VAD_FILE) | cut -d' ' -f1); \
	  [ "$$got" = "$$want" ] || { echo "make install: $(VAD_FILE): SHA-256 $$got, not diar/vad.c's $$want (run tools/fetch-vad again)" >&2; exit 1; }; \
	  echo "install -m 0644 $(VAD_FILE) $(VAD_LICENSE) $(D)$(DATADIR)/"; \
	  install -m 0644 $(VAD_FILE) $(VAD_LICENSE) "$(D)$(DATADIR)/" && \
	  ln -sfn "$$(realpath -m --relative-to="$(LIBEXECDIR)" "$(DATADIR)")/silero_vad.safetensors" \
	    "$(D)$(LIBEXECDIR)/silero_vad.safetensors"; \
	else \
	  echo "make install: no $(VAD_FILE) (tools/fetch-vad writes it): installed without the voice activity detector; the weight-free mode uses the energy detector"; \
	fi
	for f in $(UNITS); do \
	  sed -e 's|@BINDIR@|$(BINDIR)|g' -e '/^# Template: /{N;d;}' deploy/$$f.in >"$(D)$(UNITDIR)/$$f" && \
	  chmod 0644 "$(D)$(UNITDIR)/$$f" || exit 1; \
	done
	install -m 0644 deploy/gpuflock.tmpfiles "$(D)$(TMPFILESDIR)/gpuflock.conf"
	for f in $(MAN_GZ); do \
	  s=$${f%.gz}; s=$${s##*.}; install -m 0644 $$f "$(D)$(MANDIR)/man$$s/" || exit 1; \
	done
	install -m 0644 deploy/bash-completion/gpuflock "$(D)$(BASHCOMPDIR)/gpuflock"
	ln -sfn gpuflock "$(D)$(BASHCOMPDIR)/gpuflockd"
	ln -sfn gpuflock "$(D)$(BASHCOMPDIR)/gpuflock-worker"
	install -m 0644 $(EXAMPLES) "$(D)$(DOCDIR)/examples/"
	@c="$(D)$(CONFDIR)/gpuflock.yaml"; \
	if [ -e "$$c" ] || [ -L "$$c" ]; then \
	  echo "install -m 0644 config/gpuflock.example.yaml $$c.example"; \
	  install -m 0644 config/gpuflock.example.yaml "$$c.example" && \
	  echo "make install: $$c exists and is left as it is; the example configuration of this version is $$c.example"; \
	else \
	  echo "install -m 0644 config/gpuflock.example.yaml $$c"; \
	  install -m 0644 config/gpuflock.example.yaml "$$c"; \
	fi
	@if [ -z "$(DESTDIR)" ]; then \
	  echo "make install: done. Then: systemctl daemon-reload; systemd-tmpfiles --create gpuflock.conf;"; \
	  echo "  systemctl enable --now gpuflockd (docs/operations.md, \"Installing\")"; \
	fi

install-strip:
	$(MAKE) --no-print-directory install INSTALL_STRIP=-s

uninstall:
	rm -f $(foreach p,$(USER_PROGRAMS),"$(D)$(BINDIR)/$(p)") \
	  $(foreach p,$(notdir $(BINS)) evidence silero_vad.safetensors,"$(D)$(LIBEXECDIR)/$(p)") \
	  "$(D)$(DATADIR)/silero_vad.safetensors" "$(D)$(DATADIR)/silero_vad.LICENSE" \
	  $(foreach f,$(UNITS),"$(D)$(UNITDIR)/$(f)") "$(D)$(TMPFILESDIR)/gpuflock.conf" \
	  $(foreach f,$(notdir $(MAN_GZ)),"$(D)$(MANDIR)/man$(subst .,,$(suffix $(basename $(f))))/$(f)") \
	  $(foreach c,gpuflock gpuflockd gpuflock-worker,"$(D)$(BASHCOMPDIR)/$(c)") \
	  $(foreach f,$(notdir $(EXAMPLES)),"$(D)$(DOCDIR)/examples/$(f)") \
	  "$(D)$(CONFDIR)/gpuflock.yaml.example"
	rm -rf "$(D)$(DATADIR)/evidence"
	for d in "$(D)$(LIBEXECDIR)" "$(D)$(DATADIR)" "$(D)$(DOCDIR)/examples" "$(D)$(DOCDIR)" "$(D)$(CONFDIR)"; do \
	  if [ -d "$$d" ]; then rmdir --ignore-fail-on-non-empty "$$d" || exit 1; fi; \
	done
	@if [ -e "$(D)$(CONFDIR)/gpuflock.yaml" ]; then \
	  echo "make uninstall: $(D)$(CONFDIR)/gpuflock.yaml is your configuration: left as it is"; \
	fi

# The .deb: `make install-strip` into a staging root with PREFIX=/usr, plus
# what Debian asks of a package (deploy/debian/: control, copyright, the
# maintainer scripts, the lintian overrides; a changelog made here). Depends
# comes from the shared libraries the programs link (dpkg-shlibdeps, from
# dpkg-dev), else from DEB_DEPENDS_FALLBACK: the libraries of PKGS above, as
# Debian 12 names them.
DEB_DIR    ?= $(BUILD)/deb
DEB_ARCH   ?= $(shell dpkg --print-architecture 2>/dev/null)
DEB_MAINTAINER ?= $(shell git log -1 --format='%an <%ae>' 2>/dev/null)
DEB_DEPENDS_FALLBACK := libc6, libjson-c5, libopenblas0, libsndfile1, libsoxr0, libsqlite3-0, \
                        libssl3, libyaml-0-2, libzmq5, zlib1g
DEB_FILE   = $(DEB_DIR)/gpuflock_$(VERSION)_$(DEB_ARCH).deb
DEB_SRC    = $(DEB_DIR)/src
DEB_ROOT   = $(DEB_SRC)/debian/gpuflock
deb: install-check
	@test -n "$(DEB_MAINTAINER)" || { echo "make deb: set DEB_MAINTAINER='Name <address>'" >&2; exit 1; }
	@test -n "$(DEB_ARCH)" || { echo "make deb: dpkg --print-architecture failed (dpkg-deb is needed)" >&2; exit 1; }
	rm -rf "$(DEB_SRC)"
	umask 022 && $(MAKE) --no-print-directory install-strip PREFIX=/usr WITH_LIB=0 WITH_SPANK=0 \
	  DESTDIR="$(abspath $(DEB_ROOT))"
	install -d -m 0755 "$(DEB_ROOT)/DEBIAN" "$(DEB_ROOT)/usr/share/lintian/overrides"
	sed "s/@YEAR@/$$(date -u -d @$(DOC_EPOCH) +%Y)/" deploy/debian/copyright \
	  >"$(DEB_ROOT)/usr/share/doc/gpuflock/copyright"
	chmod 0644 "$(DEB_ROOT)/usr/share/doc/gpuflock/copyright"
	install -m 0644 deploy/debian/lintian-overrides "$(DEB_ROOT)/usr/share/lintian/overrides/gpuflock"
	{ printf 'gpuflock (%s) unstable; urgency=medium\n\n' "$(VERSION)"; \
	  printf '  * Built from the gpuflock tree%s.\n\n' \
	    "$$(git log -1 --format=' at commit %h' 2>/dev/null)"; \
	  printf ' -- %s  %s\n' "$(DEB_MAINTAINER)" "$$(LC_ALL=C date -u -R -d @$(DOC_EPOCH))"; } | \
	  gzip -9n >"$(DEB_ROOT)/usr/share/doc/gpuflock/changelog.gz"
	chmod 0644 "$(DEB_ROOT)/usr/share/doc/gpuflock/changelog.gz"
	install -m 0755 deploy/debian/postinst deploy/debian/postrm "$(DEB_ROOT)/DEBIAN/"
	echo "$(CONFDIR)/gpuflock.yaml" >"$(DEB_ROOT)/DEBIAN/conffiles"
	printf 'Source: gpuflock\n\nPackage: gpuflock\nArchitecture: any\n' >"$(DEB_SRC)/debian/control"
	set -e; cd "$(DEB_SRC)"; \
	if command -v dpkg-shlibdeps >/dev/null; then \
	  elf=$$(for f in debian/gpuflock/usr/lib/gpuflock/*; do \
	    [ -L "$$f" ] || ! readelf -d "$$f" 2>/dev/null | grep -q '(NEEDED)' || echo "-e$$f"; done); \
	  deps=$$(dpkg-shlibdeps -O $$elf 2>/dev/null | sed -n 's/^shlibs:Depends=//p'); \
	else deps="$(DEB_DEPENDS_FALLBACK)"; fi; \
	test -n "$$deps"; \
	size=$$(find debian/gpuflock -path debian/gpuflock/DEBIAN -prune -o -type f -printf '%s\n' -o -printf '1\n' | \
	  awk '{ k += int(($$1 + 1023) / 1024) } END { print k }'); \
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@ARCH@|$(DEB_ARCH)|' -e 's|@MAINTAINER@|$(DEB_MAINTAINER)|' \
	    -e "s#@DEPENDS@#$$deps#" -e "s|@SIZE@|$$size|" "$(CURDIR)/deploy/debian/control.in" \
	    >debian/gpuflock/DEBIAN/control
	cd "$(DEB_ROOT)" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' | \
	  LC_ALL=C sort -z | xargs -0 md5sum >DEBIAN/md5sums
	chmod 0644 "$(DEB_ROOT)/DEBIAN/control" "$(DEB_ROOT)/DEBIAN/conffiles" "$(DEB_ROOT)/DEBIAN/md5sums"
	SOURCE_DATE_EPOCH=$(DOC_EPOCH) dpkg-deb --root-owner-group -Zxz --build "$(DEB_ROOT)" "$(DEB_FILE)"

-include $(shell find $(BUILD)/obj $(BUILD)/pic/obj $(BUILD)/musl/obj -name '*.d' 2>/dev/null)
