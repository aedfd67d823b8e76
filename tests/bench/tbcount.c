// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A QEMU TCG plugin for `make bench-conn TBPROF=1` (a diagnostic, never part of a test): counts
 * the guest instructions executed per translation block, by the block's start address, while
 * counting is on. Counting starts when the guest executes the block at `on=` (the kernel's
 * sethostname syscall: the benchmark runs `hostname` before its measured rounds) and stops at
 * `off=` (the sync syscall, after them); kernel addresses only. At exit it writes
 * "ADDRESS INSNS EXECS" lines to `out=`, which tests/bench/tbprof.py maps to functions, but
 * only if the guest got to `off=`: a run cut short leaves no (partial) counts behind.
 *
 * The few entry points of QEMU's plugin API used here (stable since API version 1) are
 * declared below rather than taken from qemu-plugin.h, which Debian does not package.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*atexit_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
/* flags 0: QEMU_PLUGIN_CB_NO_REGS */
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, udata_cb_t cb, int flags,
					  void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, atexit_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 2;

/* One translation of a block (a block translated again gets a second record). */
struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t execs;
};

static struct block **blocks;
static size_t nblocks, capacity;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t on_addr, off_addr;
/* The benchmark's guests have one vCPU, so the flag needs no atomics. */
static int counting, finished;
static const char *out_path = "tbcount.txt";

static void on_exec(unsigned int vcpu, void *userdata)
{
	struct block *b = userdata;

	if (b->vaddr == on_addr)
		counting = 1;
	else if (b->vaddr == off_addr && counting) {
		counting = 0;
		finished = 1;
	}
	if (counting)
		b->execs++;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	if (vaddr < 0xffff800000000000ull)
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->vaddr = vaddr;
	b->insns = qemu_plugin_tb_n_insns(tb);
	pthread_mutex_lock(&lock);
	if (nblocks == capacity) {
		size_t want = capacity ? 2 * capacity : 65536;
		struct block **grown = realloc(blocks, want * sizeof(*blocks));

		if (!grown) {
			pthread_mutex_unlock(&lock);
			free(b);
			return;
		}
		blocks = grown;
		capacity = want;
	}
	blocks[nblocks++] = b;
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, 0, b);
}

static void write_counts(qemu_plugin_id_t id, void *userdata)
{
	FILE *f;

	if (off_addr && !finished)
		return;
	f = fopen(out_path, "w");
	if (!f)
		return;
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i]->execs)
			fprintf(f, "%llx %llu %llu\n", (unsigned long long)blocks[i]->vaddr,
				(unsigned long long)blocks[i]->insns,
				(unsigned long long)blocks[i]->execs);
	fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							      const void *info, int argc,
							      char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "on=", 3))
			on_addr = strtoull(argv[i] + 3, NULL, 16);
		else if (!strncmp(argv[i], "off=", 4))
			off_addr = strtoull(argv[i] + 4, NULL, 16);
		else if (!strncmp(argv[i], "out=", 4))
			out_path = strdup(argv[i] + 4);
	}
	counting = on_addr == 0;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, write_counts, NULL);
	return 0;
}
