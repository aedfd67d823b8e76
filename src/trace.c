// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ib_cma:icm_* tracepoints (include/ib_cm_trace.h) and the helpers the Rust side emits
 * them with (src/trace.rs). A disabled tracepoint costs a call and a patched-out branch.
 *
 * icm_handler_err is defined for the interface only: cm.c emits it for a work item of an
 * unknown type, and ib_cm-rs's inputs are a closed Rust enum, so it has no such case.
 */
#include <rdma/ib_cm.h>

#include <ib_cm_glue.h>

#define CREATE_TRACE_POINTS
#include <ib_cm_trace.h>

void ibcm_glue_trace_id(enum ibcm_trace_id event, const struct ib_cm_id *cm_id)
{
	switch (event) {
#define IBCM_TRACE_ID_CASE(n)			\
	case IBCM_TRACE_##n:			\
		trace_icm_##n(cm_id);		\
		break;
	IBCM_TRACE_ID_EVENTS(IBCM_TRACE_ID_CASE)
#undef IBCM_TRACE_ID_CASE
	default:
		break;
	}
}

void ibcm_glue_trace_send_rej(const struct ib_cm_id *cm_id, u32 reason)
{
	trace_icm_send_rej(cm_id, reason);
}

void ibcm_glue_trace_local(enum ibcm_trace_local event, u32 local_id, u32 remote_id)
{
	switch (event) {
#define IBCM_TRACE_LOCAL_CASE(n)			\
	case IBCM_TRACE_##n:				\
		trace_icm_##n(local_id, remote_id);	\
		break;
	IBCM_TRACE_LOCAL_EVENTS(IBCM_TRACE_LOCAL_CASE)
#undef IBCM_TRACE_LOCAL_CASE
	default:
		break;
	}
}

void ibcm_glue_trace_remote(enum ibcm_trace_remote event, u32 remote_id)
{
	switch (event) {
#define IBCM_TRACE_REMOTE_CASE(n)		\
	case IBCM_TRACE_##n:			\
		trace_icm_##n(remote_id);	\
		break;
	IBCM_TRACE_REMOTE_EVENTS(IBCM_TRACE_REMOTE_CASE)
#undef IBCM_TRACE_REMOTE_CASE
	default:
		break;
	}
}

void ibcm_glue_trace_no_listener(u32 remote_id)
{
	if (trace_icm_no_listener_err_enabled()) {
		const struct ib_cm_id id = {
			.remote_id = cpu_to_be32(remote_id),
			.state = IB_CM_REQ_RCVD,
		};

		trace_icm_no_listener_err(&id);
	}
}

void ibcm_glue_trace_send_rep_err(const struct ib_cm_id *cm_id)
{
	trace_icm_send_rep_err(cm_id->local_id, cm_id->state);
}

void ibcm_glue_trace_rep_unknown_err(u32 local_id, u32 remote_id, u32 state)
{
	trace_icm_rep_unknown_err(local_id, remote_id, state);
}

void ibcm_glue_trace_mad_send_err(u32 state, u32 wc_status)
{
	trace_icm_mad_send_err(state, wc_status);
}
