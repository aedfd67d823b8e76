// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * softib fault injection: rules that drop, delay, duplicate or reorder the MADs a soft port
 * sends, chosen by management class, attribute ID, direction and count. Deterministic: a rule acts
 * on the Nth to Mth packet it matches, or with a probability drawn from a generator the test
 * seeds. A `hold` rule reorders: it keeps the packets it acts on off the wire until the next
 * packet of its `until` kind is sent, and puts them on the wire right behind that one. A
 * `keep` rule lets the packets it acts on through and keeps a copy of each off the wire until
 * the test says `release N`: a genuine copy of a message, delivered in whatever state the test
 * has driven the receiver to first.
 *
 * /sys/module/softib/parameters/faults (a parameter, not debugfs: a KUnit test writes and reads
 * it with kernel_write/kernel_read, which debugfs files do not support), one command a write:
 *   clear                       remove every rule (counters too)
 *   seed N                      reseed the generator of `prob=` rules
 *   release N                   put the copies keep rule N (0-based) holds on the wire now
 *   ACTION [KEY=VALUE ...]      append a rule; ACTION is drop, delay, dup, hold or keep
 * keys: class=0x07 (default: the CM class; `class=any`), attr=REQ|MRA|REJ|REP|RTU|DREQ|DREP|
 *   SIDR_REQ|SIDR_REP|LAP|APR|0xNNNN (default any), from=DEV and to=DEV (device indexes:
 *   softibN; default any), skip=N (let N matching packets through first), count=N (act on N
 *   packets, default 1; count=0: on every one), prob=P (percent; each candidate packet is
 *   acted on with that probability), ms=N (delay, default 100), copies=N (dup: extra copies,
 *   default 1), until=ATTR (hold: the attribute, in the rule's class, whose next packet
 *   releases the held ones; default any; a held packet never released is freed by `clear`).
 * Reading the file lists the rules with how many packets each matched and acted on (and, for
 * hold and keep, released); a test checks `acted` to know the fault really happened.
 */
#include <linux/moduleparam.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>

#include "softib.h"

enum softib_action { SOFTIB_DROP, SOFTIB_DELAY, SOFTIB_DUP, SOFTIB_HOLD, SOFTIB_KEEP };

#define SOFTIB_MAX_COPIES 16

struct softib_rule {
	struct list_head list;
	enum softib_action action;
	int mgmt_class;			/* -1: any */
	int attr_id;			/* -1: any */
	int from, to;			/* device index, -1: any */
	int until;			/* hold: the releasing attribute ID, -1: any */
	u32 skip, count, prob, ms, copies;
	u32 matched, acted, released;
	struct list_head held;		/* hold, keep: packets kept off the wire, in order */
	softib_put_fn put;		/* keep: how its copies go on the wire at `release` */
};

static DEFINE_SPINLOCK(softib_fault_lock);
static LIST_HEAD(softib_rules);
static u64 softib_rng = 1;

static const struct {
	const char *name;
	u16 id;
} softib_attr_names[] = {
	{ "REQ", 0x10 }, { "MRA", 0x11 }, { "REJ", 0x12 }, { "REP", 0x13 }, { "RTU", 0x14 },
	{ "DREQ", 0x15 }, { "DREP", 0x16 }, { "SIDR_REQ", 0x17 }, { "SIDR_REP", 0x18 },
	{ "LAP", 0x19 }, { "APR", 0x1a },
};

/* xorshift64: the same seed gives the same decisions in every boot. */
static u32 softib_random(void)
{
	softib_rng ^= softib_rng << 13;
	softib_rng ^= softib_rng >> 7;
	softib_rng ^= softib_rng << 17;
	return (u32)(softib_rng >> 32);
}

static bool softib_rule_matches(const struct softib_rule *r, const struct softib_pkt *p)
{
	const struct ib_mad_hdr *h = (const void *)p->data;

	if (p->dst_qpn != 1 || p->len < sizeof(*h))
		return false;
	if (r->mgmt_class >= 0 && h->mgmt_class != r->mgmt_class)
		return false;
	if (r->attr_id >= 0 && be16_to_cpu(h->attr_id) != r->attr_id)
		return false;
	if (r->from >= 0 && p->src_dev != r->from)
		return false;
	if (r->to >= 0 && softib_dev_of_lid(p->dlid) != r->to)
		return false;
	return true;
}

/* Whether `p` releases what hold rule `r` keeps: a MAD of the rule's class and `until` kind. */
static bool softib_releases(const struct softib_rule *r, const struct softib_pkt *p)
{
	const struct ib_mad_hdr *h = (const void *)p->data;

	if (r->action == SOFTIB_KEEP || list_empty(&r->held) || p->dst_qpn != 1 ||
	    p->len < sizeof(*h))
		return false;
	if (r->mgmt_class >= 0 && h->mgmt_class != r->mgmt_class)
		return false;
	return r->until < 0 || be16_to_cpu(h->attr_id) == r->until;
}

void softib_fault_send(struct softib_pkt *p, softib_put_fn put)
{
	enum softib_action action = SOFTIB_DROP;
	struct softib_pkt *h, *t;
	struct softib_rule *r;
	unsigned long flags;
	u32 ms = 0, copies = 0;
	struct softib_pkt *copy;
	bool act = false;
	LIST_HEAD(release);

	spin_lock_irqsave(&softib_fault_lock, flags);
	/* Taken before `p` meets the rules, so that `p` never releases itself. */
	list_for_each_entry(r, &softib_rules, list) {
		if (softib_releases(r, p)) {
			list_for_each_entry(h, &r->held, list)
				r->released++;
			list_splice_tail_init(&r->held, &release);
		}
	}
	list_for_each_entry(r, &softib_rules, list) {
		if (!softib_rule_matches(r, p))
			continue;
		r->matched++;
		if (r->matched <= r->skip)
			continue;
		if (r->count && r->acted >= r->count)
			continue;
		if (r->prob && softib_random() % 100 >= r->prob)
			continue;
		r->acted++;
		act = true;
		action = r->action;
		ms = r->ms;
		copies = r->copies;
		if (action == SOFTIB_HOLD)
			list_add_tail(&p->list, &r->held);
		if (action == SOFTIB_KEEP) {
			/* Atomic: under the rules' lock, as the wire's own copies are. */
			copy = kmemdup(p, sizeof(*p) + p->len, GFP_ATOMIC);
			if (copy) {
				list_add_tail(&copy->list, &r->held);
				r->put = put;
			}
		}
		break;
	}
	spin_unlock_irqrestore(&softib_fault_lock, flags);
	if (!act)
		action = SOFTIB_DELAY;
	switch (action) {
	case SOFTIB_HOLD:
		break;
	case SOFTIB_KEEP:
		put(p, 0);
		break;
	case SOFTIB_DROP:
		kfree(p);
		break;
	case SOFTIB_DELAY:
		put(p, act ? msecs_to_jiffies(ms) : 0);
		break;
	case SOFTIB_DUP: {
		struct softib_pkt *c[SOFTIB_MAX_COPIES];
		u32 i, n = 0;

		/*
		 * Every copy is made before `p` goes on the wire: once put, `p` belongs to the
		 * delivery work, which may free it at once. The copies go after the original,
		 * in order.
		 */
		for (i = 0; i < copies; i++) {
			c[n] = kmemdup(p, sizeof(*p) + p->len, GFP_ATOMIC);
			if (c[n])
				n++;
		}
		put(p, 0);
		for (i = 0; i < n; i++)
			put(c[i], 0);
		break;
	}
	}
	/* Behind the packet that released them: the receiver sees the two swapped. */
	list_for_each_entry_safe(h, t, &release, list) {
		list_del(&h->list);
		put(h, 0);
	}
}

static int softib_parse_u32(const char *v, u32 *out)
{
	return kstrtou32(v, 0, out);
}

static int softib_parse_rule(char *line, struct softib_rule *r)
{
	char *tok, *v;

	tok = strsep(&line, " \t");
	if (!strcmp(tok, "drop"))
		r->action = SOFTIB_DROP;
	else if (!strcmp(tok, "delay"))
		r->action = SOFTIB_DELAY;
	else if (!strcmp(tok, "dup"))
		r->action = SOFTIB_DUP;
	else if (!strcmp(tok, "hold"))
		r->action = SOFTIB_HOLD;
	else if (!strcmp(tok, "keep"))
		r->action = SOFTIB_KEEP;
	else
		return -EINVAL;
	r->mgmt_class = IB_MGMT_CLASS_CM;
	r->attr_id = r->from = r->to = r->until = -1;
	r->count = 1;
	r->ms = 100;
	r->copies = 1;
	while ((tok = strsep(&line, " \t"))) {
		u32 n;
		int i;

		if (!*tok)
			continue;
		v = strchr(tok, '=');
		if (!v)
			return -EINVAL;
		*v++ = 0;
		if (!strcmp(tok, "class")) {
			if (!strcmp(v, "any"))
				r->mgmt_class = -1;
			else if (softib_parse_u32(v, &n) || n > 0xff)
				return -EINVAL;
			else
				r->mgmt_class = n;
		} else if (!strcmp(tok, "attr") || !strcmp(tok, "until")) {
			int id = -2;

			for (i = 0; i < ARRAY_SIZE(softib_attr_names); i++)
				if (!strcasecmp(v, softib_attr_names[i].name))
					id = softib_attr_names[i].id;
			if (id == -2) {
				if (softib_parse_u32(v, &n) || n > 0xffff)
					return -EINVAL;
				id = n;
			}
			if (tok[0] == 'a')
				r->attr_id = id;
			else
				r->until = id;
		} else if (!strcmp(tok, "from") || !strcmp(tok, "to")) {
			if (softib_parse_u32(v, &n) || n > 3)
				return -EINVAL;
			if (tok[0] == 'f')
				r->from = n;
			else
				r->to = n;
		} else if (softib_parse_u32(v, &n)) {
			return -EINVAL;
		} else if (!strcmp(tok, "skip")) {
			r->skip = n;
		} else if (!strcmp(tok, "count")) {
			r->count = n;
		} else if (!strcmp(tok, "prob")) {
			if (n > 100)
				return -EINVAL;
			r->prob = n;
		} else if (!strcmp(tok, "ms")) {
			if (n > 60000)
				return -EINVAL;
			r->ms = n;
		} else if (!strcmp(tok, "copies")) {
			if (n > SOFTIB_MAX_COPIES)
				return -EINVAL;
			r->copies = n;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

static void softib_fault_clear(void)
{
	struct softib_rule *r, *t;
	unsigned long flags;
	LIST_HEAD(old);

	spin_lock_irqsave(&softib_fault_lock, flags);
	list_splice_init(&softib_rules, &old);
	spin_unlock_irqrestore(&softib_fault_lock, flags);
	list_for_each_entry_safe(r, t, &old, list) {
		struct softib_pkt *h, *ht;

		list_for_each_entry_safe(h, ht, &r->held, list)
			kfree(h);
		kfree(r);
	}
}

/* `release N`: keep rule N puts the copies it holds on the wire, in the order kept. */
static int softib_fault_release(const char *arg)
{
	struct softib_pkt *h, *t;
	struct softib_rule *r;
	softib_put_fn put = NULL;
	unsigned long flags;
	u32 idx, i = 0;
	int ret = -ENOENT;
	LIST_HEAD(release);

	if (kstrtou32(arg, 0, &idx))
		return -EINVAL;
	spin_lock_irqsave(&softib_fault_lock, flags);
	list_for_each_entry(r, &softib_rules, list) {
		if (i++ != idx)
			continue;
		ret = r->action == SOFTIB_KEEP ? 0 : -EINVAL;
		if (ret)
			break;
		list_for_each_entry(h, &r->held, list)
			r->released++;
		list_splice_tail_init(&r->held, &release);
		put = r->put;
		break;
	}
	spin_unlock_irqrestore(&softib_fault_lock, flags);
	list_for_each_entry_safe(h, t, &release, list) {
		list_del(&h->list);
		put(h, 0);
	}
	return ret;
}

/* Writing /sys/module/softib/parameters/faults: one command. */
static int softib_faults_set(const char *val, const struct kernel_param *kp)
{
	struct softib_rule *r;
	unsigned long flags;
	char buf[256], *line;
	int ret;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	line = strim(buf);
	if (!strcmp(line, "clear")) {
		softib_fault_clear();
		return 0;
	}
	if (!strncmp(line, "seed ", 5)) {
		u64 seed;

		if (kstrtou64(line + 5, 0, &seed))
			return -EINVAL;
		spin_lock_irqsave(&softib_fault_lock, flags);
		softib_rng = seed ? seed : 1;
		spin_unlock_irqrestore(&softib_fault_lock, flags);
		return 0;
	}
	if (!strncmp(line, "release ", 8))
		return softib_fault_release(line + 8);
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	INIT_LIST_HEAD(&r->held);
	ret = softib_parse_rule(line, r);
	if (ret) {
		kfree(r);
		return ret;
	}
	spin_lock_irqsave(&softib_fault_lock, flags);
	list_add_tail(&r->list, &softib_rules);
	spin_unlock_irqrestore(&softib_fault_lock, flags);
	return 0;
}

/* Reading it: the rules, one a line, with what each matched and acted on. */
static int softib_faults_get(char *buf, const struct kernel_param *kp)
{
	static const char *const names[] = { "drop", "delay", "dup", "hold", "keep" };
	struct softib_rule *r;
	int i = 0, n = 0;

	spin_lock_irq(&softib_fault_lock);
	list_for_each_entry(r, &softib_rules, list)
		n += scnprintf(buf + n, PAGE_SIZE - n,
			       "%d %s class=%d attr=%#x from=%d to=%d until=%#x skip=%u count=%u prob=%u ms=%u copies=%u matched=%u acted=%u released=%u\n",
			       i++, names[r->action], r->mgmt_class, r->attr_id, r->from, r->to,
			       r->until, r->skip, r->count, r->prob, r->ms, r->copies, r->matched,
			       r->acted, r->released);
	spin_unlock_irq(&softib_fault_lock);
	return n;
}

static const struct kernel_param_ops softib_faults_ops = {
	.set = softib_faults_set,
	.get = softib_faults_get,
};
module_param_cb(faults, &softib_faults_ops, NULL, 0644);
MODULE_PARM_DESC(faults, "fault rules: write a command, read the rules (see softib_fault.c)");

void softib_fault_exit(void)
{
	softib_fault_clear();
}
