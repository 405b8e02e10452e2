# softhca top-level build. `make` builds the module, the provider and the tests;
# `make check` runs every test; `make demo` shows the device in a VM.
KVER := $(shell scripts/kver 2>/dev/null)
KDIR ?= /usr/src/linux-headers-$(KVER)
B := $(CURDIR)/build
KSFT := $(B)/ksft

CC ?= cc
USER_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
	-I$(CURDIR)/include/uapi -I$(CURDIR)/user
PROVIDER := $(B)/lib/libsofthca-rdmav34.so
DRIVER_FILE := $(B)/etc/libibverbs.d/softhca.driver

PROVIDER_SRCS := $(wildcard user/*.c)
PROVIDER_HDRS := $(wildcard user/*.h) $(wildcard include/uapi/rdma/*.h)

# Host unit tests: tests/unit/*.c, each one TAP program.
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/unit/%,$(UNIT_SRCS))
# VM tests: selftests/*.c (kselftest harness) and selftests/*.sh.
SELFTEST_SRCS := $(wildcard selftests/*.c)
SELFTEST_BINS := $(patsubst selftests/%.c,$(B)/selftests/%,$(SELFTEST_SRCS))
SELFTEST_LIB := $(wildcard selftests/lib/*.c)
SELFTEST_LIBHDR := $(wildcard selftests/lib/*.h)

.PHONY: all deps module user selftests unit tools check demo bench wire-bedb checkpatch clean provider-aarch64
all: module user selftests unit tools

deps:
	@scripts/deps

module:
	@test -d "$(KDIR)" || { echo "no kernel headers at '$(KDIR)': run make deps or set KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

user: $(PROVIDER) $(DRIVER_FILE)

$(PROVIDER): $(PROVIDER_SRCS) $(PROVIDER_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -flto=auto -fPIC -shared -fvisibility=hidden \
		-Wl,--no-undefined -Wl,-z,defs -o $@ $(PROVIDER_SRCS) -libverbs -lpthread

# libibverbs reads "driver <path-prefix>" and dlopens <prefix>-rdmav34.so.
$(DRIVER_FILE):
	@mkdir -p $(dir $@)
	echo "driver $(B)/lib/libsofthca" > $@

$(KSFT)/kselftest_harness.h:
	scripts/ksft-headers $(KSFT)

selftests: $(SELFTEST_BINS)

$(B)/selftests/%: selftests/%.c $(SELFTEST_LIB) $(SELFTEST_LIBHDR) $(KSFT)/kselftest_harness.h $(PROVIDER_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
		-Wno-unused-parameter -Wno-sign-compare -I$(KSFT) \
		-I$(CURDIR)/include/uapi -I$(CURDIR)/selftests/lib -I$(CURDIR)/user \
		-o $@ $< $(SELFTEST_LIB) \
		-libverbs -lmnl -lpthread

unit: $(UNIT_BINS)

$(B)/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(PROVIDER_SRCS) $(PROVIDER_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< -libverbs -lpthread

# Helpers for make bench (tools/*.c), run inside the VM.
TOOL_SRCS := $(wildcard tools/*.c)
TOOL_BINS := $(patsubst tools/%.c,$(B)/tools/%,$(TOOL_SRCS))

tools: $(TOOL_BINS)

# They share the QP-set helper and the RoCEv2 packet builder of the
# selftests (selftests/lib/qpset.c, rocev2.c); cm_rate also needs librdmacm.
TOOL_LIB := selftests/lib/qpset.c selftests/lib/rocev2.c
$(B)/tools/cm_rate: TOOL_LIBS := -lrdmacm
$(B)/tools/%: tools/%.c $(TOOL_LIB) $(TOOL_LIB:.c=.h)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -I$(CURDIR)/selftests/lib -o $@ $< \
		$(TOOL_LIB) -libverbs $(TOOL_LIBS)

check: deps
	@$(MAKE) --no-print-directory all
	@scripts/check

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo

bench: deps
	@$(MAKE) --no-print-directory all
	@scripts/bench

# The set on bed (b): two guests joined by a socket netdev (Documentation/wire.md).
# Opt-in: not part of check.
wire-bedb: deps
	@$(MAKE) --no-print-directory all
	@scripts/wire-bedb

# A kernel RDMA user from one guest to the other, selftests/bedb/SET.sh:
# wire-bedb-nvmeof, -nfsrdma, -iser, -srp, -rds (Documentation/ulps.md).
# Not .PHONY: make skips pattern rules for phony targets.
wire-bedb-%: deps
	@$(MAKE) --no-print-directory all
	@scripts/wire-bedb $*

checkpatch: $(KSFT)/kselftest_harness.h
	@scripts/style-checks

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean >/dev/null 2>&1
	rm -rf $(B)

# The provider must at least compile for aarch64 (design.md §7). No aarch64
# libibverbs here, so compile only, against the host's arch-neutral headers.
provider-aarch64:
	@mkdir -p $(B)/aarch64/inc
	@ln -sfn /usr/include/infiniband $(B)/aarch64/inc/infiniband
	@ln -sfn /usr/include/rdma $(B)/aarch64/inc/rdma
	@for f in $(PROVIDER_SRCS); do \
		aarch64-linux-gnu-gcc $(USER_CFLAGS) -fPIC -isystem $(B)/aarch64/inc \
			-c $$f -o $(B)/aarch64/$$(basename $$f .c).o || exit 1; \
	done
