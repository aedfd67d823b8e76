// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A minimal in-kernel CM consumer for the interop tests: listens with ib_cm_insert_listen()
 * on `dev` for the service IDs of rping (TCP port space 0x0106, port 7174) and udaddy (UDP
 * port space 0x0111, port 7174), logs every field it checks, and turns every request down:
 * a REQ gets REJ CONSUMER_DEFINED with private data "ULP-REJECT", a SIDR_REQ gets SIDR_REP
 * REJECT. It uses only the exported API, so it runs on either CM.
 */
#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>

static char *dev = "rxe0";
module_param(dev, charp, 0444);
/*
 * reject: answer with ib_send_cm_rej / ib_send_cm_sidr_rep, then return non-zero;
 * enomem: return -ENOMEM without answering (the CM must drop a REQ silently);
 * error:  return -EINVAL without answering (the CM must send REJ 28 / SIDR_REP REJECT);
 * defer:  keep the id and answer 1.5 s later from a work item (retransmissions of the
 *         request arrive meanwhile and must be recognised as duplicates);
 * accept: answer a REQ with a REP from the handler (a made-up QPN: no QP is needed for the
 *         CM's part), answer a DREQ with a DREP, and give the id back to the CM (non-zero
 *         return) once its timewait is over.
 */
static char mode[16] = "reject";
module_param_string(mode, mode, sizeof(mode), 0644);

#define RPING_SID 0x0000000001061C06ULL
#define UDADDY_SID 0x0000000001111C06ULL

static const char reject_pd[] = "ULP-REJECT";
static struct workqueue_struct *ulp_wq;

struct deferred {
	struct delayed_work work;
	struct ib_cm_id *id;
	bool sidr;
};

static void ulp_answer_late(struct work_struct *w)
{
	struct deferred *d = container_of(to_delayed_work(w), struct deferred, work);

	if (d->sidr) {
		struct ib_cm_sidr_rep_param rep = { .status = IB_SIDR_REJECT };

		pr_info("ULP-SIDR-REP ret=%d (deferred)\n", ib_send_cm_sidr_rep(d->id, &rep));
	} else {
		pr_info("ULP-REJ ret=%d (deferred)\n",
			ib_send_cm_rej(d->id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0, reject_pd,
				       sizeof(reject_pd) - 1));
	}
	ib_destroy_cm_id(d->id);
	kfree(d);
}

/* Keeps `id` and answers later; returns 0 (the id stays ours) or -ENOMEM. */
static int defer_answer(struct ib_cm_id *id, bool sidr)
{
	struct deferred *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	d->id = id;
	d->sidr = sidr;
	INIT_DELAYED_WORK(&d->work, ulp_answer_late);
	queue_delayed_work(ulp_wq, &d->work, msecs_to_jiffies(1500));
	return 0;
}
/* Accepted ids not yet given back to the CM: destroyed at unload if still here. */
static DEFINE_SPINLOCK(accepted_lock);
static struct ib_cm_id *accepted[8];
static bool closing;		/* unload has started: accept nothing more */

/*
 * Puts `new` in the first slot that holds `old`: an add (`old` NULL; refused once unload has
 * started) or a take (`new` NULL). False if no slot holds `old`: no room, or the id is not
 * there (unload is destroying it).
 */
static bool accepted_swap(struct ib_cm_id *old, struct ib_cm_id *new)
{
	bool done = false;
	int i;

	spin_lock(&accepted_lock);
	for (i = 0; i < ARRAY_SIZE(accepted) && !done && !(new && closing); i++) {
		if (accepted[i] == old) {
			accepted[i] = new;
			done = true;
		}
	}
	spin_unlock(&accepted_lock);
	return done;
}

static struct ib_device *ibdev;
static struct ib_cm_id *listen_req, *listen_sidr;

static int ulp_handler(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	if (ev->event == IB_CM_REQ_RECEIVED) {
		const struct ib_cm_req_event_param *p = &ev->param.req_rcvd;
		const u8 *pd = ev->private_data;

		pr_info("ULP-REQ sid=%016llx listen=%d state=%d pkey=%04x bth_pkey=%04x qpn=%06x psn=%06x port=%u ctx_null=%d alt=%d sgid_attr=%d cma_src=%pI4 pd=%*phN\n",
			be64_to_cpu(p->primary_path->service_id), p->listen_id == listen_req,
			id->state, be16_to_cpu(p->primary_path->pkey), p->bth_pkey,
			p->remote_qpn, p->starting_psn, p->port, id->context == NULL,
			p->alternate_path != NULL, p->ppath_sgid_attr != NULL, pd + 16, 16, pd);
		if (!strncmp(mode, "enomem", 6))
			return -ENOMEM;
		if (!strncmp(mode, "error", 5))
			return -EINVAL;
		if (!strncmp(mode, "defer", 5))
			return defer_answer(id, false);
		if (!strncmp(mode, "accept", 6)) {
			struct ib_cm_rep_param rep = {
				.qp_num = 0x4321,
				.starting_psn = 0x77,
				.responder_resources = 1,
				.initiator_depth = 1,
				.rnr_retry_count = 7,
			};

			/* No room, or unloading: the CM destroys the id (REJ CONSUMER_DEFINED). */
			if (!accepted_swap(NULL, id))
				return -ENOSPC;
			pr_info("ULP-REP ret=%d\n", ib_send_cm_rep(id, &rep));
			return 0;
		}
		pr_info("ULP-REJ ret=%d\n",
			ib_send_cm_rej(id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0, reject_pd,
				       sizeof(reject_pd) - 1));
		/* Non-zero: the CM destroys the id (no second REJ, it is IDLE now). */
		return -ECONNREFUSED;
	}
	if (ev->event == IB_CM_SIDR_REQ_RECEIVED) {
		const struct ib_cm_sidr_req_event_param *p = &ev->param.sidr_req_rcvd;
		struct ib_cm_sidr_rep_param rep = { .status = IB_SIDR_REJECT };

		pr_info("ULP-SIDR sid=%016llx listen=%d state=%d pkey=%04x port=%u pd=%*phN\n",
			be64_to_cpu(p->service_id), p->listen_id == listen_sidr, id->state,
			p->pkey, p->port, 16, (const u8 *)ev->private_data);
		if (!strncmp(mode, "error", 5))
			return -EINVAL;
		if (!strncmp(mode, "defer", 5))
			return defer_answer(id, true);
		pr_info("ULP-SIDR-REP ret=%d\n", ib_send_cm_sidr_rep(id, &rep));
		return -ECONNREFUSED;
	}
	pr_info("ULP-EVENT %d state=%d\n", ev->event, id->state);
	if (ev->event == IB_CM_DREQ_RECEIVED)
		pr_info("ULP-DREP ret=%d\n", ib_send_cm_drep(id, NULL, 0));
	/* Accepted connections end here: the CM destroys the id (now IDLE). */
	if (ev->event == IB_CM_TIMEWAIT_EXIT && accepted_swap(id, NULL))
		return 1;
	return 0;
}

static int __init ulp_init(void)
{
	ulp_wq = alloc_workqueue("ib_cm_test_ulp", 0, 0);
	if (!ulp_wq)
		return -ENOMEM;
	ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev) {
		destroy_workqueue(ulp_wq);
		return -ENODEV;
	}
	listen_req = ib_cm_insert_listen(ibdev, ulp_handler, cpu_to_be64(RPING_SID));
	if (IS_ERR(listen_req))
		goto err_dev;
	listen_sidr = ib_cm_insert_listen(ibdev, ulp_handler, cpu_to_be64(UDADDY_SID));
	if (IS_ERR(listen_sidr)) {
		ib_destroy_cm_id(listen_req);
		listen_req = listen_sidr;
		goto err_dev;
	}
	pr_info("ULP-READY dev=%s\n", dev);
	return 0;
err_dev:
	ib_device_put(ibdev);
	destroy_workqueue(ulp_wq);
	return PTR_ERR(listen_req);
}

static void __exit ulp_exit(void)
{
	int i;

	spin_lock(&accepted_lock);
	closing = true;
	spin_unlock(&accepted_lock);
	/*
	 * Destroying a listener waits for the REQ handlers running through it: after this, no
	 * id is accepted or deferred any more.
	 */
	ib_destroy_cm_id(listen_sidr);
	ib_destroy_cm_id(listen_req);
	/* Deferred answers run on our workqueue; destroying it lets them finish. */
	destroy_workqueue(ulp_wq);
	for (i = 0; i < ARRAY_SIZE(accepted); i++) {
		struct ib_cm_id *id;

		spin_lock(&accepted_lock);
		id = accepted[i];
		accepted[i] = NULL;
		spin_unlock(&accepted_lock);
		if (id) {
			pr_info("ULP-LEFTOVER state=%d\n", id->state);
			ib_destroy_cm_id(id);
		}
	}
	ib_device_put(ibdev);
}

module_init(ulp_init);
module_exit(ulp_exit);
MODULE_DESCRIPTION("ib_cm interop test consumer");
MODULE_LICENSE("Dual BSD/GPL");
