/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The ib_cma:icm_* tracepoints of ib_cm-rs.
 *
 * Same system, event names, fields (names, types, order) and output as the in-tree CM's
 * (drivers/infiniband/core/cm_trace.h), so trace-cmd, perf and tracefs scripts written for it
 * work unchanged; written here from that interface. Only src/trace.c includes this file; the
 * Rust side reaches the events through the ibcm_glue_trace_*() helpers (include/ib_cm_glue.h),
 * whose id-class list, IBCM_TRACE_ID_EVENTS, also defines the events below.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ib_cma

#if !defined(_IBCM_RS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _IBCM_RS_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <trace/misc/rdma.h>

#include <ib_cm_glue.h>

/* Symbolic names of the enums the events print, as the in-tree CM prints them. */
#define IBCM_CM_STATES(x, last)							\
	x(IDLE) x(LISTEN) x(REQ_SENT) x(REQ_RCVD) x(MRA_REQ_SENT) x(MRA_REQ_RCVD)	\
	x(REP_SENT) x(REP_RCVD) x(MRA_REP_SENT) x(MRA_REP_RCVD) x(ESTABLISHED)	\
	x(DREQ_SENT) x(DREQ_RCVD) x(TIMEWAIT) x(SIDR_REQ_SENT) last(SIDR_REQ_RCVD)

#define IBCM_LAP_STATES(x, last)						\
	x(LAP_UNINIT) x(LAP_IDLE) x(LAP_SENT) x(LAP_RCVD) x(MRA_LAP_SENT)	\
	last(MRA_LAP_RCVD)

#define IBCM_REJ_REASONS(x, last)						\
	x(REJ_NO_QP) x(REJ_NO_EEC) x(REJ_NO_RESOURCES) x(REJ_TIMEOUT)		\
	x(REJ_UNSUPPORTED) x(REJ_INVALID_COMM_ID) x(REJ_INVALID_COMM_INSTANCE)	\
	x(REJ_INVALID_SERVICE_ID) x(REJ_INVALID_TRANSPORT_TYPE) x(REJ_STALE_CONN)	\
	x(REJ_RDC_NOT_EXIST) x(REJ_INVALID_GID) x(REJ_INVALID_LID) x(REJ_INVALID_SL)	\
	x(REJ_INVALID_TRAFFIC_CLASS) x(REJ_INVALID_HOP_LIMIT)			\
	x(REJ_INVALID_PACKET_RATE) x(REJ_INVALID_ALT_GID) x(REJ_INVALID_ALT_LID)	\
	x(REJ_INVALID_ALT_SL) x(REJ_INVALID_ALT_TRAFFIC_CLASS)			\
	x(REJ_INVALID_ALT_HOP_LIMIT) x(REJ_INVALID_ALT_PACKET_RATE)		\
	x(REJ_PORT_CM_REDIRECT) x(REJ_PORT_REDIRECT) x(REJ_INVALID_MTU)		\
	x(REJ_INSUFFICIENT_RESP_RESOURCES) x(REJ_CONSUMER_DEFINED)		\
	x(REJ_INVALID_RNR_RETRY) x(REJ_DUPLICATE_LOCAL_COMM_ID)			\
	x(REJ_INVALID_CLASS_VERSION) x(REJ_INVALID_FLOW_LABEL)			\
	x(REJ_INVALID_ALT_FLOW_LABEL) last(REJ_VENDOR_OPTION_NOT_SUPPORTED)

/* Export the enum values to user space, so tools can print the names. */
#define IBCM_TRACE_ENUM(n)	TRACE_DEFINE_ENUM(IB_CM_##n);
IBCM_CM_STATES(IBCM_TRACE_ENUM, IBCM_TRACE_ENUM)
IBCM_LAP_STATES(IBCM_TRACE_ENUM, IBCM_TRACE_ENUM)
IBCM_REJ_REASONS(IBCM_TRACE_ENUM, IBCM_TRACE_ENUM)

#define IBCM_SYM(n)		{ IB_CM_##n, #n },
#define IBCM_SYM_LAST(n)	{ IB_CM_##n, #n }
#define ibcm_show_state(v)	__print_symbolic(v, IBCM_CM_STATES(IBCM_SYM, IBCM_SYM_LAST))
#define ibcm_show_lap_state(v)	__print_symbolic(v, IBCM_LAP_STATES(IBCM_SYM, IBCM_SYM_LAST))
#define ibcm_show_rej_reason(v)	__print_symbolic(v, IBCM_REJ_REASONS(IBCM_SYM, IBCM_SYM_LAST))

/* An id and its states: the send events and most of the error events. */
DECLARE_EVENT_CLASS(icm_id_class,
	TP_PROTO(const struct ib_cm_id *cm_id),
	TP_ARGS(cm_id),
	TP_STRUCT__entry(
		__field(const void *, cm_id)
		__field(unsigned int, local_id)
		__field(unsigned int, remote_id)
		__field(unsigned long, state)
		__field(unsigned long, lap_state)
	),
	TP_fast_assign(
		__entry->cm_id = cm_id;
		__entry->local_id = be32_to_cpu(cm_id->local_id);
		__entry->remote_id = be32_to_cpu(cm_id->remote_id);
		__entry->state = cm_id->state;
		__entry->lap_state = cm_id->lap_state;
	),
	TP_printk("local_id=%u remote_id=%u state=%s lap_state=%s",
		  __entry->local_id, __entry->remote_id,
		  ibcm_show_state(__entry->state), ibcm_show_lap_state(__entry->lap_state))
);

#define IBCM_DEFINE_ID_EVENT(n)						\
	DEFINE_EVENT(icm_id_class, icm_##n,				\
		     TP_PROTO(const struct ib_cm_id *cm_id), TP_ARGS(cm_id));
IBCM_TRACE_ID_EVENTS(IBCM_DEFINE_ID_EVENT)

/* A REJ an id sends, with its reason. */
TRACE_EVENT(icm_send_rej,
	TP_PROTO(const struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason),
	TP_ARGS(cm_id, reason),
	TP_STRUCT__entry(
		__field(const void *, cm_id)
		__field(u32, local_id)
		__field(u32, remote_id)
		__field(unsigned long, state)
		__field(unsigned long, reason)
	),
	TP_fast_assign(
		__entry->cm_id = cm_id;
		__entry->local_id = be32_to_cpu(cm_id->local_id);
		__entry->remote_id = be32_to_cpu(cm_id->remote_id);
		__entry->state = cm_id->state;
		__entry->reason = reason;
	),
	TP_printk("local_id=%u remote_id=%u state=%s reason=%s",
		  __entry->local_id, __entry->remote_id,
		  ibcm_show_state(__entry->state), ibcm_show_rej_reason(__entry->reason))
);

/* Messages answered without an id: the comm IDs of the received message. */
DECLARE_EVENT_CLASS(icm_local_class,
	TP_PROTO(unsigned int local_id, unsigned int remote_id),
	TP_ARGS(local_id, remote_id),
	TP_STRUCT__entry(
		__field(unsigned int, local_id)
		__field(unsigned int, remote_id)
	),
	TP_fast_assign(
		__entry->local_id = local_id;
		__entry->remote_id = remote_id;
	),
	TP_printk("local_id=%u remote_id=%u", __entry->local_id, __entry->remote_id)
);

#define IBCM_DEFINE_LOCAL_EVENT(n)					\
	DEFINE_EVENT(icm_local_class, icm_##n,				\
		     TP_PROTO(unsigned int local_id, unsigned int remote_id),	\
		     TP_ARGS(local_id, remote_id));
IBCM_TRACE_LOCAL_EVENTS(IBCM_DEFINE_LOCAL_EVENT)

/* A REP that reached no id, by the comm ID it names. */
DECLARE_EVENT_CLASS(icm_remote_class,
	TP_PROTO(u32 remote_id),
	TP_ARGS(remote_id),
	TP_STRUCT__entry(
		__field(u32, remote_id)
	),
	TP_fast_assign(
		__entry->remote_id = remote_id;
	),
	TP_printk("remote_id=%u", __entry->remote_id)
);

#define IBCM_DEFINE_REMOTE_EVENT(n)					\
	DEFINE_EVENT(icm_remote_class, icm_##n,				\
		     TP_PROTO(u32 remote_id), TP_ARGS(remote_id));
IBCM_TRACE_REMOTE_EVENTS(IBCM_DEFINE_REMOTE_EVENT)

/* ib_send_cm_rep() in a state that cannot send one. */
TRACE_EVENT(icm_send_rep_err,
	TP_PROTO(__be32 local_id, enum ib_cm_state state),
	TP_ARGS(local_id, state),
	TP_STRUCT__entry(
		__field(unsigned int, local_id)
		__field(unsigned long, state)
	),
	TP_fast_assign(
		__entry->local_id = be32_to_cpu(local_id);
		__entry->state = state;
	),
	TP_printk("local_id=%u state=%s", __entry->local_id, ibcm_show_state(__entry->state))
);

/* A REP for an id that is not waiting for one. */
TRACE_EVENT(icm_rep_unknown_err,
	TP_PROTO(unsigned int local_id, unsigned int remote_id, enum ib_cm_state state),
	TP_ARGS(local_id, remote_id, state),
	TP_STRUCT__entry(
		__field(unsigned int, local_id)
		__field(unsigned int, remote_id)
		__field(unsigned long, state)
	),
	TP_fast_assign(
		__entry->local_id = local_id;
		__entry->remote_id = remote_id;
		__entry->state = state;
	),
	TP_printk("local_id=%u remote_id=%u state=%s", __entry->local_id, __entry->remote_id,
		  ibcm_show_state(__entry->state))
);

/* An event the CM's work handler does not know (defined for the interface; see trace.c). */
TRACE_EVENT(icm_handler_err,
	TP_PROTO(enum ib_cm_event_type event),
	TP_ARGS(event),
	TP_STRUCT__entry(
		__field(unsigned long, event)
	),
	TP_fast_assign(
		__entry->event = event;
	),
	TP_printk("unhandled event=%s", rdma_show_ib_cm_event(__entry->event))
);

/* A tracked MAD that ended in error in the state it was sent in. */
TRACE_EVENT(icm_mad_send_err,
	TP_PROTO(enum ib_cm_state state, enum ib_wc_status wc_status),
	TP_ARGS(state, wc_status),
	TP_STRUCT__entry(
		__field(unsigned long, state)
		__field(unsigned long, wc_status)
	),
	TP_fast_assign(
		__entry->state = state;
		__entry->wc_status = wc_status;
	),
	TP_printk("state=%s completion status=%s", ibcm_show_state(__entry->state),
		  rdma_show_wc_status(__entry->wc_status))
);

#endif /* _IBCM_RS_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ib_cm_trace
#include <trace/define_trace.h>
