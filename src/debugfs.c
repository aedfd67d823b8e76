// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * debugfs: /sys/kernel/debug/ib_cm/<device>/{listeners,ids,conn_ahs,stats}
 * (src/entry/debugfs.rs writes the lines). The in-tree CM has nothing like it.
 * debugfs_remove() waits for readers, so a device's files never outlive its state.
 */
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/seq_file.h>
#include <rdma/ib_verbs.h>

#include <ib_cm_glue.h>

static struct dentry *ibcm_debugfs_root;

static int ibcm_listeners_show(struct seq_file *m, void *unused)
{
	ibcm_rs_debugfs_listeners(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ibcm_listeners);

static int ibcm_ids_show(struct seq_file *m, void *unused)
{
	ibcm_rs_debugfs_ids(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ibcm_ids);

static int ibcm_conn_ahs_show(struct seq_file *m, void *unused)
{
	ibcm_rs_debugfs_conn_ahs(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ibcm_conn_ahs);

static int ibcm_stats_show(struct seq_file *m, void *unused)
{
	ibcm_rs_debugfs_stats(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ibcm_stats);

void ibcm_glue_debugfs_init(void)
{
	struct dentry *d = debugfs_create_dir("ib_cm", NULL);

	ibcm_debugfs_root = IS_ERR(d) ? NULL : d;
}

void ibcm_glue_debugfs_exit(void)
{
	debugfs_remove(ibcm_debugfs_root);
	ibcm_debugfs_root = NULL;
}

struct dentry *ibcm_glue_debugfs_add_device(struct ib_device *device, void *cm_dev)
{
	struct dentry *dir;

	if (!ibcm_debugfs_root)
		return NULL;
	dir = debugfs_create_dir(dev_name(&device->dev), ibcm_debugfs_root);
	if (IS_ERR(dir))
		return NULL;
	debugfs_create_file("listeners", 0400, dir, cm_dev, &ibcm_listeners_fops);
	debugfs_create_file("ids", 0400, dir, cm_dev, &ibcm_ids_fops);
	debugfs_create_file("conn_ahs", 0400, dir, cm_dev, &ibcm_conn_ahs_fops);
	debugfs_create_file("stats", 0400, dir, cm_dev, &ibcm_stats_fops);
	return dir;
}

void ibcm_glue_debugfs_remove(struct dentry *dir)
{
	debugfs_remove(dir);
}

void ibcm_glue_seq_listeners_header(struct seq_file *m)
{
	seq_puts(m, "service_id         shares in_flight handler                          context\n");
}

void ibcm_glue_seq_listener(struct seq_file *m, u64 service_id, u32 shares, u32 in_flight,
			    const void *handler, const void *context)
{
	seq_printf(m, "0x%016llx %6u %9u %-32ps %p\n", service_id, shares, in_flight, handler,
		   context);
}

void ibcm_glue_seq_ids_header(struct seq_file *m)
{
	seq_puts(m, "local_id   remote_id  state         service_id         conn_ah\n");
}

void ibcm_glue_seq_id(struct seq_file *m, u32 local_id, u32 remote_id, const char *state,
		      size_t state_len, u64 service_id, const char *conn_ah, size_t conn_ah_len)
{
	seq_printf(m, "0x%08x 0x%08x %-13.*s 0x%016llx %.*s\n", local_id, remote_id,
		   (int)state_len, state, service_id, (int)conn_ah_len, conn_ah);
}

void ibcm_glue_seq_stats(struct seq_file *m, u64 slow_destroys, u32 timewait_ids)
{
	seq_printf(m, "destroy_waits_over_budget %llu\ntimewait_ids %u\n", slow_destroys,
		   timewait_ids);
}

#define IBCM_REJ_NAME(_name, _g, _index) [_index] = #_name,

void ibcm_glue_seq_rej(struct seq_file *m, u32 port, const char *dir, const u64 *counts)
{
	static const char *const names[IBCM_REJ_SLOTS] = { IBCM_REJ_COUNTED(IBCM_REJ_NAME, 0) };
	int i;

	seq_printf(m, "port %u %s", port, dir);
	for (i = 0; i < IBCM_REJ_SLOTS; i++)
		if (counts[i])
			seq_printf(m, " %s=%llu", names[i] ? names[i] : "other", counts[i]);
	seq_putc(m, '\n');
}

/*
 * Two lines per port: its flow control of sends (a limit of 0 means none) and its received
 * MADs waiting for the CM's work (a limit of 0 means none).
 */
void ibcm_glue_seq_flow(struct seq_file *m, u32 port, u32 limit, u32 outstanding, u32 backlog,
			u32 high_water, u64 refused, u32 recv_queued, u32 recv_limit,
			u64 recv_dropped)
{
	seq_printf(m, "port %u flow_limit %u outstanding %u backlog %u backlog_high_water %u refused %llu\n",
		   port, limit, outstanding, backlog, high_water, refused);
	seq_printf(m, "port %u recv_queued %u recv_queue_limit %u dropped_overload %llu\n", port,
		   recv_queued, recv_limit, recv_dropped);
}

void ibcm_glue_seq_conn_ahs(struct seq_file *m, u32 held, u32 limit, u64 over_budget, u64 failed)
{
	seq_printf(m, "held %u\nlimit %u\nover_budget %llu\nfailed %llu\n", held, limit,
		   over_budget, failed);
}
