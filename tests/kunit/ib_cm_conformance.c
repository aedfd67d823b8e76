// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Black-box conformance suite of the ib_cm listen API.
 *
 * Calls only the exported <rdma/ib_cm.h> API on real rxe devices, so it runs unchanged on the
 * in-tree C ib_cm and on ib_cm-rs; `make check` runs it once against each. Where ib_cm-rs
 * deliberately differs from C (documented in the README and Documentation/design.rst), the
 * case checks each side for its own documented behaviour, selected by the `cm=` parameter:
 * nothing is skipped silently.
 *
 * Parameters: dev0=, dev1= (two CM-capable devices, e.g. rxe0 rxe1), cm= ("c" or "rs").
 * Each case names the cm.c function whose behaviour it mirrors.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>

static char *dev0 = "rxe0";
static char *dev1 = "rxe1";
static char *cm = "rs";
module_param(dev0, charp, 0444);
module_param(dev1, charp, 0444);
module_param(cm, charp, 0444);
MODULE_PARM_DESC(cm, "which CM is loaded: c (in-tree) or rs (ib_cm-rs)");

#define SID_BASE 0x0000000001061C00ULL /* rdma_cm TCP port space, ports from 7168 */
#define ASSIGN 0x0200000000000000ULL

static bool is_rs(void)
{
	return !strcmp(cm, "rs");
}

static int handler_a(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	return 0;
}

/* Differs from handler_a so that the two can never be folded into one address. */
static int handler_b(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	return -EINVAL;
}

struct conf_ctx {
	struct ib_device *d0, *d1;
};

static int conf_init(struct kunit *test)
{
	struct conf_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->d0 = ib_device_get_by_name(dev0, RDMA_DRIVER_UNKNOWN);
	c->d1 = ib_device_get_by_name(dev1, RDMA_DRIVER_UNKNOWN);
	KUNIT_ASSERT_NOT_NULL_MSG(test, c->d0, "device %s not found", dev0);
	KUNIT_ASSERT_NOT_NULL_MSG(test, c->d1, "device %s not found", dev1);
	test->priv = c;
	return 0;
}

static void conf_exit(struct kunit *test)
{
	struct conf_ctx *c = test->priv;

	if (!c)
		return;
	if (c->d0)
		ib_device_put(c->d0);
	if (c->d1)
		ib_device_put(c->d1);
}

/* Nothing is left listening on (dev, sid): a fresh ib_cm_listen() there succeeds. */
static void expect_free(struct kunit *test, struct ib_device *dev, u64 sid)
{
	struct ib_cm_id *id = ib_create_cm_id(dev, handler_a, NULL);

	KUNIT_ASSERT_FALSE(test, IS_ERR(id));
	KUNIT_EXPECT_EQ_MSG(test, ib_cm_listen(id, cpu_to_be64(sid)), 0,
			    "service id %llx still has a listener", sid);
	ib_destroy_cm_id(id);
}

/* ib_create_cm_id() / cm_alloc_id_priv(): a new id is IDLE with remote_cm_qpn 1. */
static void create_id_defaults(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	int ctx;
	struct ib_cm_id *id = ib_create_cm_id(c->d0, handler_a, &ctx);

	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(id));
	KUNIT_EXPECT_EQ(test, id->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, id->remote_cm_qpn, 1);
	KUNIT_EXPECT_PTR_EQ(test, id->device, c->d0);
	KUNIT_EXPECT_PTR_EQ(test, id->context, (void *)&ctx);
	KUNIT_EXPECT_TRUE(test, id->cm_handler == handler_a);
	/* Callers own context and cm_handler and may rewrite them. */
	id->context = NULL;
	id->cm_handler = handler_b;
	ib_destroy_cm_id(id);
}

/* ib_cm_insert_listen() / cm_insert_listen(): sharing rules. */
static void insert_listen_shares(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	u64 sid = SID_BASE + 1;
	struct ib_cm_id *a, *b, *x, *d;

	a = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(sid));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(a));
	KUNIT_EXPECT_EQ(test, a->state, IB_CM_LISTEN);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(a->service_id), sid);
	KUNIT_EXPECT_NULL(test, a->context);
	KUNIT_EXPECT_TRUE(test, a->cm_handler == handler_a);
	KUNIT_EXPECT_PTR_EQ(test, a->device, c->d0);
	/*
	 * A figure, not a test: C embeds struct ib_cm_id at offset 0 of its kzalloc'ed
	 * cm_id_private, so ksize() of the handle is what one listener costs. ib_cm-rs prints
	 * its own figure at load.
	 */
	if (!is_rs())
		pr_info("IBCM-MEM: c listener: cm_id_private slab %zu B\n", ksize(a));

	b = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(sid));
	KUNIT_EXPECT_PTR_EQ(test, b, a);

	/* Different handler: -EINVAL, not -EBUSY. */
	x = ib_cm_insert_listen(c->d0, handler_b, cpu_to_be64(sid));
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(x), -EINVAL);

	/* The first destroy only drops a share: the listener stays and is still shared. */
	ib_destroy_cm_id(b);
	KUNIT_EXPECT_EQ(test, a->state, IB_CM_LISTEN);
	d = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(sid));
	KUNIT_EXPECT_PTR_EQ(test, d, a);
	ib_destroy_cm_id(d);
	ib_destroy_cm_id(a);
	expect_free(test, c->d0, sid);
}

/* A listener with a context (ib_cm_listen() keeps the creator's) is never shared. */
static void listen_with_context_is_not_shared(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	u64 sid = SID_BASE + 2;
	int ctx;
	struct ib_cm_id *id, *other, *x;

	id = ib_create_cm_id(c->d0, handler_a, &ctx);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(id));
	KUNIT_EXPECT_EQ(test, ib_cm_listen(id, cpu_to_be64(sid)), 0);
	KUNIT_EXPECT_EQ(test, id->state, IB_CM_LISTEN);
	KUNIT_EXPECT_PTR_EQ(test, id->context, (void *)&ctx);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(id->service_id), sid);

	x = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(sid));
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(x), -EINVAL);

	/* ib_cm_listen(): any collision is -EBUSY; a non-IDLE id is -EINVAL. */
	other = ib_create_cm_id(c->d0, handler_a, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(other));
	KUNIT_EXPECT_EQ(test, ib_cm_listen(other, cpu_to_be64(sid)), -EBUSY);
	KUNIT_EXPECT_EQ(test, other->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, ib_cm_listen(id, cpu_to_be64(sid + 100)), -EINVAL);
	ib_destroy_cm_id(other);
	ib_destroy_cm_id(id);
	expect_free(test, c->d0, sid);
	expect_free(test, c->d0, sid + 100);
}

/* ib_cm_listen() collides with an ib_cm_insert_listen() listener: -EBUSY. */
static void listen_collides_with_shared_listener(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	u64 sid = SID_BASE + 3;
	struct ib_cm_id *l, *id;

	l = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(sid));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(l));
	id = ib_create_cm_id(c->d0, handler_a, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(id));
	KUNIT_EXPECT_EQ(test, ib_cm_listen(id, cpu_to_be64(sid)), -EBUSY);
	ib_destroy_cm_id(id);
	ib_destroy_cm_id(l);
	expect_free(test, c->d0, sid);
}

/* cm_init_listen(): the rest of the 0x02 range is reserved. */
static void reserved_service_ids(struct kunit *test)
{
	static const u64 bad[] = { ASSIGN + 1, 0x02123456789ABCDEULL, 0x02FFFFFFFFFFFFFFULL };
	struct conf_ctx *c = test->priv;
	struct ib_cm_id *id;
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ib_cm_id *l = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(bad[i]));

		KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(l), -EINVAL);
		id = ib_create_cm_id(c->d0, handler_a, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(id));
		KUNIT_EXPECT_EQ(test, ib_cm_listen(id, cpu_to_be64(bad[i])), -EINVAL);
		KUNIT_EXPECT_EQ(test, id->state, IB_CM_IDLE);
		ib_destroy_cm_id(id);
	}
}

/*
 * cm_init_listen() with IB_CM_ASSIGN_SERVICE_ID. This case must run first in the suite: the
 * first ID either CM hands out after loading equals the ASSIGN constant, then they count up.
 * C keeps one global counter for all devices; ib_cm-rs keeps one per device (under that
 * device's lock), so the first ID on the second device differs by design.
 */
static void assign_service_id(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	struct ib_cm_id *a, *b, *d, *id;
	u64 sa, sb, sd;

	a = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(ASSIGN));
	b = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(ASSIGN));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(a));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(b));
	sa = be64_to_cpu(a->service_id);
	sb = be64_to_cpu(b->service_id);
	KUNIT_EXPECT_EQ(test, sa, ASSIGN);
	KUNIT_EXPECT_EQ(test, sb, ASSIGN + 1);
	KUNIT_EXPECT_PTR_NE(test, a, b);

	d = ib_cm_insert_listen(c->d1, handler_a, cpu_to_be64(ASSIGN));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(d));
	sd = be64_to_cpu(d->service_id);
	if (is_rs())
		KUNIT_EXPECT_EQ_MSG(test, sd, ASSIGN, "ib_cm-rs: per-device allocator");
	else
		KUNIT_EXPECT_EQ_MSG(test, sd, ASSIGN + 2, "C: one global counter");

	/* ib_cm_listen() assigns too, and the id reads back the assigned ID. */
	id = ib_create_cm_id(c->d0, handler_a, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(id));
	KUNIT_EXPECT_EQ(test, ib_cm_listen(id, cpu_to_be64(ASSIGN)), 0);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(id->service_id) >> 56, 0x02ULL);
	KUNIT_EXPECT_GT(test, be64_to_cpu(id->service_id), sb);
	ib_destroy_cm_id(id);
	ib_destroy_cm_id(d);
	ib_destroy_cm_id(b);
	ib_destroy_cm_id(a);
}

/* Each device owns its listeners: the same service ID on two devices is two listeners. */
static void devices_are_independent(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	u64 sid = SID_BASE + 4;
	struct ib_cm_id *l0, *l1, *id;

	l0 = ib_cm_insert_listen(c->d0, handler_a, cpu_to_be64(sid));
	l1 = ib_cm_insert_listen(c->d1, handler_a, cpu_to_be64(sid));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(l0));
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(l1));
	KUNIT_EXPECT_PTR_NE(test, l0, l1);
	KUNIT_EXPECT_PTR_EQ(test, l1->device, c->d1);
	ib_destroy_cm_id(l0);
	KUNIT_EXPECT_EQ(test, l1->state, IB_CM_LISTEN);
	expect_free(test, c->d0, sid);
	/* dev1's listener is untouched: a plain listen there still collides. */
	id = ib_create_cm_id(c->d1, handler_a, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(id));
	KUNIT_EXPECT_EQ(test, ib_cm_listen(id, cpu_to_be64(sid)), -EBUSY);
	ib_destroy_cm_id(id);
	ib_destroy_cm_id(l1);
	expect_free(test, c->d1, sid);
}

/* ibcm_reject_msg(): the REJ reason table. */
static void reject_messages(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(IB_CM_REJ_INVALID_SERVICE_ID), "invalid service ID");
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(IB_CM_REJ_CONSUMER_DEFINED), "consumer defined");
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED),
			   "vendor option is not supported");
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(34), "unrecognized reason");
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(0), "unrecognized reason");
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(-1), "unrecognized reason");
	KUNIT_EXPECT_STREQ(test, ibcm_reject_msg(36), "unrecognized reason");
}

/*
 * Bad arguments. ib_cm-rs refuses a NULL device or handler with -EINVAL; C accepts both
 * (it never dereferences the device on these paths), so on C the case checks that it does
 * and cleans up.
 */
static void bad_arguments(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	struct ib_cm_id *id;

	id = ib_cm_insert_listen(c->d0, NULL, cpu_to_be64(SID_BASE + 5));
	if (is_rs()) {
		KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(id), -EINVAL);
	} else {
		KUNIT_EXPECT_FALSE(test, IS_ERR_OR_NULL(id));
		if (!IS_ERR_OR_NULL(id))
			ib_destroy_cm_id(id);
	}
	id = ib_create_cm_id(NULL, handler_a, NULL);
	if (is_rs()) {
		KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(id), -EINVAL);
	} else {
		KUNIT_EXPECT_FALSE(test, IS_ERR_OR_NULL(id));
		if (!IS_ERR_OR_NULL(id))
			ib_destroy_cm_id(id);
	}
	if (is_rs()) {
		KUNIT_EXPECT_EQ(test, ib_cm_listen(NULL, cpu_to_be64(SID_BASE + 5)), -EINVAL);
		/* Must be a harmless no-op. */
		ib_destroy_cm_id(NULL);
	}
	expect_free(test, c->d0, SID_BASE + 5);
}

/* --- concurrency: kthreads inserting, sharing and destroying --- */

#define STRESS_THREADS 4
#define STRESS_ITERS 3000
#define STRESS_SIDS 4
#define STRESS_HELD 8
/*
 * Each thread stops after STRESS_ITERS iterations or this long, whichever comes first: under
 * TCG on a loaded host four threads on two vCPUs took 36-39 s (a vCPU that holds a lock
 * is descheduled by the host while the other spins), and a KUnit case that runs longer than
 * the guest's hung-task timeout (30 s) makes khungtaskd report the waiting insmod.
 */
#define STRESS_SECS 12
/* Each thread must still do this many: the races need all four running at once. */
#define STRESS_MIN_ITERS 100

struct stress;
struct stress_arg {
	struct stress *s;
	u32 seed;
};

struct stress {
	struct conf_ctx *c;
	atomic_t errors;
	atomic_t inserted;
	atomic_t mismatches;
	atomic_t idle_races;
	atomic_t running;
	atomic_t iters;
	atomic_t short_runs;
	unsigned long deadline;
	struct completion done;
	struct stress_arg args[STRESS_THREADS];
};

static int stress_thread(void *arg)
{
	struct stress_arg *a = arg;
	struct stress *s = a->s;
	struct ib_cm_id *held[STRESS_HELD] = {};
	u64 held_sid[STRESS_HELD] = {};
	struct ib_device *held_dev[STRESS_HELD] = {};
	u32 x = a->seed | 1;
	int i, slot;

	for (i = 0; i < STRESS_ITERS && time_before(jiffies, s->deadline); i++) {
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		slot = x % STRESS_HELD;
		if (held[slot]) {
			/* A held share still reads as the listener it was handed out as. */
			if (held[slot]->state != IB_CM_LISTEN || held[slot]->device != held_dev[slot] ||
			    be64_to_cpu(held[slot]->service_id) != held_sid[slot])
				atomic_inc(&s->errors);
			ib_destroy_cm_id(held[slot]);
			held[slot] = NULL;
		} else {
			struct ib_device *dev = (x >> 8) & 1 ? s->c->d1 : s->c->d0;
			u64 sid = SID_BASE + 0x40 + ((x >> 9) % STRESS_SIDS);
			struct ib_cm_id *id = ib_cm_insert_listen(dev, handler_a, cpu_to_be64(sid));

			/*
			 * The plain ib_cm_listen() racers below listen with handler_b: while one
			 * holds the ID, the sharing rule gives -EINVAL. Anything else is an error.
			 */
			if (PTR_ERR_OR_ZERO(id) == -EINVAL && dev == s->c->d0) {
				atomic_inc(&s->mismatches);
				continue;
			}
			/*
			 * C links a new listener into its tree before it sets the state to
			 * LISTEN (ib_cm_insert_listen, cm.c), so a racing sharer can read IDLE.
			 * Counted apart: ib_cm-rs must never show it, C may.
			 */
			if (!IS_ERR_OR_NULL(id) && id->state == IB_CM_IDLE &&
			    be64_to_cpu(id->service_id) == sid && id->device == dev)
				atomic_inc(&s->idle_races);
			else if (IS_ERR_OR_NULL(id) || id->state != IB_CM_LISTEN ||
			    be64_to_cpu(id->service_id) != sid || id->device != dev) {
				atomic_inc(&s->errors);
				if (!IS_ERR_OR_NULL(id))
					ib_destroy_cm_id(id);
				continue;
			}
			atomic_inc(&s->inserted);
			held[slot] = id;
			held_sid[slot] = sid;
			held_dev[slot] = dev;
		}
		/* Plain ib_cm_listen() on the same IDs races too: only 0 or -EBUSY are valid. */
		if ((x & 0xF) == 0) {
			struct ib_cm_id *id = ib_create_cm_id(s->c->d0, handler_b, NULL);
			int ret;

			if (IS_ERR(id)) {
				atomic_inc(&s->errors);
				continue;
			}
			ret = ib_cm_listen(id, cpu_to_be64(SID_BASE + 0x40 + (x >> 4) % STRESS_SIDS));
			if (ret != 0 && ret != -EBUSY)
				atomic_inc(&s->errors);
			ib_destroy_cm_id(id);
		}
		if ((i & 63) == 0)
			cond_resched();
	}
	/* Counted once per thread: a shared counter in the loop would serialise the racers. */
	atomic_add(i, &s->iters);
	if (i < STRESS_MIN_ITERS)
		atomic_inc(&s->short_runs);
	for (slot = 0; slot < STRESS_HELD; slot++)
		if (held[slot])
			ib_destroy_cm_id(held[slot]);
	if (atomic_dec_and_test(&s->running))
		complete(&s->done);
	return 0;
}

static void concurrent_share_and_destroy(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	struct stress *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, s);
	s->c = c;
	s->deadline = jiffies + STRESS_SECS * HZ;
	init_completion(&s->done);
	atomic_set(&s->running, STRESS_THREADS);
	for (i = 0; i < STRESS_THREADS; i++) {
		struct task_struct *t;

		s->args[i].s = s;
		s->args[i].seed = get_random_u32();
		t = kthread_run(stress_thread, &s->args[i], "ibcm_conf/%d", i);
		if (IS_ERR(t)) {
			KUNIT_FAIL(test, "kthread_run failed");
			if (atomic_dec_and_test(&s->running))
				complete(&s->done);
		}
	}
	wait_for_completion(&s->done);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->errors), 0);
	/* About every other iteration takes a share; a short run must still have done work. */
	KUNIT_EXPECT_EQ(test, atomic_read(&s->short_runs), 0);
	KUNIT_EXPECT_GT(test, atomic_read(&s->inserted), atomic_read(&s->iters) / 4);
	kunit_info(test, "%d iterations (of %d), %d shares taken, %d refused while a plain listener held the ID, %d read IDLE\n",
		   atomic_read(&s->iters), STRESS_THREADS * STRESS_ITERS,
		   atomic_read(&s->inserted), atomic_read(&s->mismatches),
		   atomic_read(&s->idle_races));
	if (is_rs())
		KUNIT_EXPECT_EQ(test, atomic_read(&s->idle_races), 0);
	/* Nothing left behind on either device. */
	for (i = 0; i < STRESS_SIDS; i++) {
		expect_free(test, c->d0, SID_BASE + 0x40 + i);
		expect_free(test, c->d1, SID_BASE + 0x40 + i);
	}
}

/* Concurrent IB_CM_ASSIGN_SERVICE_ID: ib_cm-rs never hands out the same ID twice. */
#define ASSIGN_PER 64

struct assign_stress;
struct assign_arg {
	struct assign_stress *s;
	int idx;
};

struct assign_stress {
	atomic_t running;
	struct completion done;
	struct ib_device *dev;
	struct assign_arg args[STRESS_THREADS];
	struct ib_cm_id *ids[STRESS_THREADS][ASSIGN_PER];
};

static int assign_thread(void *arg)
{
	struct assign_arg *a = arg;
	struct assign_stress *s = a->s;
	int i;

	for (i = 0; i < ASSIGN_PER; i++)
		s->ids[a->idx][i] = ib_cm_insert_listen(s->dev, handler_a, cpu_to_be64(ASSIGN));
	if (atomic_dec_and_test(&s->running))
		complete(&s->done);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * C advances its counter without a lock (spec 2.2), so two racing callers can get the same
 * ID (and then share one listener); ib_cm-rs allocates under the device lock. On C the
 * duplicate count is reported, on ib_cm-rs it must be 0.
 */
static void concurrent_assign_is_unique(struct kunit *test)
{
	struct conf_ctx *c = test->priv;
	struct assign_stress *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	u64 *sids = kunit_kcalloc(test, STRESS_THREADS * ASSIGN_PER, sizeof(u64), GFP_KERNEL);
	int i, j, n = 0, dups = 0, errors = 0;

	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_ASSERT_NOT_NULL(test, sids);
	s->dev = c->d1;
	init_completion(&s->done);
	atomic_set(&s->running, STRESS_THREADS);
	for (i = 0; i < STRESS_THREADS; i++) {
		struct task_struct *t;

		s->args[i].s = s;
		s->args[i].idx = i;
		t = kthread_run(assign_thread, &s->args[i], "ibcm_asg/%d", i);
		if (IS_ERR(t)) {
			KUNIT_FAIL(test, "kthread_run failed");
			if (atomic_dec_and_test(&s->running))
				complete(&s->done);
		}
	}
	wait_for_completion(&s->done);
	for (i = 0; i < STRESS_THREADS; i++)
		for (j = 0; j < ASSIGN_PER; j++) {
			struct ib_cm_id *id = s->ids[i][j];

			if (IS_ERR_OR_NULL(id)) {
				errors++;
				continue;
			}
			if (be64_to_cpu(id->service_id) >> 56 != 0x02)
				errors++;
			sids[n++] = be64_to_cpu(id->service_id);
		}
	sort(sids, n, sizeof(u64), cmp_u64, NULL);
	for (i = 1; i < n; i++)
		if (sids[i] == sids[i - 1])
			dups++;
	KUNIT_EXPECT_EQ(test, errors, 0);
	if (is_rs())
		KUNIT_EXPECT_EQ(test, dups, 0);
	else
		kunit_info(test, "C CM handed out %d duplicate assigned IDs (unlocked counter)\n", dups);
	for (i = 0; i < STRESS_THREADS; i++)
		for (j = 0; j < ASSIGN_PER; j++)
			if (!IS_ERR_OR_NULL(s->ids[i][j]))
				ib_destroy_cm_id(s->ids[i][j]);
}

static struct kunit_case conformance_cases[] = {
	KUNIT_CASE(assign_service_id),
	KUNIT_CASE(create_id_defaults),
	KUNIT_CASE(insert_listen_shares),
	KUNIT_CASE(listen_with_context_is_not_shared),
	KUNIT_CASE(listen_collides_with_shared_listener),
	KUNIT_CASE(reserved_service_ids),
	KUNIT_CASE(devices_are_independent),
	KUNIT_CASE(reject_messages),
	KUNIT_CASE(bad_arguments),
	KUNIT_CASE_SLOW(concurrent_share_and_destroy),
	KUNIT_CASE(concurrent_assign_is_unique),
	{}
};

static struct kunit_suite conformance_suite = {
	.name = "ib_cm_conformance",
	.init = conf_init,
	.exit = conf_exit,
	.test_cases = conformance_cases,
};
kunit_test_suite(conformance_suite);

MODULE_DESCRIPTION("ib_cm listen API conformance suite (runs against C and Rust CMs)");
MODULE_LICENSE("Dual BSD/GPL");
