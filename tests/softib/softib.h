/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* softib: what the device core (softib.c) and its fault injection (softib_fault.c) share. */
#ifndef SOFTIB_H
#define SOFTIB_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <rdma/ib_verbs.h>

/* A UD packet on the simulated wire: what the receiver's completion is made from. */
struct softib_pkt {
	struct list_head list;
	unsigned long due;		/* jiffies: not delivered before */
	int src_dev;			/* index of the sending device */
	u16 slid;			/* the sender's LID with the AH's source path bits */
	u16 dlid;
	u8 sl;
	bool has_grh, has_imm, solicited;
	u32 src_qpn, dst_qpn, qkey;
	u16 pkey;			/* the P_Key value (not an index) */
	__be32 imm;
	struct ib_grh grh;
	u32 len;
	u8 data[];			/* the payload: for QP1, the MAD */
};

struct softib_stats {
	atomic_t delivered, drop_no_lid, drop_pkey, drop_dgid, drop_qp, drop_no_recv, drop_len,
		cq_overflow;
};
extern struct softib_stats softib_stats;
/* The counter `name` of softib_stats (as debugfs names it), or -ENOENT; exported. */
long softib_stat(const char *name);

/*
 * The LID layout of the simulated subnet: port 1 of softibN has base LID
 * `base_lid` + SOFTIB_LID_STRIDE * N (module parameter base_lid, default 0x10) and answers to
 * the 2^lmc LIDs from there. Both helpers are softib_main.c's; the fault rules use the second.
 */
#define SOFTIB_LID_STRIDE 0x10
u16 softib_port_lid(int index);
/* The index of the device whose port owns `lid`, or -1. */
int softib_dev_of_lid(u16 lid);

typedef void (*softib_put_fn)(struct softib_pkt *p, unsigned long delay);

/*
 * Hands a sent packet to the wire through `put` (once, several times, later, or not at all)
 * as the fault rules say. May run with IRQs off: allocates with GFP_ATOMIC only.
 */
void softib_fault_send(struct softib_pkt *p, softib_put_fn put);
void softib_fault_exit(void);

#endif
