// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cm_umad: speaks raw CM MADs over /dev/infiniband/umadN, for wire-level tests and the REQ
 * flood benchmark. It must run on a device where no kernel CM is loaded (it registers the CM
 * class itself to receive the REJ / SIDR_REP answers).
 *
 *   cm_umad DEV DEST_IPV4 req SERVICE_ID        send one REQ, print the REJ that comes back
 *   cm_umad DEV DEST_IPV4 reqalt SERVICE_ID     the same REQ with an alternate path
 *   cm_umad DEV DEST_IPV4 sidr SERVICE_ID       send one SIDR_REQ, print the SIDR_REP
 *   cm_umad DEV DEST_IPV4 bad                   send MADs the CM must drop (unknown attribute)
 *   cm_umad DEV DEST_IPV4 altpath               send a LAP and an APR for no connection,
 *                                               print NO_REPLY if nothing answers within 2 s
 *   cm_umad DEV DEST_IPV4 dup|dupsidr SERVICE_ID  send the same REQ (SIDR_REQ) three times,
 *                                               count the answers within 5 s
 *   cm_umad DEV DEST_IPV4 stale SERVICE_ID      two REQs with different comm IDs from the same
 *                                               QPN, print the reason each one's REJ carries
 *   cm_umad DEV DEST_IPV4 stalest SERVICE_ID   a connection (REQ, the peer's REP, RTU), then a
 *                                               new REQ from the same QPN: print the new REQ's
 *                                               REJ reason and whether the old connection got a
 *                                               DREQ (answered with a DREP)
 *   cm_umad DEV DEST_IPV4 flood SERVICE_ID N    send N REQs (at most 256 unanswered, each
 *                                               from its own QPN), count the REJs (and the
 *                                               STALE_CONN and other reasons among them),
 *                                               print the rate
 *
 * Output lines are `key=value` pairs the guest scripts match. Exit status 0 if the expected
 * answers arrived, 1 otherwise.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <rdma/ib_user_mad.h>
#include <rdma/rdma_user_ioctl.h>

#define MAD_LEN 256
#define HDR 24

struct umad {
	struct ib_user_mad_hdr hdr;
	uint8_t mad[MAD_LEN];
};

static int fd = -1;
static uint32_t agent_id;
static struct ib_user_mad_hdr addr;
static uint8_t our_gid[16];

static void die(const char *what)
{
	fprintf(stderr, "cm_umad: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The umad device of `dev`: /sys/class/infiniband_mad/umadN/ibdev. */
static void open_umad(const char *dev)
{
	char path[512], name[64];
	struct dirent *d;
	DIR *dir = opendir("/sys/class/infiniband_mad");

	if (!dir)
		die("no /sys/class/infiniband_mad (ib_umad loaded?)");
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "umad", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband_mad/%s/ibdev", d->d_name);
		if (read_line(path, name, sizeof(name)) || strcmp(name, dev))
			continue;
		snprintf(path, sizeof(path), "/dev/infiniband/%s", d->d_name);
		fd = open(path, O_RDWR);
		if (fd < 0)
			die(path);
		break;
	}
	closedir(dir);
	if (fd < 0) {
		errno = ENODEV;
		die(dev);
	}
	if (ioctl(fd, IB_USER_MAD_ENABLE_PKEY))
		die("IB_USER_MAD_ENABLE_PKEY");
}

/* Registers for CM class 0x07 version 2, method Send: REJ and SIDR_REP arrive here. */
static void register_agent(void)
{
	struct ib_user_mad_reg_req req = {
		.qpn = 1,
		.mgmt_class = 0x07,
		.mgmt_class_version = 2,
	};

	((uint8_t *)req.method_mask)[0] = 1 << 3;
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req))
		die("IB_USER_MAD_REGISTER_AGENT (is a kernel CM loaded on this device?)");
	agent_id = req.id;
}

/* Our RoCE v2 IPv4 GID index, found by matching `::ffff:<our address>` on port 1. */
static int find_gid_index(const char *dev, const char *src)
{
	char path[256], gid[64], type[32], want[64];
	unsigned int a, b, c, d;
	int i;

	if (sscanf(src, "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
		return -1;
	snprintf(want, sizeof(want), "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x",
		 a, b, c, d);
	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
		if (read_line(path, gid, sizeof(gid)) || strcmp(gid, want))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d", dev, i);
		if (!read_line(path, type, sizeof(type)) && !strcmp(type, "RoCE v2")) {
			unsigned int w[8], k;

			sscanf(gid, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3], &w[4],
			       &w[5], &w[6], &w[7]);
			for (k = 0; k < 8; k++) {
				our_gid[2 * k] = w[k] >> 8;
				our_gid[2 * k + 1] = w[k] & 0xff;
			}
			return i;
		}
	}
	return -1;
}

static void set_addr(const char *dev, const char *dst)
{
	char src[64] = "";
	struct in_addr ip;
	FILE *p;
	char cmd[128];

	/* Our own address on the same /24 as dst: read it from the kernel. */
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/ip -4 -o addr show | awk '{print $4}' | cut -d/ -f1 | grep '^%.*s'",
		 (int)(strrchr(dst, '.') - dst), dst);
	p = popen(cmd, "r");
	if (!p || !fgets(src, sizeof(src), p))
		die("cannot find our address");
	pclose(p);
	src[strcspn(src, "\n")] = 0;

	memset(&addr, 0, sizeof(addr));
	addr.id = agent_id;
	addr.qpn = htobe32(1);
	addr.qkey = htobe32(0x80010000);
	addr.grh_present = 1;
	addr.hop_limit = 64;
	addr.gid_index = find_gid_index(dev, src);
	if ((int8_t)addr.gid_index < 0) {
		errno = ENOENT;
		die("no RoCE v2 IPv4 GID for our address");
	}
	if (inet_pton(AF_INET, dst, &ip) != 1)
		die("bad destination address");
	addr.gid[10] = 0xff;
	addr.gid[11] = 0xff;
	memcpy(&addr.gid[12], &ip, 4);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static void mad_hdr(uint8_t *m, uint16_t attr, uint32_t tid)
{
	memset(m, 0, MAD_LEN);
	m[0] = 1;
	m[1] = 0x07;
	m[2] = 2;
	m[3] = 0x03;
	put64(m + 8, tid); /* the kernel puts its agent's hi_tid in the upper half */
	m[16] = attr >> 8;
	m[17] = attr & 0xff;
}

/* A REQ as rdma_cm would send it over RoCE, with a recognisable private-data pattern. */
static void build_req(uint8_t *m, uint32_t tid, uint32_t comm_id, uint64_t sid)
{
	uint8_t *p = m + HDR;
	int i;

	mad_hdr(m, 0x10, tid);
	put32(p + 0, comm_id);
	put64(p + 8, sid);
	put64(p + 16, 0x0002c90300a1b2c3ULL);   /* local CA GUID */
	put32(p + 32, 0x000123 << 8 | 1);       /* local QPN 0x123, responder resources 1 */
	p[39] = 1;                              /* initiator depth */
	p[43] = 20 << 3;                        /* remote CM response timeout 20, RC */
	put32(p + 44, 0xabcdef << 8 | 18 << 3 | 7); /* PSN, local CM timeout 18, retry 7 */
	p[48] = 0xff;                           /* P_Key 0xffff */
	p[49] = 0xff;
	p[50] = 3 << 4 | 7;                     /* MTU 1024, RNR retry 7 */
	p[51] = 15 << 4;                        /* max CM retries 15 */
	memcpy(p + 56, our_gid, 16);            /* primary local GID: ours */
	memcpy(p + 72, addr.gid, 16);           /* primary remote GID: the destination's */
	p[93] = 64;                             /* hop limit */
	p[95] = 17 << 3;                        /* local ACK timeout */
	for (i = 0; i < 92; i++)
		p[140 + i] = i;
}

static void build_sidr(uint8_t *m, uint32_t tid, uint32_t request_id, uint64_t sid)
{
	uint8_t *p = m + HDR;
	int i;

	mad_hdr(m, 0x17, tid);
	put32(p + 0, request_id);
	p[4] = 0xff;
	p[5] = 0xff;
	put64(p + 8, sid);
	for (i = 0; i < 216; i++)
		p[16 + i] = i;
}

static void send_mad(const uint8_t *m)
{
	struct umad u;

	u.hdr = addr;
	memcpy(u.mad, m, MAD_LEN);
	if (write(fd, &u, sizeof(u)) != sizeof(u))
		die("write");
}

/* Waits up to `ms` for a received MAD; returns 1 if one was read into `out`. */
static int recv_mad(struct umad *out, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	for (;;) {
		if (poll(&pfd, 1, ms) <= 0)
			return 0;
		if (read(fd, out, sizeof(*out)) < (ssize_t)sizeof(out->hdr))
			continue;
		if (out->hdr.status)
			continue; /* a send error report, not a MAD */
		return 1;
	}
}

static void hex(const char *key, const uint8_t *p, int n)
{
	int i;

	printf(" %s=", key);
	for (i = 0; i < n; i++)
		printf("%02x", p[i]);
}

/* The reason a REJ carries. */
static int rej_reason(const uint8_t *m)
{
	return (m[HDR + 10] << 8) | m[HDR + 11];
}

static void print_rej(const uint8_t *m)
{
	const uint8_t *p = m + HDR;

	printf("REJ tid_low=%08x local_comm_id=%08x remote_comm_id=%08x msg_rejected=%u ari_length=%u reason=%u",
	       (uint32_t)get64(m + 8), get32(p), get32(p + 4), p[8] >> 6, p[9] >> 1,
	       rej_reason(m));
	hex("ari16", p + 12, 16);
	hex("private_data16", p + 84, 16);
	printf("\n");
}

static void print_sidr_rep(const uint8_t *m)
{
	const uint8_t *p = m + HDR;

	printf("SIDR_REP tid_low=%08x request_id=%08x status=%u qpn=%06x service_id=%016llx qkey=%08x",
	       (uint32_t)get64(m + 8), get32(p), p[4], get32(p + 8) >> 8,
	       (unsigned long long)get64(p + 12), get32(p + 20));
	hex("private_data16", p + 96, 16);
	printf("\n");
}

int main(int argc, char **argv)
{
	uint8_t m[MAD_LEN];
	struct umad in;
	uint64_t sid;

	if (argc < 4) {
		fprintf(stderr, "usage: cm_umad DEV DEST_IPV4 req|sidr|dup|dupsidr|stale|stalest|altpath|bad|flood [SERVICE_ID [N]]\n");
		return 2;
	}
	open_umad(argv[1]);
	register_agent();
	set_addr(argv[1], argv[2]);
	sid = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
	srand(getpid());

	if (!strcmp(argv[3], "req") || !strcmp(argv[3], "reqalt")) {
		uint32_t tid = 0x1000 + (rand() & 0xfff), comm = 0x5a000000 | (rand() & 0xffff);
		double t0 = now();

		build_req(m, tid, comm, sid);
		if (!strcmp(argv[3], "reqalt")) {
			/* An alternate path (local LID 1, the primary's GIDs): over RoCE cm.c
			 * cannot resolve it without a source GID attribute and rejects the REQ
			 * with INVALID_ALT_GID (18) before any listener sees it. */
			uint8_t *p = m + HDR;

			p[96] = 0;
			p[97] = 1;
			memcpy(p + 100, our_gid, 16);
			memcpy(p + 116, addr.gid, 16);
			p[137] = 64;
			p[139] = 17 << 3;
		}
		send_mad(m);
		printf("SENT REQ tid_low=%08x local_comm_id=%08x\n", tid, comm);
		while (recv_mad(&in, 5000)) {
			if (in.mad[16] == 0 && in.mad[17] == 0x12) {
				print_rej(in.mad);
				printf("ELAPSED_MS=%d\n", (int)((now() - t0) * 1000));
				return 0;
			}
		}
		printf("NO_REPLY\n");
		return 1;
	}
	if (!strcmp(argv[3], "sidr")) {
		uint32_t tid = 0x2000 + (rand() & 0xfff), rid = 0x6b000000 | (rand() & 0xffff);

		build_sidr(m, tid, rid, sid);
		send_mad(m);
		printf("SENT SIDR_REQ tid_low=%08x request_id=%08x\n", tid, rid);
		while (recv_mad(&in, 5000)) {
			if (in.mad[16] == 0 && in.mad[17] == 0x18) {
				print_sidr_rep(in.mad);
				return 0;
			}
		}
		printf("NO_REPLY\n");
		return 1;
	}
	if (!strcmp(argv[3], "dup") || !strcmp(argv[3], "dupsidr")) {
		int sidr = !strcmp(argv[3], "dupsidr"), i, answers = 0;
		uint32_t tid = 0x4000 + (rand() & 0xfff), comm = 0x3d000000 | (rand() & 0xffff);
		double t0 = now();

		if (sidr)
			build_sidr(m, tid, comm, sid);
		else
			build_req(m, tid, comm, sid);
		for (i = 0; i < 3; i++) {
			send_mad(m);
			usleep(100000);
		}
		while (now() - t0 < 5)
			if (recv_mad(&in, 500) && in.mad[16] == 0 &&
			    in.mad[17] == (sidr ? 0x18 : 0x12))
				answers++;
		printf("DUP sent=3 answers=%d\n", answers);
		return answers == 1 ? 0 : 1;
	}
	if (!strcmp(argv[3], "stale")) {
		uint32_t tid1 = 0x5000 + (rand() & 0xfff), tid2 = tid1 + 1;
		uint32_t comm = 0x2e000000 | (rand() & 0xffff);
		int reason1 = -1, reason2 = -1;
		double t0 = now();

		build_req(m, tid1, comm, sid);
		send_mad(m);
		usleep(200000);
		build_req(m, tid2, comm + 1, sid); /* same local QPN 0x123 */
		send_mad(m);
		while (now() - t0 < 5 && (reason1 < 0 || reason2 < 0)) {
			if (!recv_mad(&in, 500) || in.mad[16] || in.mad[17] != 0x12)
				continue;
			if ((uint32_t)get64(in.mad + 8) == tid1)
				reason1 = rej_reason(in.mad);
			else if ((uint32_t)get64(in.mad + 8) == tid2)
				reason2 = rej_reason(in.mad);
		}
		printf("STALE first_reason=%d second_reason=%d\n", reason1, reason2);
		return 0;
	}
	if (!strcmp(argv[3], "stalest")) {
		uint32_t tid1 = 0x7000 + (rand() & 0xfff), tid2 = tid1 + 1;
		uint32_t comm = 0x1f000000 | (rand() & 0xffff), peer = 0;
		int reason = -1, dreq = 0;
		double t0 = now();

		build_req(m, tid1, comm, sid);
		send_mad(m);
		while (!peer && now() - t0 < 5) {
			if (!recv_mad(&in, 500) || in.mad[16] || in.mad[17] != 0x13 ||
			    get32(in.mad + HDR + 4) != comm)
				continue;
			peer = get32(in.mad + HDR);
		}
		if (!peer) {
			printf("NO_REP\n");
			return 1;
		}
		mad_hdr(m, 0x14, tid1); /* RTU */
		put32(m + HDR, comm);
		put32(m + HDR + 4, peer);
		send_mad(m);
		/* Time for the peer to take the RTU (ESTABLISHED: only then does it send a DREQ). */
		usleep(1500000);
		build_req(m, tid2, comm + 1, sid); /* same local QPN 0x123 */
		send_mad(m);
		t0 = now();
		while (now() - t0 < 5 && (reason < 0 || !dreq)) {
			if (!recv_mad(&in, 500) || in.mad[16])
				continue;
			if (in.mad[17] == 0x12 && (uint32_t)get64(in.mad + 8) == tid2) {
				reason = rej_reason(in.mad);
			} else if (in.mad[17] == 0x15 && get32(in.mad + HDR) == peer &&
				   get32(in.mad + HDR + 4) == comm) {
				dreq = 1;
				mad_hdr(m, 0x16, (uint32_t)get64(in.mad + 8)); /* DREP */
				put32(m + HDR, comm);
				put32(m + HDR + 4, peer);
				send_mad(m);
			}
		}
		printf("STALEEST rej_reason=%d dreq_for_old=%d\n", reason, dreq);
		return reason == 10 && dreq ? 0 : 1;
	}
	if (!strcmp(argv[3], "altpath")) {
		/* A LAP and an APR for a connection the peer does not have: over RoCE cm.c drops
		 * both before any lookup (and an unknown id would drop them too): no answer. */
		int i, answers = 0;
		double t0;

		for (i = 0; i < 2; i++) {
			mad_hdr(m, i ? 0x1a : 0x19, 0x6000 + (rand() & 0xfff));
			put32(m + HDR, 0x4c000000 | (rand() & 0xffff));
			put32(m + HDR + 4, 0x4d000000 | (rand() & 0xffff));
			send_mad(m);
		}
		t0 = now();
		while (now() - t0 < 2)
			if (recv_mad(&in, 500) && in.mad[1] == 0x07)
				answers++;
		if (answers)
			printf("ANSWERED %d\n", answers);
		else
			printf("NO_REPLY\n");
		return 0;
	}
	if (!strcmp(argv[3], "bad")) {
		int i;

		for (i = 0; i < 4; i++) {
			mad_hdr(m, 0x1f + i, 0x3000 + i); /* not a CM attribute */
			send_mad(m);
		}
		printf("SENT BAD 4\n");
		return 0;
	}
	if (!strcmp(argv[3], "flood")) {
		long n = argc > 5 ? atol(argv[5]) : 1000, sent = 0, got = 0;
		double t0 = now(), t;

		long stale = 0, other = 0;

		while (got < n) {
			while (sent < n && sent - got < 256) {
				build_req(m, 0x10000 + sent, 0x7c000000 + sent, sid);
				/* Each REQ from its own QP, as from distinct connections: with one QPN
				 * for all, a REQ handled while the previous one's id still holds the
				 * QP gets REJ STALE_CONN without reaching the listener. */
				put32(m + HDR + 32, (0x1000 + (uint32_t)(sent & 0xfffff)) << 8 | 1);
				send_mad(m);
				sent++;
			}
			if (!recv_mad(&in, 3000))
				break;
			if (in.mad[16] == 0 && in.mad[17] == 0x12) {
				int reason = rej_reason(in.mad);

				got++;
				if (reason == 10) /* IB_CM_REJ_STALE_CONN */
					stale++;
				else if (reason != 28 && reason != 8)
					other++;
			}
		}
		t = now() - t0;
		printf("FLOOD sent=%ld replies=%ld secs=%.3f rate=%.0f rej_stale=%ld rej_other=%ld\n",
		       sent, got, t, got / t, stale, other);
		return got == n ? 0 : 1;
	}
	fprintf(stderr, "cm_umad: unknown mode %s\n", argv[3]);
	return 2;
}
