// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * C glue of ib_cm.ko: what is C because C is the right tool for it.
 *
 * - the EXPORT_SYMBOL lines of the 16 ib_cm entry points (implemented in Rust, src/abi.rs);
 * - the ib_client "cm" whose add/remove callbacks are Rust (src/device.rs);
 * - wrappers for static inline kernel helpers bindgen cannot bind;
 * - an IRQ-saving spinlock backend (6.12's Rust SpinLock has no irqsave flavour);
 * - compile-time checks of the x86_64 ib_cm_id layout the spec documents.
 *
 * The contract with the Rust side is include/ib_cm_glue.h.
 */
#include <linux/build_bug.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>

#include <ib_cm_glue.h>

/* The ABI callers compiled against <rdma/ib_cm.h> depend on (spec section 1.1, x86_64). */
static_assert(sizeof(struct ib_cm_id) == 56);
static_assert(offsetof(struct ib_cm_id, context) == 8);
static_assert(offsetof(struct ib_cm_id, device) == 16);
static_assert(offsetof(struct ib_cm_id, service_id) == 24);
static_assert(offsetof(struct ib_cm_id, state) == 32);
static_assert(offsetof(struct ib_cm_id, remote_cm_qpn) == 48);

/* The exported API; every function is defined in Rust with the <rdma/ib_cm.h> prototype. */
EXPORT_SYMBOL(ibcm_reject_msg);
EXPORT_SYMBOL(ib_create_cm_id);
EXPORT_SYMBOL(ib_destroy_cm_id);
EXPORT_SYMBOL(ib_cm_listen);
EXPORT_SYMBOL(ib_cm_insert_listen);
EXPORT_SYMBOL(ib_send_cm_req);
EXPORT_SYMBOL(ib_send_cm_rep);
EXPORT_SYMBOL(ib_send_cm_rtu);
EXPORT_SYMBOL(ib_send_cm_dreq);
EXPORT_SYMBOL(ib_send_cm_drep);
EXPORT_SYMBOL(ib_send_cm_rej);
EXPORT_SYMBOL(ib_send_cm_mra);
EXPORT_SYMBOL(ib_send_cm_sidr_req);
EXPORT_SYMBOL(ib_send_cm_sidr_rep);
EXPORT_SYMBOL(ib_cm_notify);
EXPORT_SYMBOL(ib_cm_init_qp_attr);

static struct ib_client cm_client = {
	.name = "cm",
	.add = ibcm_rs_add_one,
	.remove = ibcm_rs_remove_one,
};

int ibcm_glue_register_client(void)
{
	return ib_register_client(&cm_client);
}

void ibcm_glue_unregister_client(void)
{
	ib_unregister_client(&cm_client);
}

void *ibcm_glue_get_client_data(struct ib_device *device)
{
	return ib_get_client_data(device, &cm_client);
}

void ibcm_glue_set_client_data(struct ib_device *device, void *data)
{
	ib_set_client_data(device, &cm_client, data);
}

bool ibcm_glue_cap_ib_cm(const struct ib_device *device, u32 port_num)
{
	return rdma_cap_ib_cm(device, port_num);
}

u32 ibcm_glue_start_port(const struct ib_device *device)
{
	return rdma_start_port(device);
}

u32 ibcm_glue_end_port(const struct ib_device *device)
{
	return rdma_end_port(device);
}

void ibcm_glue_rcu_read_lock(void)
{
	rcu_read_lock();
}

void ibcm_glue_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

void ibcm_glue_synchronize_rcu(void)
{
	synchronize_rcu();
}

bool ibcm_glue_is_err_or_null(const void *ptr)
{
	return IS_ERR_OR_NULL(ptr);
}

void ibcm_glue_spin_lock_init(spinlock_t *lock, const char *name,
			      struct lock_class_key *key)
{
#ifdef CONFIG_DEBUG_SPINLOCK
	__raw_spin_lock_init(spinlock_check(lock), name, key, LD_WAIT_CONFIG);
#else
	spin_lock_init(lock);
#endif
}

unsigned long ibcm_glue_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void ibcm_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

void ibcm_glue_init_completion(struct completion *done)
{
	init_completion(done);
}

#if IS_ENABLED(CONFIG_KUNIT)
#include <kunit/test.h>
#include <kunit/test-bug.h>

/* Marks the running KUnit case failed without aborting it (src/kunit.rs). */
void ibcm_glue_kunit_fail(const char *file, int line, const char *msg)
{
	struct kunit *test = kunit_get_current_test();

	if (!test) {
		pr_err("ib_cm: expectation failed outside KUnit at %s:%d: %s\n", file, line, msg);
		return;
	}
	kunit_set_failure(test);
	kunit_err(test, "    # %s:%d: EXPECTATION FAILED: %s\n", file, line, msg);
}
#endif
