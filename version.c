// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The module's version: `modinfo -F version ib_cm` and /sys/module/ib_cm/version. The in-tree
 * ib_cm has none, so this tells the two apart on a running system, and it lets DKMS install
 * ours next to the in-tree module (dkms refuses a module whose version "exactly matches" the
 * kernel's own, and two modules without a version match). IBCM_VERSION is dkms.conf's
 * PACKAGE_VERSION, passed by Kbuild: the one place the version is written.
 */
#include <linux/module.h>

MODULE_VERSION(IBCM_VERSION);
