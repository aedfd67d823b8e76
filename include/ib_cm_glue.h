/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one C<->Rust contract of ib_cm.ko.
 *
 * src/glue.c implements the "glue" half: the ib_client, wrappers for static inline ib_core
 * helpers that bindgen cannot bind, an IRQ-saving spinlock backend and completions. The Rust
 * crate (src/ib_cm_rs.rs and siblings) implements the "rs" half: the client callbacks and every
 * exported ib_* entry point (the EXPORT_SYMBOL lines themselves live in glue.c). The Rust side
 * of this header is src/glue.rs; keep both in the same order.
 */
#ifndef IB_CM_GLUE_H
#define IB_CM_GLUE_H

#include <linux/completion.h>
#include <linux/spinlock.h>
#include <linux/stddef.h>
#include <linux/types.h>
#include <rdma/ib_cm.h>

struct ib_device;
struct lock_class_key;

/*
 * Layout of the ABI structs as the C compiler sees them. bindgen evaluates these enumerators
 * with the same clang and flags, and src/bindings.rs compares them at compile time against the
 * Rust layout bindgen generated, so a mismatch fails the build.
 */
enum ibcm_c_layout {
	IBCM_C_SIZEOF_CM_ID = sizeof(struct ib_cm_id),
	IBCM_C_OFF_CM_HANDLER = offsetof(struct ib_cm_id, cm_handler),
	IBCM_C_OFF_CONTEXT = offsetof(struct ib_cm_id, context),
	IBCM_C_OFF_DEVICE = offsetof(struct ib_cm_id, device),
	IBCM_C_OFF_SERVICE_ID = offsetof(struct ib_cm_id, service_id),
	IBCM_C_OFF_STATE = offsetof(struct ib_cm_id, state),
	IBCM_C_OFF_LAP_STATE = offsetof(struct ib_cm_id, lap_state),
	IBCM_C_OFF_LOCAL_ID = offsetof(struct ib_cm_id, local_id),
	IBCM_C_OFF_REMOTE_ID = offsetof(struct ib_cm_id, remote_id),
	IBCM_C_OFF_REMOTE_CM_QPN = offsetof(struct ib_cm_id, remote_cm_qpn),
	IBCM_C_SIZEOF_CM_EVENT = sizeof(struct ib_cm_event),
	IBCM_C_OFF_EVENT_PARAM = offsetof(struct ib_cm_event, param),
	IBCM_C_OFF_EVENT_PRIVATE_DATA = offsetof(struct ib_cm_event, private_data),
	IBCM_C_SIZEOF_REQ_EVENT_PARAM = sizeof(struct ib_cm_req_event_param),
	IBCM_C_SIZEOF_SIDR_REQ_EVENT_PARAM = sizeof(struct ib_cm_sidr_req_event_param),
};

/* --- glue.c: the ib_client "cm" --- */
int ibcm_glue_register_client(void);
void ibcm_glue_unregister_client(void);
void *ibcm_glue_get_client_data(struct ib_device *device);
void ibcm_glue_set_client_data(struct ib_device *device, void *data);

/* --- glue.c: static inline ib_core and kernel helpers --- */
bool ibcm_glue_cap_ib_cm(const struct ib_device *device, u32 port_num);
u32 ibcm_glue_start_port(const struct ib_device *device);
u32 ibcm_glue_end_port(const struct ib_device *device);
void ibcm_glue_rcu_read_lock(void);
void ibcm_glue_rcu_read_unlock(void);
void ibcm_glue_synchronize_rcu(void);
bool ibcm_glue_is_err_or_null(const void *ptr);

/* --- glue.c: IRQ-saving spinlock backend (src/lock.rs) --- */
void ibcm_glue_spin_lock_init(spinlock_t *lock, const char *name,
			      struct lock_class_key *key);
unsigned long ibcm_glue_spin_lock_irqsave(spinlock_t *lock);
void ibcm_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);

/* --- glue.c: completions (last-reference waits) --- */
void ibcm_glue_init_completion(struct completion *done);

/* --- glue.c: KUnit support for the Rust white-box suites (src/kunit.rs) --- */
void ibcm_glue_kunit_fail(const char *file, int line, const char *msg);

/* --- Rust crate: ib_client callbacks --- */
int ibcm_rs_add_one(struct ib_device *device);
void ibcm_rs_remove_one(struct ib_device *device, void *client_data);

#endif /* IB_CM_GLUE_H */
