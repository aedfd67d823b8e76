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
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>
#include <rdma/ib_cache.h>
#include <rdma/opa_addr.h>
#include <linux/workqueue.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_sysfs.h>
#include <rdma/ib_verbs.h>

#include <ib_cm_glue.h>

/* The ABI callers compiled against <rdma/ib_cm.h> depend on (spec section 1.1, x86_64). */
static_assert(sizeof(struct ib_cm_id) == 56);
static_assert(offsetof(struct ib_cm_id, context) == 8);
static_assert(offsetof(struct ib_cm_id, device) == 16);
static_assert(offsetof(struct ib_cm_id, service_id) == 24);
static_assert(offsetof(struct ib_cm_id, state) == 32);
static_assert(offsetof(struct ib_cm_id, remote_cm_qpn) == 48);

/*
 * The exported API: one-line wrappers around the Rust implementations (src/abi.rs), with the
 * <rdma/ib_cm.h> prototypes the compiler checks here.
 */
const char *ibcm_reject_msg(int reason)
{
	return ibcm_rs_reject_msg(reason);
}
EXPORT_SYMBOL(ibcm_reject_msg);

struct ib_cm_id *ib_create_cm_id(struct ib_device *device, ib_cm_handler cm_handler,
				 void *context)
{
	return ibcm_rs_create_cm_id(device, cm_handler, context);
}
EXPORT_SYMBOL(ib_create_cm_id);

void ib_destroy_cm_id(struct ib_cm_id *cm_id)
{
	ibcm_rs_destroy_cm_id(cm_id);
}
EXPORT_SYMBOL(ib_destroy_cm_id);

int ib_cm_listen(struct ib_cm_id *cm_id, __be64 service_id)
{
	return ibcm_rs_cm_listen(cm_id, service_id);
}
EXPORT_SYMBOL(ib_cm_listen);

struct ib_cm_id *ib_cm_insert_listen(struct ib_device *device, ib_cm_handler cm_handler,
				     __be64 service_id)
{
	return ibcm_rs_cm_insert_listen(device, cm_handler, service_id);
}
EXPORT_SYMBOL(ib_cm_insert_listen);

int ib_send_cm_req(struct ib_cm_id *cm_id, struct ib_cm_req_param *param)
{
	return ibcm_rs_send_cm_req(cm_id, param);
}
EXPORT_SYMBOL(ib_send_cm_req);

int ib_send_cm_rep(struct ib_cm_id *cm_id, struct ib_cm_rep_param *param)
{
	return ibcm_rs_send_cm_rep(cm_id, param);
}
EXPORT_SYMBOL(ib_send_cm_rep);

int ib_send_cm_rtu(struct ib_cm_id *cm_id, const void *private_data, u8 private_data_len)
{
	return ibcm_rs_send_cm_rtu(cm_id, private_data, private_data_len);
}
EXPORT_SYMBOL(ib_send_cm_rtu);

int ib_send_cm_dreq(struct ib_cm_id *cm_id, const void *private_data, u8 private_data_len)
{
	return ibcm_rs_send_cm_dreq(cm_id, private_data, private_data_len);
}
EXPORT_SYMBOL(ib_send_cm_dreq);

int ib_send_cm_drep(struct ib_cm_id *cm_id, const void *private_data, u8 private_data_len)
{
	return ibcm_rs_send_cm_drep(cm_id, private_data, private_data_len);
}
EXPORT_SYMBOL(ib_send_cm_drep);

int ib_send_cm_rej(struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason, void *ari,
		   u8 ari_length, const void *private_data, u8 private_data_len)
{
	return ibcm_rs_send_cm_rej(cm_id, reason, ari, ari_length, private_data,
				   private_data_len);
}
EXPORT_SYMBOL(ib_send_cm_rej);

int ib_send_cm_mra(struct ib_cm_id *cm_id, u8 service_timeout, const void *private_data,
		   u8 private_data_len)
{
	return ibcm_rs_send_cm_mra(cm_id, service_timeout, private_data, private_data_len);
}
EXPORT_SYMBOL(ib_send_cm_mra);

int ib_send_cm_sidr_req(struct ib_cm_id *cm_id, struct ib_cm_sidr_req_param *param)
{
	return ibcm_rs_send_cm_sidr_req(cm_id, param);
}
EXPORT_SYMBOL(ib_send_cm_sidr_req);

int ib_send_cm_sidr_rep(struct ib_cm_id *cm_id, struct ib_cm_sidr_rep_param *param)
{
	return ibcm_rs_send_cm_sidr_rep(cm_id, param);
}
EXPORT_SYMBOL(ib_send_cm_sidr_rep);

int ib_cm_notify(struct ib_cm_id *cm_id, enum ib_event_type event)
{
	return ibcm_rs_cm_notify(cm_id, event);
}
EXPORT_SYMBOL(ib_cm_notify);

int ib_cm_init_qp_attr(struct ib_cm_id *cm_id, struct ib_qp_attr *qp_attr, int *qp_attr_mask)
{
	return ibcm_rs_cm_init_qp_attr(cm_id, qp_attr, qp_attr_mask);
}
EXPORT_SYMBOL(ib_cm_init_qp_attr);

/* --- the receive work items (src/recv_wc.rs): a C function, so ftrace can profile it --- */

static void ibcm_glue_recv_work_fn(struct work_struct *work)
{
	ibcm_rs_recv_work(work);
}

void ibcm_glue_init_recv_work(struct work_struct *work)
{
	INIT_WORK(work, ibcm_glue_recv_work_fn);
}

static struct ib_client cm_client = {
	.name = "cm",
	.add = ibcm_rs_add_one,
	.remove = ibcm_rs_remove_one,
};

static void ibcm_fill_rej_lists(void);

int ibcm_glue_register_client(void)
{
	ibcm_fill_rej_lists();
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

void ibcm_glue_spin_lock_init(spinlock_t *lock, const char *name,
			      struct lock_class_key *key)
{
#ifdef CONFIG_DEBUG_SPINLOCK
	__raw_spin_lock_init(spinlock_check(lock), name, key, LD_WAIT_CONFIG);
#else
	spin_lock_init(lock);
#endif
}

void ibcm_glue_wake_var(void *var)
{
	/* wake_up_var() wants a full barrier between the condition's store and its check. */
	smp_mb();
	wake_up_var(var);
}

bool ibcm_glue_wait_var_zero(u32 *var, unsigned int ms)
{
	/* Acquire: what the last user wrote before its put is seen by the waiter after this. */
	return wait_var_event_timeout(var, smp_load_acquire(var) == 0, msecs_to_jiffies(ms)) != 0;
}

void ibcm_glue_cond_resched(void)
{
	cond_resched();
}

/*
 * kmalloc() proper, so that memory-allocation profiling (CONFIG_MEM_ALLOC_PROFILING) tags the
 * CM's boxes at this call site: __kmalloc_noprof() called from Rust would skip alloc_hooks().
 */
void *ibcm_glue_kmalloc(size_t size, gfp_t flags)
{
	return kmalloc(size, flags);
}

/*
 * An allocation that cannot fail (process context; small sizes only). GFP_NOIO, not
 * GFP_KERNEL: it runs in MAD send completions, on ib_mad's WQ_MEM_RECLAIM workqueues, and
 * reclaim that waited on I/O could wait on storage over RDMA, which waits on the CM.
 */
void *ibcm_glue_kmalloc_nofail(size_t size)
{
	return kmalloc(size, GFP_NOIO | __GFP_NOFAIL);
}

struct workqueue_struct *ibcm_glue_alloc_wq(void)
{
	/* As cm.c: per-CPU, max_active 1, not WQ_MEM_RECLAIM. */
	return alloc_workqueue("ib_cm", 0, 1);
}

void ibcm_glue_flush_wq(struct workqueue_struct *wq)
{
	flush_workqueue(wq);
}

/* --- MAD agents (spec 4.1) --- */

static void ibcm_glue_recv_handler(struct ib_mad_agent *agent,
				   struct ib_mad_send_buf *send_buf,
				   struct ib_mad_recv_wc *mad_recv_wc)
{
	ibcm_rs_recv(agent->context, agent->port_num, mad_recv_wc);
}

static void ibcm_glue_send_handler(struct ib_mad_agent *agent,
				   struct ib_mad_send_wc *mad_send_wc)
{
	ibcm_rs_send_done(agent->context, agent->port_num, mad_send_wc);
}

struct ib_mad_agent *ibcm_glue_register_agent(struct ib_device *device, u32 port_num,
					      void *context)
{
	struct ib_mad_reg_req reg_req = {
		.mgmt_class = IB_MGMT_CLASS_CM,
		.mgmt_class_version = 2, /* IB_CM_CLASS_VERSION, private to cm_msgs.h */
	};
	struct ib_port_modify port_modify = { .set_port_cap_mask = IB_PORT_CM_SUP };
	struct ib_mad_agent *agent;
	int ret;

	set_bit(IB_MGMT_METHOD_SEND, reg_req.method_mask);
	agent = ib_register_mad_agent(device, port_num, IB_QPT_GSI, &reg_req, 0,
				      ibcm_glue_send_handler, ibcm_glue_recv_handler,
				      context, 0);
	if (IS_ERR(agent))
		return agent;
	ret = ib_modify_port(device, port_num, 0, &port_modify);
	if (ret) {
		ib_unregister_mad_agent(agent);
		return ERR_PTR(ret);
	}
	return agent;
}

void ibcm_glue_clear_cm_sup(struct ib_device *device, u32 port_num)
{
	struct ib_port_modify port_modify = { .clr_port_cap_mask = IB_PORT_CM_SUP };

	ib_modify_port(device, port_num, 0, &port_modify);
}

struct ib_ah *ibcm_glue_ah_from_wc(struct ib_mad_agent *agent, const struct ib_wc *wc,
				   const struct ib_grh *grh)
{
	return ib_create_ah_from_wc(agent->qp->pd, wc, grh, agent->port_num);
}

void ibcm_glue_destroy_ah(struct ib_ah *ah)
{
	rdma_destroy_ah(ah, 0);
}

/* The tunables (include/ib_cm_glue.h); the defaults are cm.c's behaviour. */
struct ibcm_params ibcm_params = {
	.retry_backoff_after = -1,
	.cm_response_timeout_cap = 31,
	.cm_retries_cap = 15,
	.flow_control_limit = -1,
	.flow_control_backlog = 16384,
	.recv_queue_limit = 16384,
	.conn_ahs_per_device = -1,
	.send_pool_size = 128,
};

/* The budget of connection address handles (src/ah.rs). */
module_param_named(conn_ahs_per_device, ibcm_params.conn_ahs_per_device, int, 0644);
MODULE_PARM_DESC(conn_ahs_per_device,
		 "Address handles a device's connection ends may keep (-1: half the device's max_ah; 0: one per MAD, as the in-tree CM)");

/*
 * The retry policy, the bounds on what callers pass, flow control and the receive bound
 * (src/tunables.rs). Each range parameter refuses a value outside its range with -EINVAL;
 * every value is read afresh where it is used.
 */
static int ibcm_param_set_range(const char *val, const struct kernel_param *kp, int min,
				int max)
{
	int n;
	int ret = kstrtoint(val, 0, &n);

	if (ret)
		return ret;
	if (n < min || n > max)
		return -EINVAL;
	WRITE_ONCE(*(int *)kp->arg, n);
	return 0;
}

#define IBCM_RANGE_PARAM(name, min, max, desc)						\
	static int ibcm_param_set_##name(const char *val, const struct kernel_param *kp) \
	{										\
		return ibcm_param_set_range(val, kp, min, max);				\
	}										\
	static const struct kernel_param_ops ibcm_param_ops_##name = {			\
		.set = ibcm_param_set_##name,						\
		.get = param_get_int,							\
	};										\
	module_param_cb(name, &ibcm_param_ops_##name, &ibcm_params.name, 0644);	\
	MODULE_PARM_DESC(name, desc)

module_param_named(mra_wait_once, ibcm_params.mra_wait_once, bool, 0644);
MODULE_PARM_DESC(mra_wait_once,
		 "An MRA stretches only the wait it interrupts, not every remaining retry (default N: as the in-tree CM)");
IBCM_RANGE_PARAM(retry_backoff_after, -1, 15,
		 "Retries at a message's own timeout before each further one waits twice as long (-1: never, as the in-tree CM)");
IBCM_RANGE_PARAM(cm_response_timeout_floor, 0, 31,
		 "Least CM response timeout exponent callers get (0: no floor)");
IBCM_RANGE_PARAM(cm_response_timeout_cap, 0, 31,
		 "Greatest CM response timeout exponent callers get (31: no cap)");
IBCM_RANGE_PARAM(cm_retries_floor, 0, 15, "Least CM retry count callers get (0: no floor)");
IBCM_RANGE_PARAM(cm_retries_cap, 0, 15, "Greatest CM retry count callers get (15: no cap)");
IBCM_RANGE_PARAM(flow_control_limit, -1, 65536,
		 "REQ/DREQ/LAP/SIDR_REQ MADs a port keeps outstanding, the rest wait in order (-1: a quarter of the MAD receive queue; 0: no limit, as the 6.12 in-tree CM)");
IBCM_RANGE_PARAM(flow_control_backlog, 0, 262144,
		 "REQ/DREQ/LAP/SIDR_REQ MADs that may wait per port; a send beyond fails with -ENOMEM");
IBCM_RANGE_PARAM(recv_queue_limit, 0, 1048576,
		 "Received MADs a port may have waiting for the CM; beyond it REQs and SIDR_REQs are dropped, beyond twice it all (0: no limit, as the in-tree CM)");
IBCM_RANGE_PARAM(send_pool_size, 0, 4096,
		 "Spare MAD send buffers (1 KiB each) a port keeps for its next sends (0: none, a buffer per MAD as the in-tree CM)");

u32 ibcm_glue_mad_recv_queue_size(struct ib_mad_agent *agent)
{
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};

	if (ib_query_qp(agent->qp, &attr, IB_QP_CAP, &init))
		return 0;
	return init.cap.max_recv_wr;
}


int ibcm_glue_reply_ah_key(struct ib_mad_agent *agent, const struct ib_wc *wc,
			   const struct ib_grh *grh, struct ibcm_reply_ah_key *key)
{
	struct ib_device *device = agent->device;
	u32 port_num = agent->port_num;
	enum rdma_network_type net_type = RDMA_NETWORK_IB;
	union ib_gid sgid, dgid;
	bool has_grh = wc->wc_flags & IB_WC_GRH;
	int ret;

	memset(key, 0, sizeof(*key));
	if (rdma_cap_eth_ah(device, port_num)) {
		/* Without the flag the core guesses from the header: not worth mirroring. */
		if (!(wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) || !has_grh)
			return -EOPNOTSUPP;
		net_type = wc->network_hdr_type;
		key->vlan_id = wc->wc_flags & IB_WC_WITH_VLAN ? wc->vlan_id : 0xffff;
	} else {
		key->slid = wc->slid;
		key->path_bits = wc->dlid_path_bits;
	}
	if (has_grh) {
		ret = ib_get_gids_from_rdma_hdr((const union rdma_network_hdr *)grh, net_type,
						&sgid, &dgid);
		if (ret)
			return ret;
		memcpy(key->sgid, sgid.raw, sizeof(key->sgid));
		memcpy(key->dgid, dgid.raw, sizeof(key->dgid));
		key->flow_class = be32_to_cpu(grh->version_tclass_flow);
	}
	key->sl = wc->sl;
	key->net_type = net_type;
	key->has_grh = has_grh;
	return 0;
}

int ibcm_glue_reply_attr_init(struct ib_mad_agent *agent, const struct ib_wc *wc,
			      const struct ib_grh *grh, struct rdma_ah_attr *attr)
{
	return ib_init_ah_attr_from_wc(agent->device, agent->port_num, wc, grh, attr);
}

/*
 * The second half of ib_create_ah_from_wc(), for an attribute the cache shares between
 * threads: rdma_create_ah() may fill in (and then release) a missing sgid_attr of the
 * attribute it is given, so it gets a private copy that borrows the shared one's references.
 */
struct ib_ah *ibcm_glue_reply_ah_create(struct ib_mad_agent *agent,
					const struct rdma_ah_attr *attr)
{
	struct rdma_ah_attr tmp = *attr;

	return rdma_create_ah(agent->qp->pd, &tmp, RDMA_CREATE_AH_SLEEPABLE);
}

void ibcm_glue_might_sleep(void)
{
	might_sleep();
}

const struct ib_gid_attr *ibcm_glue_ah_attr_sgid_attr(const struct rdma_ah_attr *attr)
{
	return attr->grh.sgid_attr;
}

u8 ibcm_glue_ah_attr_hop_limit(const struct rdma_ah_attr *attr)
{
	return rdma_ah_read_grh(attr)->hop_limit;
}

bool ibcm_glue_cap_opa_ah(struct ib_device *device, u32 port_num)
{
	return rdma_cap_opa_ah(device, port_num);
}

bool ibcm_glue_protocol_roce(struct ib_device *device, u32 port_num)
{
	return rdma_protocol_roce(device, port_num);
}

void ibcm_glue_path_set_type(struct sa_path_rec *path, struct rdma_ah_attr *attr, bool opa)
{
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE) {
		path->rec_type = opa ? SA_PATH_REC_TYPE_OPA : SA_PATH_REC_TYPE_IB;
		return;
	}
	path->rec_type = sa_conv_gid_to_pathrec_type(attr->grh.sgid_attr->gid_type);
	path->roce.route_resolved = false;
	sa_path_set_dmac(path, attr->roce.dmac);
}

void ibcm_glue_path_set_lids(struct sa_path_rec *path, u32 dlid, u32 slid)
{
	sa_path_set_dlid(path, dlid);
	sa_path_set_slid(path, slid);
}

void ibcm_glue_warn_malformed(struct ib_device *device, u32 port_num, const char *what)
{
	dev_warn_ratelimited(&device->dev, "ib_cm: port %u: dropped MAD: %s\n", port_num, what);
}

/*
 * A destroy still waiting for an id's callbacks past its budget (src/conn/destroy.rs). Rate
 * limited (6.19's "destroy CM ID timeout" message is too): a stuck ULP must not flood the log.
 */
void ibcm_glue_warn_destroy_wait(u32 local_id, const char *old_state, size_t old_len,
				 const char *state, size_t state_len, u64 service_id,
				 const void *handler, u32 users, u64 waited_ms)
{
	pr_warn_ratelimited("ib_cm: destroy of id 0x%08x (state %.*s -> %.*s, service ID 0x%016llx, handler %ps) still waiting for %u use(s) after %llu ms\n",
			    local_id, (int)old_len, old_state, (int)state_len, state, service_id,
			    handler, users, waited_ms);
}

/* --- local communication IDs (src/comm_id.rs): cm.c's local_id_table --- */

static DEFINE_XARRAY_ALLOC(ibcm_local_ids);
static u32 ibcm_local_id_next;

u32 ibcm_glue_comm_init(void)
{
	return get_random_u32();
}

int ibcm_glue_comm_alloc(u32 *index)
{
	/* xa_alloc_cyclic() returns 1 when the cursor wrapped: still a success. */
	int ret = xa_alloc_cyclic(&ibcm_local_ids, index, NULL, xa_limit_32b,
				  &ibcm_local_id_next, GFP_KERNEL);

	return ret < 0 ? ret : 0;
}

void ibcm_glue_comm_publish(u32 index, void *entry)
{
	/* Replaces the reserved slot: no allocation happens. */
	xa_store(&ibcm_local_ids, index, entry, GFP_ATOMIC);
}

void *ibcm_glue_comm_load(u32 index)
{
	return xa_load(&ibcm_local_ids, index);
}

void *ibcm_glue_comm_find(u32 *index)
{
	unsigned long i = *index;
	void *entry = xa_find(&ibcm_local_ids, &i, U32_MAX, XA_PRESENT);

	*index = i;
	return entry;
}

void ibcm_glue_comm_erase(u32 index)
{
	xa_erase(&ibcm_local_ids, index);
}

bool ibcm_glue_comm_empty(void)
{
	return xa_empty(&ibcm_local_ids);
}

static void ibcm_glue_rcu_cb(struct rcu_head *head)
{
	ibcm_rs_rcu_release(head);
}

void ibcm_glue_call_rcu(struct rcu_head *head)
{
	call_rcu(head, ibcm_glue_rcu_cb);
}

void ibcm_glue_rcu_barrier(void)
{
	rcu_barrier();
}

/* --- delayed works: each device's timewait queue (src/timewait.rs), the reply sweep --- */

static void ibcm_glue_timewait_fn(struct work_struct *work)
{
	ibcm_rs_timewait(to_delayed_work(work));
}

void ibcm_glue_init_delayed_work(struct delayed_work *dw)
{
	INIT_DELAYED_WORK(dw, ibcm_glue_timewait_fn);
}

bool ibcm_glue_mod_delayed_work(struct workqueue_struct *wq, struct delayed_work *dw,
				unsigned long delay)
{
	return mod_delayed_work(wq, dw, delay);
}

bool ibcm_glue_flush_delayed_work(struct delayed_work *dw)
{
	return flush_delayed_work(dw);
}

bool ibcm_glue_queue_delayed_work_jiffies(struct workqueue_struct *wq, struct delayed_work *dw,
					  unsigned long delay)
{
	return queue_delayed_work(wq, dw, delay);
}

static void ibcm_glue_sweep_fn(struct work_struct *work)
{
	ibcm_rs_reply_sweep(to_delayed_work(work));
}

void ibcm_glue_init_sweep_work(struct delayed_work *dw)
{
	INIT_DELAYED_WORK(dw, ibcm_glue_sweep_fn);
}

static void ibcm_glue_flow_fn(struct work_struct *work)
{
	ibcm_rs_flow_kick(to_delayed_work(work));
}

void ibcm_glue_init_flow_work(struct delayed_work *dw)
{
	INIT_DELAYED_WORK(dw, ibcm_glue_flow_fn);
}

bool ibcm_glue_cancel_delayed_work_sync(struct delayed_work *dw)
{
	return cancel_delayed_work_sync(dw);
}

/* --- connections: addresses from path records, MAD control --- */

int ibcm_glue_av_by_path(struct ib_device *device, struct sa_path_rec *path,
			 const struct ib_gid_attr *sgid_attr, struct rdma_ah_attr *attr,
			 u32 *port_num, u16 *pkey_index)
{
	const struct ib_gid_attr *found = NULL;
	u32 port;
	int ret;

	if (sgid_attr) {
		if (sgid_attr->device != device)
			return -EINVAL;
		port = sgid_attr->port_num;
	} else {
		found = rdma_find_gid(device, &path->sgid, sa_conv_pathrec_to_gid_type(path),
				      NULL);
		if (IS_ERR(found))
			return -EINVAL;
		port = found->port_num;
		rdma_put_gid_attr(found);
	}
	if (!rdma_cap_ib_cm(device, port))
		return -EINVAL;
	ret = ib_find_cached_pkey(device, port, be16_to_cpu(path->pkey), pkey_index);
	if (ret)
		return ret;
	ret = ib_init_ah_attr_from_path(device, port, path, attr, sgid_attr);
	if (ret)
		return ret;
	*port_num = port;
	return 0;
}

void ibcm_glue_path_lids(struct sa_path_rec *path, u32 *slid, u32 *dlid, bool *ext)
{
	*slid = be32_to_cpu(sa_path_get_slid(path));
	*dlid = be32_to_cpu(sa_path_get_dlid(path));
	*ext = path->rec_type == SA_PATH_REC_TYPE_OPA &&
	       opa_is_extended_lid(path->opa.dlid, path->opa.slid);
}

/*
 * The bit fields of the REQ and REP event parameters, set by the C compiler: bindgen 0.70
 * places ib_cm_req_event_param's rnr_retry_count:3/srq:1 inside the storage unit that clang
 * closes after retry_count (an unsigned int bit field does not straddle its unit), so its
 * setters write those two fields 2 bits too low. Setting them here keeps the ABI exact.
 */
void ibcm_glue_req_event_bits(struct ib_cm_req_event_param *p, u8 local_cm_response_timeout,
			      u8 flow_control, u8 remote_cm_response_timeout, u8 retry_count,
			      u8 rnr_retry_count, u8 srq)
{
	p->local_cm_response_timeout = local_cm_response_timeout;
	p->flow_control = flow_control;
	p->remote_cm_response_timeout = remote_cm_response_timeout;
	p->retry_count = retry_count;
	p->rnr_retry_count = rnr_retry_count;
	p->srq = srq;
}

void ibcm_glue_rep_event_bits(struct ib_cm_rep_event_param *p, u8 target_ack_delay,
			      u8 failover_accepted, u8 flow_control, u8 rnr_retry_count, u8 srq)
{
	p->target_ack_delay = target_ack_delay;
	p->failover_accepted = failover_accepted;
	p->flow_control = flow_control;
	p->rnr_retry_count = rnr_retry_count;
	p->srq = srq;
}

u32 ibcm_glue_ah_attr_dlid(const struct rdma_ah_attr *attr)
{
	return rdma_ah_get_dlid(attr);
}

bool ibcm_glue_flush_capable(const struct ib_device *device)
{
	return device->attrs.device_cap_flags &
	       (IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_FLUSH_PERSISTENT);
}


/* --- per-port counters in sysfs: cm.c's four groups (spec 8), then six of ours --- */

/*
 * Exported by ib_core (sysfs.c) but declared only in its private core_priv.h, which cm.c
 * includes from inside the tree; an out-of-tree module declares them itself.
 */
int ib_port_register_client_groups(struct ib_device *ibdev, u32 port_num,
				   const struct attribute_group **groups);
void ib_port_unregister_client_groups(struct ib_device *ibdev, u32 port_num,
				      const struct attribute_group **groups);

struct ibcm_counter_attribute {
	struct ib_port_attribute attr;
	unsigned short group;
	unsigned short index;
};

static ssize_t ibcm_show_counter(struct ib_device *ibdev, u32 port_num,
				 struct ib_port_attribute *attr, char *buf)
{
	struct ibcm_counter_attribute *cm_attr =
		container_of(attr, struct ibcm_counter_attribute, attr);

	return sysfs_emit(buf, "%lld\n",
			  ibcm_rs_counter(ibdev, port_num, cm_attr->group, cm_attr->index));
}

#define IBCM_COUNTER(_name, _group, _index) \
	{ .attr = __ATTR(_name, 0444, ibcm_show_counter, NULL), \
	  .group = _group, .index = _index }

#define IBCM_COUNTER_GROUP(_group, _var) \
	static struct ibcm_counter_attribute _var##_attrs[] = { \
		IBCM_COUNTER(req, _group, 0), IBCM_COUNTER(mra, _group, 1), \
		IBCM_COUNTER(rej, _group, 2), IBCM_COUNTER(rep, _group, 3), \
		IBCM_COUNTER(rtu, _group, 4), IBCM_COUNTER(dreq, _group, 5), \
		IBCM_COUNTER(drep, _group, 6), IBCM_COUNTER(sidr_req, _group, 7), \
		IBCM_COUNTER(sidr_rep, _group, 8), IBCM_COUNTER(lap, _group, 9), \
		IBCM_COUNTER(apr, _group, 10), \
	}; \
	static struct attribute *_var##_list[] = { \
		&_var##_attrs[0].attr.attr, &_var##_attrs[1].attr.attr, \
		&_var##_attrs[2].attr.attr, &_var##_attrs[3].attr.attr, \
		&_var##_attrs[4].attr.attr, &_var##_attrs[5].attr.attr, \
		&_var##_attrs[6].attr.attr, &_var##_attrs[7].attr.attr, \
		&_var##_attrs[8].attr.attr, &_var##_attrs[9].attr.attr, \
		&_var##_attrs[10].attr.attr, NULL, \
	}

IBCM_COUNTER_GROUP(IBCM_TX_MSGS, ibcm_tx_msgs);
IBCM_COUNTER_GROUP(IBCM_TX_RETRIES, ibcm_tx_retries);
IBCM_COUNTER_GROUP(IBCM_RX_MSGS, ibcm_rx_msgs);
IBCM_COUNTER_GROUP(IBCM_RX_DUPLICATES, ibcm_rx_duplicates);

/* Ours, beyond cm.c: MADs dropped as malformed (short, unknown attribute, bad header). */
static struct ibcm_counter_attribute ibcm_malformed_attr =
	IBCM_COUNTER(malformed, IBCM_RX_DROPPED, 0);
/* Ours: MADs dropped because too many received ones waited for the CM (recv_queue_limit). */
static struct ibcm_counter_attribute ibcm_overload_attr =
	IBCM_COUNTER(overload, IBCM_RX_DROPPED, 1);
static struct attribute *ibcm_rx_dropped_list[] = { &ibcm_malformed_attr.attr.attr,
						     &ibcm_overload_attr.attr.attr, NULL };

/*
 * Ours, beyond cm.c: the messages the CM waits an answer for (REQ, REP, DREQ, SIDR_REQ, LAP)
 * whose retries ran out (IB_WC_RESP_TIMEOUT_ERR): the id gets its *_ERROR event if it still
 * waits in the state it sent the message in.
 */
static struct ibcm_counter_attribute ibcm_tx_timeouts_attrs[] = {
	IBCM_COUNTER(req, IBCM_TX_TIMEOUTS, 0), IBCM_COUNTER(rep, IBCM_TX_TIMEOUTS, 3),
	IBCM_COUNTER(dreq, IBCM_TX_TIMEOUTS, 5), IBCM_COUNTER(sidr_req, IBCM_TX_TIMEOUTS, 7),
	IBCM_COUNTER(lap, IBCM_TX_TIMEOUTS, 9),
};
static struct attribute *ibcm_tx_timeouts_list[] = {
	&ibcm_tx_timeouts_attrs[0].attr.attr, &ibcm_tx_timeouts_attrs[1].attr.attr,
	&ibcm_tx_timeouts_attrs[2].attr.attr, &ibcm_tx_timeouts_attrs[3].attr.attr,
	&ibcm_tx_timeouts_attrs[4].attr.attr, NULL,
};

/*
 * Ours, beyond cm.c: the port's flow control of REQ/DREQ/LAP/SIDR_REQ (src/backlog.rs): the
 * limit in force (0: none), those at the MAD layer, those waiting, the most that ever waited,
 * and the sends refused because the backlog was full.
 */
static struct ibcm_counter_attribute ibcm_flow_attrs[] = {
	IBCM_COUNTER(limit, IBCM_FLOW, 0), IBCM_COUNTER(outstanding, IBCM_FLOW, 1),
	IBCM_COUNTER(backlog, IBCM_FLOW, 2), IBCM_COUNTER(backlog_high_water, IBCM_FLOW, 3),
	IBCM_COUNTER(refused, IBCM_FLOW, 4),
};
static struct attribute *ibcm_flow_list[] = {
	&ibcm_flow_attrs[0].attr.attr, &ibcm_flow_attrs[1].attr.attr,
	&ibcm_flow_attrs[2].attr.attr, &ibcm_flow_attrs[3].attr.attr,
	&ibcm_flow_attrs[4].attr.attr, NULL,
};

/* Ours, beyond cm.c: REJs sent and received by reason (IBCM_REJ_COUNTED, ib_cm_glue.h). */
#define IBCM_REJ_COUNTER(_name, _group, _index) IBCM_COUNTER(_name, _group, _index),
#define IBCM_REJ_COUNT(_name, _group, _index) + 1

static struct ibcm_counter_attribute ibcm_rej_sent_attrs[] = {
	IBCM_REJ_COUNTED(IBCM_REJ_COUNTER, IBCM_REJ_SENT)
};
static struct ibcm_counter_attribute ibcm_rej_rcvd_attrs[] = {
	IBCM_REJ_COUNTED(IBCM_REJ_COUNTER, IBCM_REJ_RCVD)
};
/* Filled once by ibcm_glue_register_client(), before any device registers its groups. */
static struct attribute *ibcm_rej_sent_list[0 IBCM_REJ_COUNTED(IBCM_REJ_COUNT, 0) + 1];
static struct attribute *ibcm_rej_rcvd_list[0 IBCM_REJ_COUNTED(IBCM_REJ_COUNT, 0) + 1];

static void ibcm_fill_rej_lists(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ibcm_rej_sent_attrs); i++) {
		ibcm_rej_sent_list[i] = &ibcm_rej_sent_attrs[i].attr.attr;
		ibcm_rej_rcvd_list[i] = &ibcm_rej_rcvd_attrs[i].attr.attr;
	}
}

/*
 * Ours, beyond cm.c: the device's ids in timewait now, and its destroys that waited for their
 * callbacks longer than the id's retry budget (both the device's, shown on each port).
 */
static struct ibcm_counter_attribute ibcm_ids_attrs[] = {
	IBCM_COUNTER(timewait, IBCM_IDS, 0), IBCM_COUNTER(destroy_waits_over_budget, IBCM_IDS, 1),
};
static struct attribute *ibcm_ids_list[] = {
	&ibcm_ids_attrs[0].attr.attr, &ibcm_ids_attrs[1].attr.attr, NULL,
};

static const struct attribute_group ibcm_counter_groups[] = {
	{ .name = "cm_tx_msgs", .attrs = ibcm_tx_msgs_list },
	{ .name = "cm_tx_retries", .attrs = ibcm_tx_retries_list },
	{ .name = "cm_rx_msgs", .attrs = ibcm_rx_msgs_list },
	{ .name = "cm_rx_duplicates", .attrs = ibcm_rx_duplicates_list },
	{ .name = "cm_rx_dropped", .attrs = ibcm_rx_dropped_list },
	{ .name = "cm_tx_timeouts", .attrs = ibcm_tx_timeouts_list },
	{ .name = "cm_flow", .attrs = ibcm_flow_list },
	{ .name = "cm_rej_sent", .attrs = ibcm_rej_sent_list },
	{ .name = "cm_rej_rcvd", .attrs = ibcm_rej_rcvd_list },
	{ .name = "cm_ids", .attrs = ibcm_ids_list },
};

static const struct attribute_group *ibcm_counter_group_list[] = {
	&ibcm_counter_groups[0], &ibcm_counter_groups[1], &ibcm_counter_groups[2],
	&ibcm_counter_groups[3], &ibcm_counter_groups[4], &ibcm_counter_groups[5],
	&ibcm_counter_groups[6], &ibcm_counter_groups[7], &ibcm_counter_groups[8],
	&ibcm_counter_groups[9], NULL,
};

int ibcm_glue_register_counters(struct ib_device *device, u32 port_num)
{
	return ib_port_register_client_groups(device, port_num, ibcm_counter_group_list);
}

void ibcm_glue_unregister_counters(struct ib_device *device, u32 port_num)
{
	ib_port_unregister_client_groups(device, port_num, ibcm_counter_group_list);
}

/* Test builds only (IBCM_KUNIT=1): the production ib_cm.ko carries no test code. */
#ifdef IBCM_KUNIT
#include <kunit/test.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <kunit/test-bug.h>

/*
 * Makes every connection address handle's creation fail, as a driver out of handles would
 * (src/ah.rs): the guest test checks that connections then run on a handle per send.
 */
static bool fail_conn_ahs;
module_param(fail_conn_ahs, bool, 0644);
MODULE_PARM_DESC(fail_conn_ahs, "Test builds: fail the creation of connection address handles");

bool ibcm_glue_fail_conn_ahs(void)
{
	return READ_ONCE(fail_conn_ahs);
}

/*
 * Makes the allocation of a connection MAD's send buffer fail, as ib_create_send_mad() under
 * memory pressure would, after the connection's address handle was made (src/send.rs).
 */
static bool fail_send_mads;
module_param(fail_send_mads, bool, 0644);
MODULE_PARM_DESC(fail_send_mads, "Test builds: fail the allocation of MAD send buffers");

bool ibcm_glue_fail_send_mads(void)
{
	return READ_ONCE(fail_send_mads);
}

/* Connection handles held on a device, for the conformance suite (src/entry/kunit.rs). */
long ibcm_test_conn_ahs_held(struct ib_device *device);
EXPORT_SYMBOL_GPL(ibcm_test_conn_ahs_held);

/* The last MADs the CM sent, for the white-box receive-path tests (src/kunit.rs). */
#define IBCM_CAPTURE_SLOTS 8
static DEFINE_SPINLOCK(ibcm_capture_lock);
static u8 ibcm_capture_buf[IBCM_CAPTURE_SLOTS][256];
static unsigned int ibcm_capture_count;

void ibcm_glue_capture_put(const u8 *mad)
{
	unsigned long flags;

	spin_lock_irqsave(&ibcm_capture_lock, flags);
	memcpy(ibcm_capture_buf[ibcm_capture_count % IBCM_CAPTURE_SLOTS], mad, 256);
	ibcm_capture_count++;
	spin_unlock_irqrestore(&ibcm_capture_lock, flags);
}

unsigned int ibcm_glue_capture_get(unsigned int index, u8 *out)
{
	unsigned long flags;
	unsigned int count;

	spin_lock_irqsave(&ibcm_capture_lock, flags);
	count = ibcm_capture_count;
	if (index < count && count - index <= IBCM_CAPTURE_SLOTS)
		memcpy(out, ibcm_capture_buf[index % IBCM_CAPTURE_SLOTS], 256);
	spin_unlock_irqrestore(&ibcm_capture_lock, flags);
	return count;
}

static const struct ib_gid_attr *ibcm_test_roce_v2_ipv4_gid(struct ib_device *dev)
{
	int i;

	for (i = 0; i < 16; i++) {
		const struct ib_gid_attr *a = rdma_get_gid_attr(dev, 1, i);

		if (IS_ERR(a))
			continue;
		if (a->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((const struct in6_addr *)a->gid.raw))
			return a;
		rdma_put_gid_attr(a);
	}
	return NULL;
}

/*
 * An address from port 1 of `from` to QP1 of port 1 of `to` over RoCE v2 / IPv4, for the
 * receive-path tests that send real MADs between two local rxe devices (src/kunit.rs).
 * The caller releases it with rdma_destroy_ah_attr().
 */
int ibcm_glue_test_av(struct ib_device *from, struct ib_device *to, struct rdma_ah_attr *attr)
{
	const struct ib_gid_attr *src = ibcm_test_roce_v2_ipv4_gid(from);
	const struct ib_gid_attr *dst = ibcm_test_roce_v2_ipv4_gid(to);
	struct sa_path_rec rec = {};
	struct net_device *ndev;
	int ret = -ENOENT;

	if (!src || !dst)
		goto out;
	rec.rec_type = SA_PATH_REC_TYPE_ROCE_V2;
	rec.dgid = dst->gid;
	rec.sgid = src->gid;
	rec.hop_limit = 64;
	rec.pkey = cpu_to_be16(0xffff);
	rec.mtu = IB_MTU_1024;
	rec.rate = IB_RATE_10_GBPS;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(dst);
	if (!IS_ERR(ndev))
		sa_path_set_dmac(&rec, (u8 *)ndev->dev_addr);
	rcu_read_unlock();
	ret = ib_init_ah_attr_from_path(from, 1, &rec, attr, src);
out:
	if (src)
		rdma_put_gid_attr(src);
	if (dst)
		rdma_put_gid_attr(dst);
	return ret;
}

/* The source and destination GIDs of an address made by ibcm_glue_test_av(). */
void ibcm_glue_test_av_gids(const struct rdma_ah_attr *attr, u8 *sgid, u8 *dgid)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);

	memcpy(dgid, grh->dgid.raw, 16);
	if (grh->sgid_attr)
		memcpy(sgid, grh->sgid_attr->gid.raw, 16);
	else
		memset(sgid, 0, 16);
}

/* retry_count and rnr_retry_count of a REQ event as C callers read them. */
u32 ibcm_glue_test_req_event_retries(const struct ib_cm_req_event_param *p)
{
	return p->retry_count | p->rnr_retry_count << 8;
}

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
