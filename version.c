// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The module's version and source commit: `modinfo ib_cm` shows both (`version:`, `commit:`),
 * and /sys/module/ib_cm/version the loaded one's version. The in-tree ib_cm has neither, so
 * this tells the two apart on a running system, and it lets DKMS install ours next to the
 * in-tree module (dkms refuses a module whose version "exactly matches" the kernel's own, and
 * two modules without a version match). Both come from scripts/version.sh through Kbuild,
 * the same script that gives dkms.conf's PACKAGE_VERSION and the Debian package's version.
 */
#include <linux/module.h>

MODULE_VERSION(IBCM_VERSION);
MODULE_INFO(commit, IBCM_COMMIT);
