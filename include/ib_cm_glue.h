/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one C<->Rust contract of ib_cm.ko.
 *
 * src/glue.c implements the "glue" half: the ib_client, wrappers for static inline ib_core
 * helpers that bindgen cannot bind, an IRQ-saving spinlock backend and hashed waits. The Rust
 * crate (src/ib_cm_rs.rs and siblings) implements the "rs" half: the client callbacks and every
 * exported ib_* entry point (the EXPORT_SYMBOL lines themselves live in glue.c). The Rust side
 * of this header is the `ibcm_rs_*` functions (src/device.rs, recv.rs, send.rs, port.rs,
 * comm_id.rs, timewait.rs) and the bindgen view of the `ibcm_glue_*` ones; keep them in step.
 */
#ifndef IB_CM_GLUE_H
#define IB_CM_GLUE_H

#include <linux/spinlock.h>
#include <linux/stddef.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_cm.h>

struct ib_device;
struct ib_grh;
struct ib_mad_agent;
struct ib_mad_recv_wc;
struct ib_mad_send_wc;
struct ib_wc;
struct lock_class_key;
struct rdma_ah_attr;
struct sa_path_rec;
struct workqueue_struct;

/* Counter groups (sysfs directories under ports/N/), in cm.c's order, then ours. */
enum ibcm_counter_group {
	IBCM_TX_MSGS = 0,
	IBCM_TX_RETRIES = 1,
	IBCM_RX_MSGS = 2,
	IBCM_RX_DUPLICATES = 3,
	IBCM_RX_DROPPED = 4,
	IBCM_TX_TIMEOUTS = 5,
	IBCM_FLOW = 6,
	IBCM_REJ_SENT = 7,
	IBCM_REJ_RCVD = 8,
	IBCM_IDS = 9,
};

/*
 * The REJ reasons counted apart (enum ib_cm_rej_reason; "other", index 0, counts a reason IBTA
 * does not define): X(name, g, reason) for each, the names in lower case (sysfs file names of
 * cm_rej_sent/ and cm_rej_rcvd/, and debugfs). src/port.rs counts 36 slots, index = reason.
 */
#define IBCM_REJ_SLOTS 36
#define IBCM_REJ_COUNTED(X, g)								\
	X(other, g, 0) X(no_qp, g, 1) X(no_eec, g, 2) X(no_resources, g, 3)		\
	X(timeout, g, 4) X(unsupported, g, 5) X(invalid_comm_id, g, 6)			\
	X(invalid_comm_instance, g, 7) X(invalid_service_id, g, 8)			\
	X(invalid_transport_type, g, 9) X(stale_conn, g, 10) X(rdc_not_exist, g, 11)	\
	X(invalid_gid, g, 12) X(invalid_lid, g, 13) X(invalid_sl, g, 14)		\
	X(invalid_traffic_class, g, 15) X(invalid_hop_limit, g, 16)			\
	X(invalid_packet_rate, g, 17) X(invalid_alt_gid, g, 18) X(invalid_alt_lid, g, 19)	\
	X(invalid_alt_sl, g, 20) X(invalid_alt_traffic_class, g, 21)			\
	X(invalid_alt_hop_limit, g, 22) X(invalid_alt_packet_rate, g, 23)		\
	X(port_cm_redirect, g, 24) X(port_redirect, g, 25) X(invalid_mtu, g, 26)	\
	X(insufficient_resp_resources, g, 27) X(consumer_defined, g, 28)		\
	X(invalid_rnr_retry, g, 29) X(duplicate_local_comm_id, g, 30)			\
	X(invalid_class_version, g, 31) X(invalid_flow_label, g, 32)			\
	X(invalid_alt_flow_label, g, 33) X(vendor_option_not_supported, g, 35)


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

/* --- glue.c: IRQ-saving spinlock backend (src/lock.rs) --- */
void ibcm_glue_spin_lock_init(spinlock_t *lock, const char *name,
			      struct lock_class_key *key);

/* --- glue.c: hashed waits on a counter (src/use_count.rs, the gates of src/device.rs) --- */
void ibcm_glue_wake_var(void *var);
bool ibcm_glue_wait_var_zero(u32 *var, unsigned int ms);
void ibcm_glue_cond_resched(void);

/* --- glue.c: kmalloc() for the CM's own boxes (src/alloc.rs) --- */
void *ibcm_glue_kmalloc(size_t size, gfp_t flags);
void *ibcm_glue_kmalloc_nofail(size_t size);

/* --- glue.c: the CM workqueue --- */
struct workqueue_struct *ibcm_glue_alloc_wq(void);
void ibcm_glue_flush_wq(struct workqueue_struct *wq);

/* --- glue.c: MAD agents, address handles, path records --- */
struct ib_mad_agent *ibcm_glue_register_agent(struct ib_device *device, u32 port_num,
					      void *context);
void ibcm_glue_clear_cm_sup(struct ib_device *device, u32 port_num);
struct ib_ah *ibcm_glue_ah_from_wc(struct ib_mad_agent *agent, const struct ib_wc *wc,
				   const struct ib_grh *grh);
void ibcm_glue_destroy_ah(struct ib_ah *ah);
bool ibcm_glue_fail_conn_ahs(void); /* test builds only */

/*
 * The administrator's tunables (module parameters; src/tunables.rs reads them, Documentation/
 * install.rst documents them), all in one place that Rust reads a field of with one volatile
 * load, no call: sysfs writes each field whole (param_set_bool/int, or a range setter's
 * WRITE_ONCE). The defaults are cm.c's behaviour.
 */
struct ibcm_params {
	bool mra_wait_once;
	int retry_backoff_after; /* -1: no backoff */
	int cm_response_timeout_floor;
	int cm_response_timeout_cap;
	int cm_retries_floor;
	int cm_retries_cap;
	int flow_control_limit; /* -1: a quarter of the MAD receive queue; 0: none */
	int flow_control_backlog;
	int recv_queue_limit; /* 0: none */
	int conn_ahs_per_device; /* -1: half the device's max_ah; 0: none */
	int send_pool_size; /* 0: no spare send buffers */
};
extern struct ibcm_params ibcm_params;
/* Work requests on the receive queue of the port's MAD QP (0: unknown). May sleep. */
u32 ibcm_glue_mad_recv_queue_size(struct ib_mad_agent *agent);
bool ibcm_glue_fail_send_mads(void); /* test builds only */

/*
 * What ib_init_ah_attr_from_wc() reads from a received MAD's work completion and network
 * header to address the reply: equal keys give equal address handles (src/reply_ah.rs).
 * Zero-filled first, no padding, so any two keys compare field by field.
 */
struct ibcm_reply_ah_key {
	u8 sgid[16];
	u8 dgid[16];
	u32 flow_class;
	u32 slid;		/* the work completion's 32-bit source LID (OPA LIDs exceed 16 bits) */
	u16 vlan_id;
	u8 sl;
	u8 path_bits;
	u8 net_type;
	u8 has_grh;
	u8 reserved[2];		/* explicit, so the struct has no padding */
};

int ibcm_glue_reply_ah_key(struct ib_mad_agent *agent, const struct ib_wc *wc,
			   const struct ib_grh *grh, struct ibcm_reply_ah_key *key);
int ibcm_glue_reply_attr_init(struct ib_mad_agent *agent, const struct ib_wc *wc,
			      const struct ib_grh *grh, struct rdma_ah_attr *attr);
struct ib_ah *ibcm_glue_reply_ah_create(struct ib_mad_agent *agent,
					const struct rdma_ah_attr *attr);
void ibcm_glue_might_sleep(void);
const struct ib_gid_attr *ibcm_glue_ah_attr_sgid_attr(const struct rdma_ah_attr *attr);
u8 ibcm_glue_ah_attr_hop_limit(const struct rdma_ah_attr *attr);
bool ibcm_glue_cap_opa_ah(struct ib_device *device, u32 port_num);
bool ibcm_glue_protocol_roce(struct ib_device *device, u32 port_num);
void ibcm_glue_path_set_type(struct sa_path_rec *path, struct rdma_ah_attr *attr, bool opa);
void ibcm_glue_path_set_lids(struct sa_path_rec *path, u32 dlid, u32 slid);

void ibcm_glue_warn_malformed(struct ib_device *device, u32 port_num, const char *what);
void ibcm_glue_warn_destroy_wait(u32 local_id, const char *old_state, size_t old_len,
				 const char *state, size_t state_len, u64 service_id,
				 const void *handler, u32 users, u64 waited_ms);

/* --- glue.c: local communication IDs (src/comm_id.rs) --- */
u32 ibcm_glue_comm_init(void);
int ibcm_glue_comm_alloc(u32 *index);
void ibcm_glue_comm_publish(u32 index, void *entry);
void *ibcm_glue_comm_load(u32 index);
void *ibcm_glue_comm_find(u32 *index);	/* under RCU: the first published id at >= *index */
void ibcm_glue_comm_erase(u32 index);
bool ibcm_glue_comm_empty(void);
void ibcm_glue_call_rcu(struct rcu_head *head);
void ibcm_glue_rcu_barrier(void);

/* --- glue.c: delayed works (the timewait queue of src/timewait.rs, the reply sweep) --- */
void ibcm_glue_init_delayed_work(struct delayed_work *dw);
bool ibcm_glue_mod_delayed_work(struct workqueue_struct *wq, struct delayed_work *dw,
				unsigned long delay);
bool ibcm_glue_flush_delayed_work(struct delayed_work *dw);
bool ibcm_glue_queue_delayed_work_jiffies(struct workqueue_struct *wq, struct delayed_work *dw,
					  unsigned long delay);
void ibcm_glue_init_sweep_work(struct delayed_work *dw);	/* the reply-cache sweep (device.rs) */
void ibcm_glue_init_flow_work(struct delayed_work *dw);	/* the flow-control kick (device.rs) */
bool ibcm_glue_cancel_delayed_work_sync(struct delayed_work *dw);

/* --- glue.c: connections (src/conn/) --- */
struct ib_gid_attr;
struct ib_mad_send_buf;
int ibcm_glue_av_by_path(struct ib_device *device, struct sa_path_rec *path,
			 const struct ib_gid_attr *sgid_attr, struct rdma_ah_attr *attr,
			 u32 *port_num, u16 *pkey_index);
void ibcm_glue_path_lids(struct sa_path_rec *path, u32 *slid, u32 *dlid, bool *ext);
void ibcm_glue_req_event_bits(struct ib_cm_req_event_param *p, u8 local_cm_response_timeout,
			      u8 flow_control, u8 remote_cm_response_timeout, u8 retry_count,
			      u8 rnr_retry_count, u8 srq);
void ibcm_glue_rep_event_bits(struct ib_cm_rep_event_param *p, u8 target_ack_delay,
			      u8 failover_accepted, u8 flow_control, u8 rnr_retry_count, u8 srq);
u32 ibcm_glue_ah_attr_dlid(const struct rdma_ah_attr *attr);
bool ibcm_glue_flush_capable(const struct ib_device *device);

/* --- Rust crate: RCU release and timewait expiry (src/comm_id.rs, src/timewait.rs) --- */
void ibcm_rs_rcu_release(struct rcu_head *head);
void ibcm_rs_timewait(struct delayed_work *dw);
void ibcm_rs_reply_sweep(struct delayed_work *dw);
void ibcm_rs_flow_kick(struct delayed_work *dw);

/* --- trace.c: the ib_cma:icm_* tracepoints (include/ib_cm_trace.h, src/trace.rs) --- */
/* The events of icm_id_class (an id and its states), by name without the icm_ prefix. */
#define IBCM_TRACE_ID_EVENTS(x)							\
	x(send_req) x(send_rep) x(send_dup_req) x(send_dup_rep) x(send_rtu) x(send_mra)	\
	x(send_sidr_req) x(send_sidr_rep) x(send_dreq) x(send_drep)			\
	x(send_cm_rtu_err) x(establish_err) x(no_listener_err) x(send_drep_err)		\
	x(dreq_unknown_err) x(send_unknown_rej_err) x(rej_unknown_err)			\
	x(send_mra_unknown_err) x(mra_unknown_err) x(qp_init_err) x(qp_rtr_err)		\
	x(qp_rts_err) x(dreq_skipped)
/* icm_local_class: messages answered or dropped without an id (local, remote comm ID). */
#define IBCM_TRACE_LOCAL_EVENTS(x) x(issue_rej) x(issue_drep) x(staleconn_err) x(no_priv_err)
/* icm_remote_class: REPs that found no id (the comm ID they name). */
#define IBCM_TRACE_REMOTE_EVENTS(x) x(remote_no_priv_err) x(insert_failed_err)

#define IBCM_TRACE_ENUM_ITEM(n) IBCM_TRACE_##n,
enum ibcm_trace_id { IBCM_TRACE_ID_EVENTS(IBCM_TRACE_ENUM_ITEM) IBCM_TRACE_ID_COUNT };
enum ibcm_trace_local { IBCM_TRACE_LOCAL_EVENTS(IBCM_TRACE_ENUM_ITEM) IBCM_TRACE_LOCAL_COUNT };
enum ibcm_trace_remote { IBCM_TRACE_REMOTE_EVENTS(IBCM_TRACE_ENUM_ITEM) IBCM_TRACE_REMOTE_COUNT };

void ibcm_glue_trace_id(enum ibcm_trace_id event, const struct ib_cm_id *cm_id);
void ibcm_glue_trace_send_rej(const struct ib_cm_id *cm_id, u32 reason);
void ibcm_glue_trace_local(enum ibcm_trace_local event, u32 local_id, u32 remote_id);
void ibcm_glue_trace_remote(enum ibcm_trace_remote event, u32 remote_id);
void ibcm_glue_trace_no_listener(u32 remote_id);
void ibcm_glue_trace_send_rep_err(const struct ib_cm_id *cm_id);
void ibcm_glue_trace_rep_unknown_err(u32 local_id, u32 remote_id, u32 state);
void ibcm_glue_trace_mad_send_err(u32 state, u32 wc_status);

/* --- debugfs.c: /sys/kernel/debug/ib_cm/<device>/ (src/debugfs.rs) --- */
struct seq_file;
struct dentry;
void ibcm_glue_debugfs_init(void);
void ibcm_glue_debugfs_exit(void);
struct dentry *ibcm_glue_debugfs_add_device(struct ib_device *device, void *cm_dev);
void ibcm_glue_debugfs_remove(struct dentry *dir);
void ibcm_glue_seq_listeners_header(struct seq_file *m);
void ibcm_glue_seq_listener(struct seq_file *m, u64 service_id, u32 shares, u32 in_flight,
			    const void *handler, const void *context);
void ibcm_glue_seq_ids_header(struct seq_file *m);
void ibcm_glue_seq_id(struct seq_file *m, u32 local_id, u32 remote_id, const char *state,
		      size_t state_len, u64 service_id, const char *conn_ah, size_t conn_ah_len);
void ibcm_glue_seq_conn_ahs(struct seq_file *m, u32 held, u32 limit, u64 over_budget, u64 failed);
void ibcm_glue_seq_stats(struct seq_file *m, u64 slow_destroys, u32 timewait_ids);
/* "port <port> <dir>" and name=count for each non-zero count of counts[IBCM_REJ_SLOTS]. */
void ibcm_glue_seq_rej(struct seq_file *m, u32 port, const char *dir, const u64 *counts);
void ibcm_glue_seq_flow(struct seq_file *m, u32 port, u32 limit, u32 outstanding, u32 backlog,
			u32 high_water, u64 refused, u32 recv_queued, u32 recv_limit,
			u64 recv_dropped);
/* Rust: the files' contents. */
void ibcm_rs_debugfs_listeners(struct seq_file *m, void *cm_dev);
void ibcm_rs_debugfs_ids(struct seq_file *m, void *cm_dev);
void ibcm_rs_debugfs_conn_ahs(struct seq_file *m, void *cm_dev);
void ibcm_rs_debugfs_stats(struct seq_file *m, void *cm_dev);

/* --- glue.c: per-port counters in sysfs --- */
int ibcm_glue_register_counters(struct ib_device *device, u32 port_num);
void ibcm_glue_unregister_counters(struct ib_device *device, u32 port_num);

/* --- glue.c: KUnit support for the Rust white-box suites (src/kunit.rs) --- */
void ibcm_glue_kunit_fail(const char *file, int line, const char *msg);
void ibcm_glue_capture_put(const u8 *mad);
unsigned int ibcm_glue_capture_get(unsigned int index, u8 *out);
int ibcm_glue_test_av(struct ib_device *from, struct ib_device *to, struct rdma_ah_attr *attr);
void ibcm_glue_test_av_gids(const struct rdma_ah_attr *attr, u8 *sgid, u8 *dgid);
u32 ibcm_glue_test_req_event_retries(const struct ib_cm_req_event_param *p);

/* --- Rust crate: the exported API, wrapped by glue.c (src/abi.rs) --- */
const char *ibcm_rs_reject_msg(int reason);
struct ib_cm_id *ibcm_rs_create_cm_id(struct ib_device *device, ib_cm_handler cm_handler,
				      void *context);
void ibcm_rs_destroy_cm_id(struct ib_cm_id *cm_id);
int ibcm_rs_cm_listen(struct ib_cm_id *cm_id, __be64 service_id);
struct ib_cm_id *ibcm_rs_cm_insert_listen(struct ib_device *device, ib_cm_handler cm_handler,
					  __be64 service_id);
int ibcm_rs_send_cm_req(struct ib_cm_id *cm_id, struct ib_cm_req_param *param);
int ibcm_rs_send_cm_rep(struct ib_cm_id *cm_id, struct ib_cm_rep_param *param);
int ibcm_rs_send_cm_rtu(struct ib_cm_id *cm_id, const void *private_data, u8 private_data_len);
int ibcm_rs_send_cm_dreq(struct ib_cm_id *cm_id, const void *private_data, u8 private_data_len);
int ibcm_rs_send_cm_drep(struct ib_cm_id *cm_id, const void *private_data, u8 private_data_len);
int ibcm_rs_send_cm_rej(struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason, void *ari,
			u8 ari_length, const void *private_data, u8 private_data_len);
int ibcm_rs_send_cm_mra(struct ib_cm_id *cm_id, u8 service_timeout, const void *private_data,
			u8 private_data_len);
int ibcm_rs_send_cm_sidr_req(struct ib_cm_id *cm_id, struct ib_cm_sidr_req_param *param);
int ibcm_rs_send_cm_sidr_rep(struct ib_cm_id *cm_id, struct ib_cm_sidr_rep_param *param);
int ibcm_rs_cm_notify(struct ib_cm_id *cm_id, enum ib_event_type event);
int ibcm_rs_cm_init_qp_attr(struct ib_cm_id *cm_id, struct ib_qp_attr *qp_attr,
			    int *qp_attr_mask);

/* --- glue.c / Rust crate: receive work items (src/recv.rs) --- */
void ibcm_glue_init_recv_work(struct work_struct *work);
void ibcm_rs_recv_work(struct work_struct *work);

/* --- Rust crate: ib_client callbacks --- */
int ibcm_rs_add_one(struct ib_device *device);
void ibcm_rs_remove_one(struct ib_device *device, void *client_data);

/* --- Rust crate: MAD agent callbacks and counters (src/recv.rs, src/send.rs, src/port.rs) --- */
void ibcm_rs_recv(void *context, u32 port_num, struct ib_mad_recv_wc *mad_recv_wc);
void ibcm_rs_send_done(void *context, u32 port_num, struct ib_mad_send_wc *mad_send_wc);
s64 ibcm_rs_counter(struct ib_device *device, u32 port_num, unsigned int group,
		    unsigned int index);

#endif /* IB_CM_GLUE_H */
