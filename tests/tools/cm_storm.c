// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cm_storm: connections through rdma_cm with no QP, for the storm benchmark's no-QP shapes
 * (tests/qemu/guest-storm.sh). rdma_cm lets a consumer connect an id that has no QP: the
 * consumer names a QP number in rdma_connect/rdma_accept, the active side gets
 * RDMA_CM_EVENT_CONNECT_RESPONSE for the REP and sends the RTU with rdma_establish. Every MAD
 * of the handshake and the teardown still goes through the CM, but no CQ or QP is made, so
 * the connection count is not bounded by rxe's 16384 CQs per device (cmtime's shapes are).
 *
 *   cm_storm -b BIND -p PORT -q QPN_BASE                 server: accept every request, until
 *                                                        killed; disconnect what the peer
 *                                                        disconnects (its ids go when it
 *                                                        exits)
 *   cm_storm -b BIND -s SERVER -p PORT -q QPN_BASE -c N [-r READY]
 *                                                        client: N connections at once, in
 *                                                        cmtime's steps (every id resolves
 *                                                        its address, then every id its
 *                                                        route, then every id connects, then
 *                                                        every connection is disconnected)
 *
 * With -r, the client writes its pid to READY once every route is resolved and connects only
 * when it gets SIGUSR1: the storm bench starts all clients' connects at one moment, so that
 * the storm is measured apart from process start-up and address resolution.
 *
 * QP numbers are QPN_BASE, QPN_BASE + 1, ...: the caller keeps them distinct among all of a
 * device's connections, since a CM takes a second REQ or REP from a QP number it already has
 * a connection with for a stale connection. The server, killed with SIGTERM, prints how many
 * connections it saw ESTABLISHED (the RTU received) and the millisecond of the last. The client prints one line of key=value pairs:
 * connected, failed (and by event), the CLOCK_BOOTTIME millisecond at which it began to
 * connect and at which its last connection was established (the clock of /proc/uptime), each
 * step's duration. Exit status
 * 0 if every connection was established and disconnected, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum step { CREATED, RESOLVING_ADDR, ADDR_RESOLVED, RESOLVING_ROUTE, ROUTED, CONNECTING,
	    CONNECTED, DISCONNECTING, DONE, FAILED };

struct conn {
	struct rdma_cm_id *id;
	enum step step;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "cm_storm: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void addr_of(const char *host, int port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		fprintf(stderr, "cm_storm: not an IPv4 address: %s\n", host);
		exit(1);
	}
}

static void conn_param(struct rdma_conn_param *p, uint32_t qpn)
{
	memset(p, 0, sizeof(*p));
	p->qp_num = qpn & 0xffffff;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

/* Failures by the event that ended a connection. */
static unsigned int n_failed, n_rejected, n_unreachable, n_conn_error, n_addr_error,
	n_route_error, n_other;
static char first_error[96];

/* rdma_establish() failed: counted with the connect errors, the errno named. */
static void fail_establish(struct conn *c, int err)
{
	c->step = FAILED;
	n_failed++;
	n_conn_error++;
	if (!first_error[0])
		snprintf(first_error, sizeof(first_error), "rdma_establish/%d", -err);
}

static void fail(struct conn *c, const struct rdma_cm_event *ev)
{
	c->step = FAILED;
	n_failed++;
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED: n_rejected++; break;
	case RDMA_CM_EVENT_UNREACHABLE: n_unreachable++; break;
	case RDMA_CM_EVENT_CONNECT_ERROR: n_conn_error++; break;
	case RDMA_CM_EVENT_ADDR_ERROR: n_addr_error++; break;
	case RDMA_CM_EVENT_ROUTE_ERROR: n_route_error++; break;
	default: n_other++; break;
	}
	if (!first_error[0])
		snprintf(first_error, sizeof(first_error), "%s/%d", rdma_event_str(ev->event),
			 ev->status);
}

/* Handles events until no connection is in step `waiting`; returns the time of the last one. */
static long long run_until(struct rdma_event_channel *ch, enum step waiting, int *pending,
			   long long *last_estab)
{
	struct rdma_cm_event *ev;

	while (*pending > 0) {
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		struct conn *c = ev->id->context;
		enum step was = c->step;

		/* A connection that ended is not counted again (a late DISCONNECTED, ...). */
		if (was == FAILED || was == DONE) {
			rdma_ack_cm_event(ev);
			continue;
		}

		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			c->step = ADDR_RESOLVED;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			c->step = ROUTED;
			break;
		case RDMA_CM_EVENT_CONNECT_RESPONSE:
			if (rdma_establish(c->id)) {
				fail_establish(c, errno);
			} else {
				c->step = CONNECTED;
				*last_estab = now_ms();
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			c->step = CONNECTED;
			*last_estab = now_ms();
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			if (c->step == DISCONNECTING) {
				c->step = DONE;
			} else {
				/* Not asked for (the server went first, or a connect that failed). */
				if (c->step == CONNECTED)
					rdma_disconnect(c->id);
				fail(c, ev);
			}
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			fail(c, ev);
			break;
		}
		rdma_ack_cm_event(ev);
		if (was == waiting && c->step != waiting)
			(*pending)--;
	}
	return now_ms();
}

/* Writes our pid to `ready` and waits for SIGUSR1 (blocked since main began). */
static void wait_for_go(const char *ready)
{
	sigset_t set;
	char tmp[256];
	FILE *f;
	int sig;


	/* Written whole, then renamed: whoever sees the file can read the pid. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", ready);
	f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f) || rename(tmp, ready))
		die(ready);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	errno = sigwait(&set, &sig);
	if (errno)
		die("sigwait");
}

/* What the client's steps need besides the connection. */
struct steps {
	struct sockaddr_in src, dst;
	uint32_t qpn_base;
};

/* Starts step `to` for connection `i`: 0, or -1 with errno (librdmacm's calls). */
static int start_one(struct conn *c, int i, enum step to, const struct steps *s)
{
	struct rdma_conn_param p;

	switch (to) {
	case RESOLVING_ADDR:
		return rdma_resolve_addr(c->id, (struct sockaddr *)&s->src,
					 (struct sockaddr *)&s->dst, 2000);
	case RESOLVING_ROUTE:
		return rdma_resolve_route(c->id, 2000);
	case CONNECTING:
		conn_param(&p, s->qpn_base + i);
		return rdma_connect(c->id, &p);
	default:
		errno = EINVAL;
		return -1;
	}
}

/*
 * Moves every connection in step `from` on to step `to`; one whose call fails fails, counted
 * in `*err`. Returns how many now wait for their event.
 */
static int start_step(struct conn *conns, int n, enum step from, enum step to,
		      const struct steps *s, unsigned int *err)
{
	int i, pending = 0;

	for (i = 0; i < n; i++) {
		if (conns[i].step != from)
			continue;
		conns[i].step = to;
		if (start_one(&conns[i], i, to, s)) {
			conns[i].step = FAILED;
			n_failed++;
			(*err)++;
			continue;
		}
		pending++;
	}
	return pending;
}

static int client(const char *bind_host, const char *server, int port, uint32_t qpn_base,
		  int n, const char *ready)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct steps s = { .qpn_base = qpn_base };
	struct conn *conns = calloc(n, sizeof(*conns));
	long long t0, t_addr, t_route, t_go, t_conn, t_disc, last_estab = 0;
	int i, pending, connected = 0;

	if (!ch || !conns)
		die("set-up");
	addr_of(bind_host, 0, &s.src);
	addr_of(server, port, &s.dst);
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		if (rdma_create_id(ch, &conns[i].id, &conns[i], RDMA_PS_TCP))
			die("rdma_create_id");
		conns[i].step = CREATED;
	}
	pending = start_step(conns, n, CREATED, RESOLVING_ADDR, &s, &n_addr_error);
	t_addr = run_until(ch, RESOLVING_ADDR, &pending, &last_estab);
	pending = start_step(conns, n, ADDR_RESOLVED, RESOLVING_ROUTE, &s, &n_route_error);
	t_route = run_until(ch, RESOLVING_ROUTE, &pending, &last_estab);
	if (ready)
		wait_for_go(ready);
	t_go = now_ms();
	pending = start_step(conns, n, ROUTED, CONNECTING, &s, &n_other);
	t_conn = run_until(ch, CONNECTING, &pending, &last_estab);
	pending = 0;
	for (i = 0; i < n; i++) {
		if (conns[i].step != CONNECTED)
			continue;
		connected++;
		conns[i].step = DISCONNECTING;
		if (!rdma_disconnect(conns[i].id))
			pending++;
		else
			conns[i].step = DONE;
	}
	t_disc = run_until(ch, DISCONNECTING, &pending, &last_estab);
	for (i = 0; i < n; i++)
		rdma_destroy_id(conns[i].id);
	printf("cm_storm: connections=%d connected=%d failed=%u rejected=%u unreachable=%u "
	       "connect_error=%u addr_error=%u route_error=%u other=%u first_error=%s "
	       "start_ms=%lld connect_start_ms=%lld last_established_ms=%lld "
	       "resolve_addr_ms=%lld resolve_route_ms=%lld connect_ms=%lld disconnect_ms=%lld\n",
	       n, connected, n_failed, n_rejected, n_unreachable, n_conn_error, n_addr_error,
	       n_route_error, n_other, first_error[0] ? first_error : "none", t0, t_go, last_estab,
	       t_addr - t0, t_route - t_addr, t_conn - t_go, t_disc - t_conn);
	rdma_destroy_event_channel(ch);
	free(conns);
	return connected == n && n_failed == 0 ? 0 : 1;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int server(const char *bind_host, int port, uint32_t qpn_base)
{
	struct sigaction sa = { .sa_handler = on_term };
	long long last_estab = 0;
	unsigned int established = 0;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen_id;
	struct rdma_conn_param p;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	uint32_t next = 0;

	if (!ch)
		die("rdma_create_event_channel");
	/* No SA_RESTART: SIGTERM ends the wait for an event, and the server reports. */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL))
		die("sigaction");
	addr_of(bind_host, port, &sin);
	if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	/* rdma_ucm takes the smaller of this and net.rdma_ucm.max_backlog. */
	if (rdma_listen(listen_id, 65536))
		die("rdma_listen");
	while (!stop) {
		if (rdma_get_cm_event(ch, &ev)) {
			if (errno == EINTR)
				continue;
			die("rdma_get_cm_event");
		}
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			conn_param(&p, qpn_base + next++);
			if (rdma_accept(id, &p)) {
				/* Answered at once (a REJ), not left to the peer's retries. */
				rdma_reject(id, NULL, 0);
				rdma_ack_cm_event(ev);
				continue;
			}
		}
		rdma_ack_cm_event(ev);
		/*
		 * Ids are not destroyed here but when the server exits (the process's rdma_cm file
		 * goes): rdma_destroy_id() waits for the CM (the in-tree CM of 6.12 also for the
		 * id's MADs in flight), which would hold up the events behind it and make the
		 * passive side's ESTABLISHED times a measure of the destroys.
		 */
		switch (type) {
		case RDMA_CM_EVENT_ESTABLISHED:
			established++;
			last_estab = now_ms();
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_disconnect(id);
			break;
		default:
			break;
		}
	}
	printf("cm_storm: server established=%u last_established_ms=%lld\n", established,
	       last_estab);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bind_host = NULL, *server_host = NULL, *ready = NULL;
	sigset_t usr1;
	int port = 7471, n = 0, opt;
	uint32_t qpn_base = 1;

	/* Blocked from the start, so a SIGUSR1 that comes early waits for sigwait(). */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	while ((opt = getopt(argc, argv, "b:s:p:q:c:r:")) != -1) {
		switch (opt) {
		case 'b': bind_host = optarg; break;
		case 's': server_host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'q': qpn_base = strtoul(optarg, NULL, 0); break;
		case 'c': n = atoi(optarg); break;
		case 'r': ready = optarg; break;
		default: goto usage;
		}
	}
	if (!bind_host || (server_host && n <= 0))
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	return server_host ? client(bind_host, server_host, port, qpn_base, n, ready) :
			     server(bind_host, port, qpn_base);
usage:
	fprintf(stderr, "usage: cm_storm -b BIND -p PORT -q QPN_BASE [-s SERVER -c N [-r READY]]\n");
	return 2;
}
