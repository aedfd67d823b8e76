// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * softib: a soft InfiniBand HCA for the test guest (test infrastructure, not product).
 *
 * Registers `ndev` devices (softib0, softib1, ...) of one port each, InfiniBand link layer,
 * on one simulated switch: every port is ACTIVE with a LID (LMC `lmc`, so a port answers to
 * 2^lmc LIDs: the primary and the alternate path of a connection can differ by their LIDs),
 * an SM LID (`sm_lid`, no SM answers there), IB_PORT_CM_SUP once a CM sets it, a P_Key table
 * of several entries that differs between devices, and a GID table (link-local and a second
 * prefix). The port has the MAD, CM and SA capabilities and no SMI: ib_mad opens QP1 only.
 *
 * What it implements is what ib_core, ib_mad, ib_sa and a CM need, with the checks real
 * hardware makes:
 *  - PD (with local_dma_lkey), DMA MR, CQ (poll, arm, missed-event report), AH (IB, with or
 *    without GRH), the GSI QP and UD QPs with receive queues, virtual DMA as rxe has (an
 *    address in an SGE is a kernel virtual address);
 *  - a UD send is copied into a packet, the send completes at once, and a work item delivers
 *    the packet to the port that owns the destination LID (on any softib device): a receive
 *    completion with slid (and source path bits), src_qp, sl, dlid path bits, the P_Key
 *    index of the matching receiver entry, and the GRH (flag and the 40 bytes before the
 *    payload) when the sender's AH had one. A packet to a LID nobody owns, with a P_Key the
 *    receiver does not have, a wrong Q_Key, a DGID that is not the receiver's, or for a
 *    receive queue that is empty is dropped, as a fabric drops it (and counted). A send the
 *    HCA itself refuses completes with an error and puts nothing on the wire: longer than
 *    the MTU (IB_WC_LOC_LEN_ERR), an SGE with an lkey of no memory region
 *    (IB_WC_LOC_PROT_ERR), no AH or another device's, a P_Key index outside the table;
 *  - RC (and UC) QPs that carry no data but take ib_modify_qp() as hardware does: the state
 *    machine through ib_modify_qp_is_ok() and every address, alternate path, P_Key index
 *    and path-migration attribute checked (an alternate path without a port or a LID is
 *    refused), and ib_query_qp() reports what was set.
 *  - fault injection on the delivered MADs (parameter `faults`; see softib_fault.c).
 *
 * Not implemented: SMI (QP0) and a subnet manager (LIDs come from module parameters), the RC
 * data path, SRQ, multicast, user verbs.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

static int ndev = 2;
module_param(ndev, int, 0444);
MODULE_PARM_DESC(ndev, "number of soft IB devices (1..4), one port each");
static int lmc = 1;
module_param(lmc, int, 0444);
MODULE_PARM_DESC(lmc, "LID mask control of every port (0..2)");
static int sm_lid = 1;
module_param(sm_lid, int, 0444);
MODULE_PARM_DESC(sm_lid, "SM LID every port reports (nobody answers there)");
static int base_lid = 0x10;
module_param(base_lid, int, 0444);
MODULE_PARM_DESC(base_lid, "base LID of softib0's port; softibN's is base_lid + 0x10 * N");

#define SOFTIB_MAX_DEV 4
#define SOFTIB_GIDS 2
#define SOFTIB_PKEYS 4
#define SOFTIB_MAX_SGE 4
#define SOFTIB_MAX_WR 4096
#define SOFTIB_MAX_CQE 16384
#define SOFTIB_MAX_PAYLOAD 4096
#define SOFTIB_LKEY 0x50f71b

/*
 * P_Key tables: the same keys at different indexes on different devices (so each side must
 * use its own index of a key), and one key only softib1 has (a MAD with it does not reach
 * softib0). 0x7fff is a limited-membership default key.
 */
static const u16 softib_pkey_table[SOFTIB_MAX_DEV][SOFTIB_PKEYS] = {
	{ 0xffff, 0x8001, 0x8002, 0x7fff },
	{ 0xffff, 0x8002, 0x8001, 0x8003 },
	{ 0xffff, 0x8001, 0x8002, 0x0000 },
	{ 0xffff, 0x8001, 0x8002, 0x0000 },
};

struct softib_port {
	u16 lid;
	u32 cap_flags;
	union ib_gid gid[SOFTIB_GIDS];
	u16 pkey[SOFTIB_PKEYS];
	struct softib_qp *gsi;		/* under softib_fabric_lock */
};

struct softib_dev {
	struct ib_device ib;
	int index;
	struct softib_port port;	/* port 1 */
	bool registered;
};

struct softib_pd {
	struct ib_pd ibpd;
};

struct softib_mr {
	struct ib_mr ibmr;
};

struct softib_ah {
	struct ib_ah ibah;
	u32 port;
	u16 dlid;
	u8 sl;
	u8 src_path_bits;
	bool grh;
	struct ib_grh hdr;		/* the GRH as sent (payload length set per packet) */
};

struct softib_cq {
	struct ib_cq ibcq;
	spinlock_t lock;
	struct ib_wc *ring;
	int size, head, count;
	bool armed, solicited_only, overflowed;
	bool dead;			/* being destroyed: no more notifications */
	struct work_struct notify;
};

struct softib_rwqe {
	u64 wr_id;
	int num_sge;
	struct ib_sge sge[SOFTIB_MAX_SGE];
};

/* One path of a connected QP, as ib_modify_qp() set it. */
struct softib_path {
	bool valid;
	u32 port;
	u16 pkey_index;
	u8 timeout;
	struct rdma_ah_attr ah;		/* a copy without the sgid_attr reference */
};

struct softib_qp {
	struct ib_qp ibqp;
	spinlock_t lock;
	enum ib_qp_state state;
	enum ib_qp_type type;
	u32 port;
	u16 pkey_index;
	u32 qkey;
	struct softib_cq *scq, *rcq;
	enum ib_sig_type sig;
	struct ib_qp_cap cap;
	struct softib_rwqe *rq;
	int rq_size, rq_head, rq_count;
	bool linked;
	/* Connected QPs. */
	u32 dest_qpn, rq_psn, sq_psn;
	u8 timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
	enum ib_mtu path_mtu;
	int access;
	enum ib_mig_state mig_state;
	struct softib_path prim, alt;
};

static struct softib_dev *softib_devs[SOFTIB_MAX_DEV];
/* The switch's forwarding table and the QPs packets can reach. */
static DEFINE_SPINLOCK(softib_fabric_lock);
static DEFINE_XARRAY(softib_qps);	/* QPN -> UD QP (not GSI) */
static DEFINE_IDA(softib_qpn_ida);

/* Packets on the wire: sent, not yet delivered. */
static DEFINE_SPINLOCK(softib_wire_lock);
static LIST_HEAD(softib_wire);
static struct workqueue_struct *softib_wq;
static void softib_deliver_work(struct work_struct *w);
static DECLARE_DELAYED_WORK(softib_deliver_dw, softib_deliver_work);

struct softib_stats softib_stats;

static struct softib_dev *to_sdev(struct ib_device *ib) { return container_of(ib, struct softib_dev, ib); }
static struct softib_qp *to_sqp(struct ib_qp *q) { return container_of(q, struct softib_qp, ibqp); }
static struct softib_cq *to_scq(struct ib_cq *c) { return container_of(c, struct softib_cq, ibcq); }
static struct softib_ah *to_sah(struct ib_ah *a) { return container_of(a, struct softib_ah, ibah); }

static u16 lmc_mask(void)
{
	return (1u << lmc) - 1;
}

u16 softib_port_lid(int index)
{
	return base_lid + SOFTIB_LID_STRIDE * index;
}

int softib_dev_of_lid(u16 lid)
{
	int i;

	for (i = 0; i < ndev; i++)
		if ((lid & ~lmc_mask()) == softib_port_lid(i))
			return i;
	return -1;
}

/* --- device and port --- */

static int softib_query_device(struct ib_device *ib, struct ib_device_attr *a, struct ib_udata *udata)
{
	struct softib_dev *d = to_sdev(ib);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->fw_ver = 1;
	a->sys_image_guid = ib->node_guid;
	a->max_mr_size = ~0ULL;
	a->page_size_cap = PAGE_SIZE;
	a->vendor_id = 0xffffff;
	a->vendor_part_id = 0x5ef0 + d->index;
	a->max_qp = 1024;
	a->max_qp_wr = SOFTIB_MAX_WR;
	a->max_send_sge = SOFTIB_MAX_SGE;
	a->max_recv_sge = SOFTIB_MAX_SGE;
	a->max_sge_rd = SOFTIB_MAX_SGE;
	a->max_cq = 1024;
	a->max_cqe = SOFTIB_MAX_CQE;
	a->max_mr = 1024;
	a->max_pd = 1024;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_res_rd_atom = 16 * 1024;
	a->max_ah = 65536;
	a->max_pkeys = SOFTIB_PKEYS;
	a->local_ca_ack_delay = 15;
	a->device_cap_flags = IB_DEVICE_AUTO_PATH_MIG | IB_DEVICE_CHANGE_PHY_PORT |
			      IB_DEVICE_PORT_ACTIVE_EVENT | IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_RC_RNR_NAK_GEN;
	a->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	return 0;
}

static int softib_query_port(struct ib_device *ib, u32 port, struct ib_port_attr *a)
{
	struct softib_dev *d = to_sdev(ib);

	if (port != 1)
		return -EINVAL;
	/* ib_query_port() zeroed *a. */
	a->state = IB_PORT_ACTIVE;
	a->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	a->max_mtu = IB_MTU_4096;
	a->active_mtu = IB_MTU_4096;
	a->gid_tbl_len = SOFTIB_GIDS;
	a->pkey_tbl_len = SOFTIB_PKEYS;
	a->port_cap_flags = READ_ONCE(d->port.cap_flags);
	a->max_msg_sz = 1u << 31;
	a->bad_pkey_cntr = 0;
	a->qkey_viol_cntr = 0;
	a->lid = d->port.lid;
	a->sm_lid = sm_lid;
	a->lmc = lmc;
	a->max_vl_num = 4;
	a->sm_sl = 0;
	a->subnet_timeout = 18;
	a->init_type_reply = 0;
	a->active_width = IB_WIDTH_4X;
	a->active_speed = IB_SPEED_EDR;
	return 0;
}

static int softib_modify_port(struct ib_device *ib, u32 port, int mask, struct ib_port_modify *m)
{
	struct softib_dev *d = to_sdev(ib);
	u32 flags;

	if (port != 1)
		return -EINVAL;
	if (mask & ~(IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE | IB_PORT_RESET_QKEY_CNTR))
		return -EOPNOTSUPP;
	spin_lock_irq(&softib_fabric_lock);
	flags = (d->port.cap_flags | m->set_port_cap_mask) & ~m->clr_port_cap_mask;
	WRITE_ONCE(d->port.cap_flags, flags);
	spin_unlock_irq(&softib_fabric_lock);
	return 0;
}

static int softib_query_pkey(struct ib_device *ib, u32 port, u16 index, u16 *pkey)
{
	if (port != 1 || index >= SOFTIB_PKEYS)
		return -EINVAL;
	*pkey = to_sdev(ib)->port.pkey[index];
	return 0;
}

static int softib_query_gid(struct ib_device *ib, u32 port, int index, union ib_gid *gid)
{
	if (port != 1 || index < 0 || index >= SOFTIB_GIDS)
		return -EINVAL;
	*gid = to_sdev(ib)->port.gid[index];
	return 0;
}

static int softib_port_immutable(struct ib_device *ib, u32 port, struct ib_port_immutable *im)
{
	if (port != 1)
		return -EINVAL;
	im->pkey_tbl_len = SOFTIB_PKEYS;
	im->gid_tbl_len = SOFTIB_GIDS;
	/* An IB port with MAD, CM and SA, without SMI: ib_mad opens QP1 only. */
	im->core_cap_flags = RDMA_CORE_CAP_PROT_IB | RDMA_CORE_CAP_IB_MAD | RDMA_CORE_CAP_IB_CM |
			     RDMA_CORE_CAP_IB_SA;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer softib_link_layer(struct ib_device *ib, u32 port)
{
	return IB_LINK_LAYER_INFINIBAND;
}

/* --- PD, MR --- */

static int softib_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return udata ? -EOPNOTSUPP : 0;
}

static int softib_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static struct ib_mr *softib_get_dma_mr(struct ib_pd *pd, int access)
{
	struct softib_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->ibmr.lkey = SOFTIB_LKEY;
	mr->ibmr.rkey = SOFTIB_LKEY;
	return &mr->ibmr;
}

static struct ib_mr *softib_reg_user_mr(struct ib_pd *pd, u64 start, u64 len, u64 virt, int access,
				       struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int softib_dereg_mr(struct ib_mr *mr, struct ib_udata *udata)
{
	kfree(container_of(mr, struct softib_mr, ibmr));
	return 0;
}

/* --- CQ --- */

static void softib_cq_notify(struct work_struct *w)
{
	struct softib_cq *cq = container_of(w, struct softib_cq, notify);

	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/*
 * Stops the CQ's notifications for good: once `dead` is set under the CQ's lock,
 * softib_cq_add queues no notify work (it queues under that lock), and the one that may be
 * queued or running is waited for. ib_free_cq calls this (.pre_destroy_cq) before it cancels
 * its own cq->work: a notify work running after that cancel would call the consumer's
 * comp_handler (ib_cq_completion_workqueue), which queues cq->work again, and ib_free_cq
 * frees the CQ right after destroy_cq.
 */
static void softib_cq_kill(struct softib_cq *cq)
{
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	cq->dead = true;
	cq->armed = false;
	spin_unlock_irqrestore(&cq->lock, flags);
	cancel_work_sync(&cq->notify);
}

static int softib_pre_destroy_cq(struct ib_cq *ibcq)
{
	softib_cq_kill(to_scq(ibcq));
	return 0;
}

static int softib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			    struct uverbs_attr_bundle *attrs)
{
	struct softib_cq *cq = to_scq(ibcq);

	if (attrs || attr->flags || attr->cqe < 1 || attr->cqe > SOFTIB_MAX_CQE)
		return -EINVAL;
	cq->size = attr->cqe + 1;
	cq->ring = kcalloc(cq->size, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	INIT_WORK(&cq->notify, softib_cq_notify);
	ibcq->cqe = attr->cqe;
	return 0;
}

static int softib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct softib_cq *cq = to_scq(ibcq);

	/* Again for ib_destroy_cq_user, which has no pre_destroy_cq step. */
	softib_cq_kill(cq);
	kfree(cq->ring);
	return 0;
}

/*
 * Adds a completion; wakes the CQ's consumer if it armed the CQ, unless the CQ is being
 * destroyed (the notify work is queued under the CQ's lock, so softib_cq_kill's cancel sees
 * every queued one).
 */
static void softib_cq_add(struct softib_cq *cq, const struct ib_wc *wc, bool solicited)
{
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size) {
		/* Hardware would raise IB_EVENT_CQ_ERR; the completion is lost. */
		if (!cq->overflowed)
			pr_warn("softib: CQ overflow, completions lost\n");
		cq->overflowed = true;
		atomic_inc(&softib_stats.cq_overflow);
	} else {
		cq->ring[(cq->head + cq->count) % cq->size] = *wc;
		cq->count++;
	}
	if (!cq->dead && cq->armed &&
	    (!cq->solicited_only || solicited || wc->status != IB_WC_SUCCESS)) {
		cq->armed = false;
		queue_work(softib_wq, &cq->notify);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

static int softib_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int i;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < n && cq->count; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

static int softib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags f)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, flags);
	cq->armed = true;
	cq->solicited_only = (f & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED;
	if ((f & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}

/* --- AH --- */

static bool softib_valid_port(u32 port)
{
	return port == 1;
}

/*
 * Checks an IB address as an HCA does: an IB attribute, a valid port, a LID, and for a GRH a
 * source GID index that exists. Unicast only if `unicast`.
 */
static int softib_check_ah_attr(struct softib_dev *d, const struct rdma_ah_attr *a, bool unicast)
{
	u16 dlid;

	if (a->type != RDMA_AH_ATTR_TYPE_IB || !softib_valid_port(a->port_num))
		return -EINVAL;
	dlid = rdma_ah_get_dlid(a);
	if (!dlid || (unicast && dlid >= be16_to_cpu(IB_MULTICAST_LID_BASE)))
		return -EINVAL;
	if (rdma_ah_get_ah_flags(a) & IB_AH_GRH) {
		const struct ib_global_route *g = rdma_ah_read_grh(a);

		if (g->sgid_index >= SOFTIB_GIDS)
			return -EINVAL;
	}
	return 0;
}

static int softib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init, struct ib_udata *udata)
{
	struct softib_dev *d = to_sdev(ibah->device);
	const struct rdma_ah_attr *a = init->ah_attr;
	struct softib_ah *ah = to_sah(ibah);
	int ret;

	if (udata)
		return -EOPNOTSUPP;
	ret = softib_check_ah_attr(d, a, false);
	if (ret)
		return ret;
	ah->port = a->port_num;
	ah->dlid = rdma_ah_get_dlid(a);
	ah->sl = rdma_ah_get_sl(a);
	ah->src_path_bits = rdma_ah_get_path_bits(a) & lmc_mask();
	ah->grh = rdma_ah_get_ah_flags(a) & IB_AH_GRH;
	if (ah->grh) {
		const struct ib_global_route *g = rdma_ah_read_grh(a);

		ah->hdr.version_tclass_flow = cpu_to_be32((6u << 28) | ((u32)g->traffic_class << 20) |
							  (g->flow_label & 0xfffff));
		ah->hdr.next_hdr = 0x1b;
		ah->hdr.hop_limit = g->hop_limit;
		ah->hdr.sgid = d->port.gid[g->sgid_index];
		ah->hdr.dgid = g->dgid;
	}
	return 0;
}

static int softib_destroy_ah(struct ib_ah *ah, u32 flags)
{
	return 0;
}

/* --- QP --- */

static int softib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	struct softib_dev *d = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	int ret;

	if (udata)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_GSI:
		if (!softib_valid_port(init->port_num))
			return -EINVAL;
		break;
	case IB_QPT_UD:
	case IB_QPT_RC:
	case IB_QPT_UC:
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->srq || init->create_flags || !init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (init->cap.max_send_wr > SOFTIB_MAX_WR || init->cap.max_recv_wr > SOFTIB_MAX_WR ||
	    init->cap.max_send_sge > SOFTIB_MAX_SGE || init->cap.max_recv_sge > SOFTIB_MAX_SGE ||
	    init->cap.max_inline_data)
		return -EINVAL;
	spin_lock_init(&qp->lock);
	qp->type = init->qp_type;
	qp->state = IB_QPS_RESET;
	qp->scq = to_scq(init->send_cq);
	qp->rcq = to_scq(init->recv_cq);
	qp->sig = init->sq_sig_type;
	qp->cap = init->cap;
	qp->rq_size = max_t(u32, init->cap.max_recv_wr, 1);
	qp->rq = kcalloc(qp->rq_size, sizeof(*qp->rq), GFP_KERNEL);
	if (!qp->rq)
		return -ENOMEM;
	qp->mig_state = IB_MIG_MIGRATED;
	if (init->qp_type == IB_QPT_GSI) {
		qp->port = init->port_num;
		ibqp->qp_num = 1;
		spin_lock_irq(&softib_fabric_lock);
		if (d->port.gsi) {
			spin_unlock_irq(&softib_fabric_lock);
			kfree(qp->rq);
			return -EBUSY;
		}
		d->port.gsi = qp;
		qp->linked = true;
		spin_unlock_irq(&softib_fabric_lock);
		return 0;
	}
	ret = ida_alloc_range(&softib_qpn_ida, 2, 0xffffff, GFP_KERNEL);
	if (ret < 0) {
		kfree(qp->rq);
		return ret;
	}
	ibqp->qp_num = ret;
	qp->port = 1;
	ret = xa_err(xa_store_irq(&softib_qps, ibqp->qp_num, qp, GFP_KERNEL));
	if (ret) {
		ida_free(&softib_qpn_ida, ibqp->qp_num);
		kfree(qp->rq);
		return ret;
	}
	qp->linked = true;
	return 0;
}

static int softib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct softib_dev *d = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);

	/* After this, no delivery can reach the QP (delivery looks QPs up under the lock). */
	spin_lock_irq(&softib_fabric_lock);
	if (qp->type == IB_QPT_GSI) {
		if (d->port.gsi == qp)
			d->port.gsi = NULL;
	} else {
		/* Interrupts are off: the plain xa_lock nests in the fabric lock. */
		xa_lock(&softib_qps);
		__xa_erase(&softib_qps, ibqp->qp_num);
		xa_unlock(&softib_qps);
	}
	qp->linked = false;
	spin_unlock_irq(&softib_fabric_lock);
	if (qp->type != IB_QPT_GSI)
		ida_free(&softib_qpn_ida, ibqp->qp_num);
	kfree(qp->rq);
	return 0;
}

static void softib_flush_rq(struct softib_qp *qp)
{
	struct ib_wc wc = { .status = IB_WC_WR_FLUSH_ERR, .opcode = IB_WC_RECV, .qp = &qp->ibqp };

	while (qp->rq_count) {
		wc.wr_id = qp->rq[qp->rq_head].wr_id;
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
		softib_cq_add(qp->rcq, &wc, false);
	}
}

/* A path (primary or alternate) as hardware would check it before loading it. */
static int softib_check_path(struct softib_dev *d, u32 port, u16 pkey_index, u8 timeout,
			     const struct rdma_ah_attr *ah)
{
	if (!softib_valid_port(port) || pkey_index >= SOFTIB_PKEYS || !d->port.pkey[pkey_index] ||
	    timeout > 31)
		return -EINVAL;
	if (ah->port_num && ah->port_num != port)
		return -EINVAL;
	return softib_check_ah_attr(d, ah, true);
}

static void softib_set_path(struct softib_path *p, u32 port, u16 pkey_index, u8 timeout,
			    const struct rdma_ah_attr *ah)
{
	p->valid = true;
	p->port = port;
	p->pkey_index = pkey_index;
	p->timeout = timeout;
	p->ah = *ah;
	p->ah.grh.sgid_attr = NULL;
	p->ah.port_num = port;
}

static int softib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			    struct ib_udata *udata)
{
	struct softib_dev *d = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	bool connected = qp->type == IB_QPT_RC || qp->type == IB_QPT_UC;
	enum ib_qp_state cur, next;
	u32 port;
	int ret = -EINVAL;

	if (udata)
		return -EOPNOTSUPP;
	spin_lock_irq(&qp->lock);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	/* A current state given by the caller must be the QP's (an HCA refuses otherwise). */
	if (cur != qp->state)
		goto out;
	if (!ib_modify_qp_is_ok(cur, next, qp->type, mask))
		goto out;
	port = mask & IB_QP_PORT ? attr->port_num : qp->port;
	if ((mask & IB_QP_PORT) && !softib_valid_port(port))
		goto out;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    (attr->pkey_index >= SOFTIB_PKEYS || !d->port.pkey[attr->pkey_index]))
		goto out;
	if (connected) {
		if ((mask & IB_QP_AV) &&
		    softib_check_path(d, port, mask & IB_QP_PKEY_INDEX ? attr->pkey_index : qp->pkey_index,
				      mask & IB_QP_TIMEOUT ? attr->timeout : qp->timeout, &attr->ah_attr))
			goto out;
		if ((mask & IB_QP_ALT_PATH) &&
		    softib_check_path(d, attr->alt_port_num, attr->alt_pkey_index, attr->alt_timeout,
				      &attr->alt_ah_attr))
			goto out;
		if ((mask & IB_QP_PATH_MTU) && (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
			goto out;
		if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff)
			goto out;
		if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
			goto out;
		if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
			goto out;
		if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
			goto out;
		if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
			goto out;
		if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > 16)
			goto out;
		if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > 16)
			goto out;
		if (mask & IB_QP_PATH_MIG_STATE) {
			/* Only MIGRATED or REARM can be asked for; REARM needs an alternate path. */
			if (attr->path_mig_state != IB_MIG_MIGRATED && attr->path_mig_state != IB_MIG_REARM)
				goto out;
			if (attr->path_mig_state == IB_MIG_REARM && !(mask & IB_QP_ALT_PATH) &&
			    !qp->alt.valid)
				goto out;
		}
	}
	/* Checked: apply. */
	ret = 0;
	if (mask & IB_QP_PORT)
		qp->port = port;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (mask & IB_QP_AV)
		softib_set_path(&qp->prim, qp->port, qp->pkey_index, qp->timeout, &attr->ah_attr);
	if (mask & IB_QP_ALT_PATH)
		softib_set_path(&qp->alt, attr->alt_port_num, attr->alt_pkey_index, attr->alt_timeout,
				&attr->alt_ah_attr);
	if (mask & IB_QP_PATH_MIG_STATE)
		qp->mig_state = attr->path_mig_state == IB_MIG_REARM ? IB_MIG_ARMED : IB_MIG_MIGRATED;
	if (mask & IB_QP_PATH_MTU)
		qp->path_mtu = attr->path_mtu;
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn;
	if (mask & IB_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (next != qp->state) {
		qp->state = next;
		if (next == IB_QPS_ERR)
			softib_flush_rq(qp);
		if (next == IB_QPS_RESET) {
			qp->rq_head = qp->rq_count = 0;
			qp->prim.valid = qp->alt.valid = false;
			qp->mig_state = IB_MIG_MIGRATED;
		}
	}
out:
	spin_unlock_irq(&qp->lock);
	return ret;
}

static int softib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			   struct ib_qp_init_attr *init)
{
	struct softib_qp *qp = to_sqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_irq(&qp->lock);
	attr->qp_state = attr->cur_qp_state = qp->state;
	attr->pkey_index = qp->pkey_index;
	attr->port_num = qp->port;
	attr->qkey = qp->qkey;
	attr->qp_access_flags = qp->access;
	attr->path_mtu = qp->path_mtu;
	attr->dest_qp_num = qp->dest_qpn;
	attr->rq_psn = qp->rq_psn;
	attr->sq_psn = qp->sq_psn;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->path_mig_state = qp->mig_state;
	if (qp->prim.valid)
		attr->ah_attr = qp->prim.ah;
	if (qp->alt.valid) {
		attr->alt_ah_attr = qp->alt.ah;
		attr->alt_port_num = qp->alt.port;
		attr->alt_pkey_index = qp->alt.pkey_index;
		attr->alt_timeout = qp->alt.timeout;
	}
	attr->cap = qp->cap;
	init->cap = qp->cap;
	init->qp_type = qp->type;
	init->sq_sig_type = qp->sig;
	init->send_cq = &qp->scq->ibcq;
	init->recv_cq = &qp->rcq->ibcq;
	spin_unlock_irq(&qp->lock);
	return 0;
}

static int softib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad)
{
	struct softib_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&qp->lock, flags);
	for (; wr; wr = wr->next) {
		struct softib_rwqe *e;

		if (qp->state == IB_QPS_RESET || wr->num_sge > SOFTIB_MAX_SGE || wr->num_sge < 0 ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = -EINVAL;
			break;
		}
		if (qp->rq_count == qp->rq_size) {
			ret = -ENOMEM;
			break;
		}
		e = &qp->rq[(qp->rq_head + qp->rq_count) % qp->rq_size];
		e->wr_id = wr->wr_id;
		e->num_sge = wr->num_sge;
		memcpy(e->sge, wr->sg_list, wr->num_sge * sizeof(*e->sge));
		qp->rq_count++;
	}
	if (ret)
		*bad = wr;
	else if (qp->state == IB_QPS_ERR)
		softib_flush_rq(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	return ret;
}

/* Builds the packet of a UD (or GSI) send; NULL with *status set if the send fails. */
static struct softib_pkt *softib_make_pkt(struct softib_dev *d, struct softib_qp *qp,
					  const struct ib_ud_wr *ud, enum ib_wc_status *status)
{
	struct softib_ah *ah;
	struct softib_pkt *p;
	u16 pkey_index = qp->type == IB_QPT_GSI ? ud->pkey_index : qp->pkey_index;
	u32 len = 0, off = 0;
	int i;

	/* What a consumer passes is checked, not trusted: no AH, another device's AH. */
	if (!ud->ah || ud->ah->device != &d->ib || ud->wr.num_sge < 0 ||
	    ud->wr.num_sge > SOFTIB_MAX_SGE || (ud->wr.num_sge && !ud->wr.sg_list)) {
		*status = IB_WC_LOC_QP_OP_ERR;
		return NULL;
	}
	ah = to_sah(ud->ah);
	for (i = 0; i < ud->wr.num_sge; i++) {
		/* Per SGE, so that a sum cannot wrap. */
		if (ud->wr.sg_list[i].length > SOFTIB_MAX_PAYLOAD - len) {
			*status = IB_WC_LOC_LEN_ERR;
			return NULL;
		}
		/* Every memory region of the soft HCA is the DMA MR: one lkey. */
		if (ud->wr.sg_list[i].lkey != SOFTIB_LKEY) {
			*status = IB_WC_LOC_PROT_ERR;
			return NULL;
		}
		len += ud->wr.sg_list[i].length;
	}
	if (pkey_index >= SOFTIB_PKEYS || !d->port.pkey[pkey_index] || ah->port != qp->port) {
		*status = IB_WC_LOC_QP_OP_ERR;
		return NULL;
	}
	p = kzalloc(sizeof(*p) + len, GFP_ATOMIC);
	if (!p) {
		*status = IB_WC_LOC_QP_OP_ERR;
		return NULL;
	}
	for (i = 0; i < ud->wr.num_sge; i++) {
		const struct ib_sge *s = &ud->wr.sg_list[i];

		/* Virtual DMA: the address is the kernel's. */
		memcpy(p->data + off, (void *)(uintptr_t)s->addr, s->length);
		off += s->length;
	}
	p->len = len;
	p->src_dev = d->index;
	p->slid = d->port.lid | ah->src_path_bits;
	p->dlid = ah->dlid;
	p->sl = ah->sl;
	p->src_qpn = qp->ibqp.qp_num;
	p->dst_qpn = ud->remote_qpn;
	p->qkey = ud->remote_qkey & 0x80000000 ? qp->qkey : ud->remote_qkey;
	p->pkey = d->port.pkey[pkey_index];
	p->has_grh = ah->grh;
	if (ah->grh) {
		p->grh = ah->hdr;
		p->grh.paylen = cpu_to_be16(len);
	}
	return p;
}

static void softib_wire_put(struct softib_pkt *p, unsigned long delay)
{
	unsigned long flags;

	p->due = jiffies + delay;
	spin_lock_irqsave(&softib_wire_lock, flags);
	list_add_tail(&p->list, &softib_wire);
	spin_unlock_irqrestore(&softib_wire_lock, flags);
	mod_delayed_work(softib_wq, &softib_deliver_dw, 0);
}

static int softib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad)
{
	struct softib_dev *d = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_pkt *p;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&qp->lock, flags);
	for (; wr; wr = wr->next) {
		struct ib_wc wc = { .wr_id = wr->wr_id, .opcode = IB_WC_SEND, .qp = ibqp };

		if (qp->state == IB_QPS_ERR) {
			wc.status = IB_WC_WR_FLUSH_ERR;
			softib_cq_add(qp->scq, &wc, false);
			continue;
		}
		if (qp->state != IB_QPS_RTS) {
			ret = -EINVAL;
			break;
		}
		if (qp->type != IB_QPT_GSI && qp->type != IB_QPT_UD) {
			/* No RC/UC data path. */
			ret = -EOPNOTSUPP;
			break;
		}
		if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) {
			ret = -EINVAL;
			break;
		}
		wc.status = IB_WC_SUCCESS;
		p = softib_make_pkt(d, qp, ud_wr(wr), &wc.status);
		if (p) {
			/* The fault rules may free the packet: its length is read first. */
			wc.byte_len = p->len;
			p->solicited = wr->send_flags & IB_SEND_SOLICITED;
			if (wr->opcode == IB_WR_SEND_WITH_IMM) {
				p->has_imm = true;
				p->imm = wr->ex.imm_data;
			}
			softib_fault_send(p, softib_wire_put);
		}
		if (wc.status != IB_WC_SUCCESS || qp->sig == IB_SIGNAL_ALL_WR ||
		    (wr->send_flags & IB_SEND_SIGNALED)) {
			softib_cq_add(qp->scq, &wc, false);
		}
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (ret)
		*bad = wr;
	return ret;
}

/* --- the switch --- */

static struct softib_dev *softib_port_of_lid(u16 dlid)
{
	struct softib_dev *d;
	int i;

	if (!dlid || dlid >= be16_to_cpu(IB_MULTICAST_LID_BASE))
		return NULL;
	i = softib_dev_of_lid(dlid);
	if (i < 0)
		return NULL;
	d = softib_devs[i];
	return d && d->registered ? d : NULL;
}

/* The receiver's index of a P_Key matching `pkey` (IBA 10.9.3), or -1. */
static int softib_match_pkey(const struct softib_port *port, u16 pkey)
{
	int i;

	for (i = 0; i < SOFTIB_PKEYS; i++) {
		u16 k = port->pkey[i];

		if ((k & 0x7fff) && (k & 0x7fff) == (pkey & 0x7fff) && ((k | pkey) & 0x8000))
			return i;
	}
	return -1;
}

/* Delivers one packet; under softib_fabric_lock. Consumes nothing: the caller frees `p`. */
static void softib_deliver_one(struct softib_pkt *p)
{
	struct softib_dev *d = softib_port_of_lid(p->dlid);
	struct softib_rwqe *e;
	struct softib_qp *qp;
	struct ib_wc wc = {};
	u32 need, copied, left;
	int pkey_index, i;

	if (!d) {
		atomic_inc(&softib_stats.drop_no_lid);
		return;
	}
	pkey_index = softib_match_pkey(&d->port, p->pkey);
	if (pkey_index < 0) {
		atomic_inc(&softib_stats.drop_pkey);
		return;
	}
	if (p->has_grh) {
		for (i = 0; i < SOFTIB_GIDS; i++)
			if (!memcmp(&p->grh.dgid, &d->port.gid[i], sizeof(union ib_gid)))
				break;
		if (i == SOFTIB_GIDS) {
			atomic_inc(&softib_stats.drop_dgid);
			return;
		}
	}
	if (p->dst_qpn == 1) {
		qp = d->port.gsi;
		if (qp && p->qkey != IB_QP1_QKEY)
			qp = NULL;
	} else {
		qp = xa_load(&softib_qps, p->dst_qpn);
		if (qp && (qp->type != IB_QPT_UD || qp->port != 1 || qp->qkey != p->qkey ||
			   to_sdev(qp->ibqp.device) != d))
			qp = NULL;
	}
	if (!qp) {
		atomic_inc(&softib_stats.drop_qp);
		return;
	}
	spin_lock(&qp->lock);
	if (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS) {
		spin_unlock(&qp->lock);
		atomic_inc(&softib_stats.drop_qp);
		return;
	}
	if (!qp->rq_count) {
		spin_unlock(&qp->lock);
		atomic_inc(&softib_stats.drop_no_recv);
		return;
	}
	e = &qp->rq[qp->rq_head];
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	wc.wr_id = e->wr_id;
	wc.qp = &qp->ibqp;
	wc.opcode = IB_WC_RECV;
	need = sizeof(struct ib_grh) + p->len;
	for (i = 0, left = 0; i < e->num_sge; i++)
		left += e->sge[i].length;
	if (left < need) {
		wc.status = IB_WC_LOC_LEN_ERR;
		atomic_inc(&softib_stats.drop_len);
	} else {
		/* The first 40 bytes are the GRH's, written only if there is one. */
		for (i = 0, copied = 0; i < e->num_sge && copied < need; i++) {
			u8 *dst = (u8 *)(uintptr_t)e->sge[i].addr;
			u32 n = min(e->sge[i].length, need - copied);
			u32 j = 0;

			while (j < n) {
				u32 pos = copied + j, chunk;

				if (pos < sizeof(struct ib_grh)) {
					chunk = min_t(u32, n - j, sizeof(struct ib_grh) - pos);
					if (p->has_grh)
						memcpy(dst + j, (u8 *)&p->grh + pos, chunk);
				} else {
					chunk = n - j;
					memcpy(dst + j, p->data + pos - sizeof(struct ib_grh), chunk);
				}
				j += chunk;
			}
			copied += n;
		}
		wc.status = IB_WC_SUCCESS;
		wc.byte_len = need;
		wc.src_qp = p->src_qpn;
		wc.slid = p->slid;
		wc.sl = p->sl;
		wc.dlid_path_bits = p->dlid & lmc_mask();
		wc.pkey_index = pkey_index;
		wc.port_num = 1;
		wc.wc_flags = p->has_grh ? IB_WC_GRH : 0;
		if (p->has_imm) {
			wc.wc_flags |= IB_WC_WITH_IMM;
			wc.ex.imm_data = p->imm;
		}
		atomic_inc(&softib_stats.delivered);
	}
	softib_cq_add(qp->rcq, &wc, p->solicited);
	spin_unlock(&qp->lock);
}

static void softib_deliver_work(struct work_struct *w)
{
	unsigned long next = 0, flags;
	struct softib_pkt *p, *t;
	LIST_HEAD(due);

	spin_lock_irqsave(&softib_wire_lock, flags);
	list_for_each_entry_safe(p, t, &softib_wire, list) {
		if (time_after_eq(jiffies, p->due))
			list_move_tail(&p->list, &due);
		else if (!next || time_before(p->due, next))
			next = p->due;
	}
	spin_unlock_irqrestore(&softib_wire_lock, flags);
	list_for_each_entry_safe(p, t, &due, list) {
		list_del(&p->list);
		spin_lock_irqsave(&softib_fabric_lock, flags);
		softib_deliver_one(p);
		spin_unlock_irqrestore(&softib_fabric_lock, flags);
		kfree(p);
	}
	/*
	 * queue_delayed_work does nothing if the work is pending: a softib_wire_put that ran
	 * meanwhile queued it for now (mod_delayed_work(..., 0)), and that must not be pushed
	 * back to the next delayed packet's time.
	 */
	if (next)
		queue_delayed_work(softib_wq, &softib_deliver_dw,
				   time_after(next, jiffies) ? next - jiffies : 0);
}

static const struct ib_device_ops softib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

	.query_device = softib_query_device,
	.query_port = softib_query_port,
	.modify_port = softib_modify_port,
	.query_pkey = softib_query_pkey,
	.query_gid = softib_query_gid,
	.get_port_immutable = softib_port_immutable,
	.get_link_layer = softib_link_layer,
	.alloc_pd = softib_alloc_pd,
	.dealloc_pd = softib_dealloc_pd,
	.get_dma_mr = softib_get_dma_mr,
	.reg_user_mr = softib_reg_user_mr,
	.dereg_mr = softib_dereg_mr,
	.create_cq = softib_create_cq,
	.pre_destroy_cq = softib_pre_destroy_cq,
	.destroy_cq = softib_destroy_cq,
	.poll_cq = softib_poll_cq,
	.req_notify_cq = softib_req_notify_cq,
	.create_ah = softib_create_ah,
	.destroy_ah = softib_destroy_ah,
	.create_qp = softib_create_qp,
	.modify_qp = softib_modify_qp,
	.query_qp = softib_query_qp,
	.destroy_qp = softib_destroy_qp,
	.post_send = softib_post_send,
	.post_recv = softib_post_recv,

	INIT_RDMA_OBJ_SIZE(ib_ah, softib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, softib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, softib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, softib_qp, ibqp),
};

static struct dentry *softib_debugfs;

/* The counters of what the fabric did, by the names debugfs and softib_stat() give them. */
static const struct {
	const char *name;
	atomic_t *v;
} softib_stat_names[] = {
	{ "delivered", &softib_stats.delivered },
	{ "drop_no_lid", &softib_stats.drop_no_lid },
	{ "drop_pkey", &softib_stats.drop_pkey },
	{ "drop_dgid", &softib_stats.drop_dgid },
	{ "drop_qp", &softib_stats.drop_qp },
	{ "drop_no_recv", &softib_stats.drop_no_recv },
	{ "drop_len", &softib_stats.drop_len },
	{ "cq_overflow", &softib_stats.cq_overflow },
};

/*
 * The value of the fabric counter `name` (one of the debugfs stats file's names), or
 * -ENOENT. For the conformance suite, which takes it with symbol_get() so that it still loads
 * where softib is not (the rxe runs) and can check which drop a bad input caused.
 */
long softib_stat(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(softib_stat_names); i++)
		if (!strcmp(name, softib_stat_names[i].name))
			return atomic_read(softib_stat_names[i].v);
	return -ENOENT;
}
EXPORT_SYMBOL_GPL(softib_stat);

static int softib_stats_show(struct seq_file *s, void *unused)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(softib_stat_names); i++)
		seq_printf(s, "%s %d\n", softib_stat_names[i].name,
			   atomic_read(softib_stat_names[i].v));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_stats);

static void softib_remove_all(void)
{
	int i;

	for (i = SOFTIB_MAX_DEV - 1; i >= 0; i--) {
		struct softib_dev *d = softib_devs[i];

		if (!d)
			continue;
		if (d->registered) {
			spin_lock_irq(&softib_fabric_lock);
			d->registered = false;
			spin_unlock_irq(&softib_fabric_lock);
			ib_unregister_device(&d->ib);
		}
		/* Deliveries look devices up under the lock: none holds `d` after this. */
		spin_lock_irq(&softib_fabric_lock);
		softib_devs[i] = NULL;
		spin_unlock_irq(&softib_fabric_lock);
		ib_dealloc_device(&d->ib);
	}
}

static int __init softib_init(void)
{
	int i, ret;

	if (ndev < 1 || ndev > SOFTIB_MAX_DEV || lmc < 0 || lmc > 2 || sm_lid < 1 || sm_lid >= 0xc000)
		return -EINVAL;
	/* Every port's LIDs unicast, its base LID's low lmc bits clear, the SM LID nobody's. */
	if (base_lid < 1 || (base_lid & lmc_mask()) ||
	    base_lid + SOFTIB_LID_STRIDE * (ndev - 1) + lmc_mask() >=
	    be16_to_cpu(IB_MULTICAST_LID_BASE) ||
	    softib_dev_of_lid(sm_lid) >= 0)
		return -EINVAL;
	softib_wq = alloc_workqueue("softib", WQ_UNBOUND, 0);
	if (!softib_wq)
		return -ENOMEM;
	softib_debugfs = debugfs_create_dir("softib", NULL);
	debugfs_create_file("stats", 0444, softib_debugfs, NULL, &softib_stats_fops);
	for (i = 0; i < ndev; i++) {
		struct softib_dev *d = ib_alloc_device(softib_dev, ib);
		u64 guid = 0x0002c9fe5e000000ULL + ((u64)(i + 1) << 8);

		if (!d) {
			ret = -ENOMEM;
			goto err;
		}
		softib_devs[i] = d;
		d->index = i;
		/* base_lid, base_lid + 0x10, ...: each port owns 2^lmc of them. */
		d->port.lid = softib_port_lid(i);
		d->port.cap_flags = IB_PORT_SM_DISABLED | IB_PORT_SYS_IMAGE_GUID_SUP;
		memcpy(d->port.pkey, softib_pkey_table[i], sizeof(d->port.pkey));
		d->port.gid[0].global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
		d->port.gid[0].global.interface_id = cpu_to_be64(guid + 1);
		d->port.gid[1].global.subnet_prefix = cpu_to_be64(0xfec0000000000001ULL);
		d->port.gid[1].global.interface_id = cpu_to_be64(guid + 1);
		d->ib.node_guid = cpu_to_be64(guid);
		d->ib.node_type = RDMA_NODE_IB_CA;
		d->ib.phys_port_cnt = 1;
		d->ib.num_comp_vectors = 1;
		d->ib.local_dma_lkey = SOFTIB_LKEY;
		snprintf(d->ib.node_desc, sizeof(d->ib.node_desc), "softib%d soft IB HCA", i);
		ib_set_device_ops(&d->ib, &softib_ops);
		ret = ib_register_device(&d->ib, "softib%d", NULL);
		if (ret) {
			pr_err("softib: registering device %d failed: %d\n", i, ret);
			goto err;
		}
		spin_lock_irq(&softib_fabric_lock);
		d->registered = true;
		spin_unlock_irq(&softib_fabric_lock);
		pr_info("softib: %s: LID %#x/%d, SM LID %#x, GUID %016llx\n", dev_name(&d->ib.dev),
			d->port.lid, lmc, sm_lid, guid);
	}
	return 0;
err:
	softib_remove_all();
	softib_fault_exit();
	debugfs_remove_recursive(softib_debugfs);
	destroy_workqueue(softib_wq);
	return ret;
}

static void __exit softib_exit(void)
{
	struct softib_pkt *p, *t;

	softib_remove_all();
	cancel_delayed_work_sync(&softib_deliver_dw);
	softib_fault_exit();
	destroy_workqueue(softib_wq);
	list_for_each_entry_safe(p, t, &softib_wire, list) {
		list_del(&p->list);
		kfree(p);
	}
	debugfs_remove_recursive(softib_debugfs);
	ida_destroy(&softib_qpn_ida);
}

module_init(softib_init);
module_exit(softib_exit);
MODULE_DESCRIPTION("Soft InfiniBand HCA for the ib_cm-rs test guest");
MODULE_LICENSE("Dual BSD/GPL");
