# bfs — top-level build.  `make` builds build/bfs and build/libcore.a;
# `make check` runs every test (unit, unit under ASan+UBSan, integration);
# `make demo` sets up a fresh machine and shows bfs working on an image.
#
# Sources are found by wildcard: add a .c file under libcore/ or cmd/ and it
# is built; add tests/unit/test_*.c and it becomes a test program.

# compile on every core unless the caller chose (`make check` builds three
# variants; tests/run-unit.sh and run-integration.sh run BFS_TEST_JOBS tests
# at a time, by default as many as cores)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
CC ?= cc
PKGS := libxxhash libzstd blkid uuid
CMD_PKGS := $(PKGS) fuse3 ext2fs com_err

PKG_CFLAGS := $(shell pkg-config --cflags $(CMD_PKGS) 2>/dev/null)
# readline is dlopen'd by bfs debug's shell (cmd/debug_tty.c): only its headers
PKG_CFLAGS += $(shell pkg-config --cflags readline 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(CMD_PKGS) 2>/dev/null) \
	-Wl,--push-state,--as-needed -ldl -Wl,--pop-state
# io_uring for batches of device I/O (libcore/os/uring.c); without it, synchronous
URING_LIBS := $(shell pkg-config --libs liburing 2>/dev/null)
PKG_CFLAGS += $(if $(URING_LIBS),-DBFS_HAVE_LIBURING $(shell pkg-config --cflags liburing))
PKG_LIBS += $(URING_LIBS)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

OPT ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wvla -Wformat=2 $(if $(findstring clang,$(CC)),,-Wno-format-truncation)
CFLAGS_ALL := -std=gnu11 $(OPT) $(WARN) -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-DBFS_VERSION='"$(VERSION)"' -Iinclude $(PKG_CFLAGS) $(CFLAGS)
# white-box tests may reach libcore's internal headers; libcore and cmd may not
# (tests/check-layers.sh checks the direction of every include)
TEST_IFLAGS := -Ilibcore
LDLIBS_ALL := $(PKG_LIBS) -lpthread -lm $(LDLIBS)
# the bfs binary loads libfuse3, libext2fs (with libcom_err), libm, libuuid,
# libblkid and libzstd when first used (include/bfs/lazy_lib.h) and has XXH3
# compiled in (libcore/util/xxhash.c): linked, their pages cost every run
BFS_LAZY_LIBS := -lfuse3 -lext2fs -lcom_err -lm -lblkid -luuid -lzstd -lxxhash
BFS_LDLIBS := $(filter-out $(BFS_LAZY_LIBS),$(LDLIBS_ALL))

B ?= build
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# XXH3's AVX2 kernel in one file, picked at run time (libcore/util/xxhash_avx2.c)
ifneq ($(filter x86_64%,$(shell $(CC) -dumpmachine 2>/dev/null)),)
CFLAGS_ALL += -DBFS_HAVE_XXH3_AVX2
$(B)/libcore/util/xxhash_avx2.o: CFLAGS_ALL += -mavx2
endif

LIB_SRCS := $(filter-out $(LIB_EXCLUDE),$(sort $(shell find libcore -name '*.c')))
CMD_SRCS := $(filter-out $(CMD_EXCLUDE),$(sort $(wildcard cmd/*.c)))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_HELPERS := $(filter-out $(UNIT_SRCS),$(wildcard tests/unit/*.c))
# small programs the integration tests use (tests/tools/NAME.c -> bfs-NAME)
TOOL_SRCS := $(sort $(wildcard tests/tools/*.c))
TOOL_BINS := $(TOOL_SRCS:tests/tools/%.c=$(B)/tests/bfs-%)

LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
CMD_OBJS := $(CMD_SRCS:%.c=$(B)/%.o)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
UNIT_HELPER_OBJS := $(UNIT_HELPERS:%.c=$(B)/%.o)

PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# udev reads /usr/local/lib/udev/rules.d as well as /usr/lib/udev/rules.d
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d

.PHONY: all clean check fixtures-expect unit-check asan-check integration-check demo install deps \
	completion man-problems crash-soak soak clang-check fixtures bench

all: $(B)/bfs $(B)/libcore.a

# keep object files between runs (they are intermediate to the test programs)
.SECONDARY:

# V=1 shows the full commands
Q := $(if $(V),,@)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) $(if $(filter tests/%,$<),$(TEST_IFLAGS) $(CHECK_CFLAGS)) -MMD -MP -c -o $@ $<

$(B)/libcore.a: $(LIB_OBJS)
	@rm -f $@
	@$(if $(Q),echo "  AR      $@")
	$(Q)ar rcs $@ $^

$(B)/bfs: $(CMD_OBJS) $(B)/libcore.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS_ALL) -o $@ $(CMD_OBJS) $(B)/libcore.a $(BFS_LDLIBS)

$(B)/tests/%: $(B)/tests/unit/%.o $(UNIT_HELPER_OBJS) $(B)/libcore.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS_ALL) -o $@ $< $(UNIT_HELPER_OBJS) $(B)/libcore.a $(CHECK_LIBS) $(LDLIBS_ALL)

$(B)/tests/bfs-%: $(B)/tests/tools/%.o $(B)/libcore.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS_ALL) -o $@ $< $(B)/libcore.a $(LDLIBS_ALL)

unit-tests: $(UNIT_BINS)

unit-check: $(UNIT_BINS)
	@sh tests/run-unit.sh $(UNIT_BINS)

# the sanitizer build runs a shorter crash workload: same code paths, less time
asan-check:
	BFS_CRASH_OPS=20000 BFS_CRASH_MAX_FLUSH_STATES=30 BFS_CRASH_FS_OPS=300 BFS_FUZZ_ITERS=150 \
		$(MAKE) B=build-asan OPT="-O1 -g $(SAN_FLAGS)" unit-check

# long randomized operation runs against the in-memory model, and fsck on
# thousands of damaged images (sanitizer build)
soak: $(B)/tests/test_fs_model $(B)/tests/test_crash_fs $(B)/bfs $(TOOL_BINS)
	BFS_MODEL_SEEDS=50 BFS_MODEL_OPS=50000 CK_FORK=no $(B)/tests/test_fs_model
	BFS_CRASH_FS_OPS=5000 BFS_CRASH_MAX_FLUSH_STATES=400 CK_FORK=no $(B)/tests/test_crash_fs
	BFS_SPACE_SOAK_SECS=600 BFS_SPACE_SOAK_SIZE=4G TESTS=59-mount-space-soak sh tests/run-integration.sh $(B)/bfs
	BFS_SPACE_SOAK_SECS=300 BFS_SPACE_SOAK_SIZE=1G BFS_SPACE_SOAK_OPTS=writeback TESTS=59-mount-space-soak sh tests/run-integration.sh $(B)/bfs
	$(MAKE) B=build-asan OPT="-O1 -g $(SAN_FLAGS)" build-asan/bfs
	python3 tests/damage/converge.py --bfs build-asan/bfs --tools $(B)/tests --quiet \
		--seeds $(DAMAGE_SOAK_SEEDS) --min-converge $(DAMAGE_MIN_CONVERGE)
	python3 tests/damage/converge.py --bfs build-asan/bfs --tools $(B)/tests --quiet \
		--seeds $(DAMAGE_SOAK_SEEDS) --modes random,any --count 4 --min-converge $(DAMAGE_MIN_CONVERGE)

# fsck convergence on damaged images (tests/damage/converge.py): the percent
# of damaged images (per mode) that must converge; every mode is at 90% or
# more since repair landed (doc/fsck.md), so this catches a regression
# without failing on the few cases fresh base images vary in
DAMAGE_MIN_CONVERGE ?= 75
DAMAGE_SOAK_SEEDS ?= 1-100

# long crash-consistency runs: SEEDS="1 2 3" OPS=1000000
SEEDS ?= 1 2 3 4
OPS ?= 1000000
crash-soak: $(B)/tests/test_crash
	@for s in $(SEEDS); do echo "== seed $$s"; \
	BFS_CRASH_SEED=$$s BFS_CRASH_OPS=$(OPS) BFS_CRASH_MAX_FLUSH_STATES=400 \
	BFS_CRASH_RANDOM_STATES=4 BFS_CRASH_DEV_MB=512 CK_FORK=no \
	$(B)/tests/test_crash || exit 1; done

integration-check: $(B)/bfs $(TOOL_BINS)
	@sh tests/run-integration.sh $(B)/bfs

check: all
	sh tests/check-layers.sh
	$(MAKE) unit-check
	$(MAKE) asan-check
	$(MAKE) clang-check
	$(MAKE) B=build-asan OPT="-O1 -g $(SAN_FLAGS)" build-asan/bfs
	BFS_DAMAGE_BFS=$(CURDIR)/build-asan/bfs BFS_DAMAGE_MIN_CONVERGE=$(DAMAGE_MIN_CONVERGE) \
		$(MAKE) integration-check

# no warnings under clang either (skipped where clang is not installed)
clang-check:
	@if command -v clang >/dev/null; then $(MAKE) B=build-clang CC=clang all unit-tests; \
	else echo "clang not installed: clang build skipped"; fi

deps:
	@sh tests/install-deps.sh

demo:
	@sh tests/demo.sh

# regenerate the fsck fixture corpus (review the expect.* diffs before committing)
fixtures: $(B)/bfs $(TOOL_BINS)
	sh fixtures/make-fixtures.sh $(B)

# the expected outputs only, from the committed images (after a message change)
fixtures-expect: $(B)/bfs $(TOOL_BINS)
	sh fixtures/make-fixtures.sh $(B) --expect

# the LMDB peer of `bfs bench btree` (bench/btree-vs-lmdb also builds it when missing)
$(B)/bench/lmdb_bench: bench/lmdb_bench.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) -std=gnu11 $(OPT) $(WARN) -o $@ $< -llmdb -lpthread

# bfs against LMDB on the same key sets; e.g. make bench BENCH_ARGS="--keys 10M --runs 3"
bench: $(B)/bfs $(B)/bench/lmdb_bench
	B=$(B) sh bench/btree-vs-lmdb $(BENCH_ARGS)

completion: $(B)/bfs
	$(B)/bfs completion > bash-completion/bfs

# the problem list in doc/bfs-fsck.8, from include/bfs/fsck_problems.h
man-problems: $(B)/bfs
	sh doc/gen-fsck-problems.sh -w $(B)/bfs

# the filesystem type is bcowfs: "bfs" is util-linux's and the kernel's SCO boot fs
FSTYPE := bcowfs

# man pages name the installed paths, so /usr/local in them becomes $(PREFIX)
install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(COMPLETIONDIR)
	install -m 755 $(B)/bfs $(DESTDIR)$(SBINDIR)/bfs
	for p in doc/*.8; do sed 's|/usr/local|$(PREFIX)|g' $$p > $(DESTDIR)$(MANDIR)/man8/$${p#doc/} && \
		chmod 644 $(DESTDIR)$(MANDIR)/man8/$${p#doc/} || exit 1; done
	install -m 644 bash-completion/bfs $(DESTDIR)$(COMPLETIONDIR)/bfs
	# the installed names are cmd/bfs.c's bfs_aliases: "NAME COMMAND" lines
	set -e; aliases=$$($(B)/bfs --aliases); echo "$$aliases" | while read -r a c; do \
		ln -sf bfs $(DESTDIR)$(SBINDIR)/$$a; \
		ln -sf bfs-$$c.8 $(DESTDIR)$(MANDIR)/man8/$$a.8; \
		ln -sf bfs $(DESTDIR)$(COMPLETIONDIR)/$$a; done
	install -d $(DESTDIR)$(UDEVRULESDIR)
	sed 's|@SBINDIR@|$(SBINDIR)|g' udev/64-$(FSTYPE).rules.in > $(DESTDIR)$(UDEVRULESDIR)/64-$(FSTYPE).rules

clean:
	rm -rf build build-asan build-clang

-include $(shell find $(B) build-asan -name '*.d' 2>/dev/null)
