// SPDX-License-Identifier: MIT
/*
 * libuuid, loaded by the subcommands that make or parse a UUID (format,
 * set-option, debug: lazy_lib.h).  A function cmd/ starts to use must be
 * added here, or the link fails (the bfs binary does not link -luuid).
 */
#include <uuid.h>

#include "lazy_lib.h"

static const char *const uuid_sonames[] = { "libuuid.so.1", "libuuid.so", NULL };
struct bfs_lazy_lib lazy_uuid = { .sonames = uuid_sonames, .package = "libuuid (Debian: libuuid1)" };

LAZY_FN_VOID(lazy_uuid, uuid_generate_random, (uuid_t out), (out))
LAZY_FN_VOID(lazy_uuid, uuid_generate_time, (uuid_t out), (out))
LAZY_FN(lazy_uuid, int, uuid_parse, (const char *in, uuid_t uu), (in, uu))
