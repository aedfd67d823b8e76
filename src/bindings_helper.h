/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Input of the module's bindgen run (see Kbuild): the target kernel's rdma headers and the
 * C<->Rust contract header. Only what the allowlists in Kbuild name is generated.
 */
#include <rdma/ib_cm.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_cache.h>
#include <ib_cm_glue.h>
