// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Emits the `ib_cma:icm_*` tracepoints (`include/ib_cm_trace.h`, defined in `src/trace.c`).
//!
//! `logic::trace` decides which id-class event an input emits; the functions here only hand it
//! to C. Comm IDs are passed as numbers (host order), as the events print them.

use crate::{bindings, cm_id::CmId, logic::trace::IdTrace};

/// Messages answered or dropped without an id (`icm_local_class`).
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Local {
    /// `icm_issue_rej`: a REJ answering a received message (unknown service, stale
    /// connection).
    IssueRej = bindings::ibcm_trace_local_IBCM_TRACE_issue_rej,
    /// `icm_issue_drep`: the DREP answering a DREQ for no id.
    IssueDrep = bindings::ibcm_trace_local_IBCM_TRACE_issue_drep,
    /// `icm_staleconn_err`: a REP from a QP that is already connected.
    StaleconnErr = bindings::ibcm_trace_local_IBCM_TRACE_staleconn_err,
    /// `icm_no_priv_err`: a DREQ for no id.
    NoPrivErr = bindings::ibcm_trace_local_IBCM_TRACE_no_priv_err,
}

/// REPs that reached no id (`icm_remote_class`).
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Remote {
    /// `icm_remote_no_priv_err`: no id waits for a REP with that comm ID (a retransmission
    /// or an unknown id).
    RemoteNoPrivErr = bindings::ibcm_trace_remote_IBCM_TRACE_remote_no_priv_err,
    /// `icm_insert_failed_err`: the REP's sender is already known (a duplicate REP).
    InsertFailedErr = bindings::ibcm_trace_remote_IBCM_TRACE_insert_failed_err,
}

// `IdTrace` is numbered as `enum ibcm_trace_id`.
const _: () = {
    use bindings::*;
    let pairs = [
        (IdTrace::SendReq, ibcm_trace_id_IBCM_TRACE_send_req),
        (IdTrace::SendRep, ibcm_trace_id_IBCM_TRACE_send_rep),
        (IdTrace::SendDupReq, ibcm_trace_id_IBCM_TRACE_send_dup_req),
        (IdTrace::SendDupRep, ibcm_trace_id_IBCM_TRACE_send_dup_rep),
        (IdTrace::SendRtu, ibcm_trace_id_IBCM_TRACE_send_rtu),
        (IdTrace::SendMra, ibcm_trace_id_IBCM_TRACE_send_mra),
        (IdTrace::SendSidrReq, ibcm_trace_id_IBCM_TRACE_send_sidr_req),
        (IdTrace::SendSidrRep, ibcm_trace_id_IBCM_TRACE_send_sidr_rep),
        (IdTrace::SendDreq, ibcm_trace_id_IBCM_TRACE_send_dreq),
        (IdTrace::SendDrep, ibcm_trace_id_IBCM_TRACE_send_drep),
        (
            IdTrace::SendCmRtuErr,
            ibcm_trace_id_IBCM_TRACE_send_cm_rtu_err,
        ),
        (
            IdTrace::EstablishErr,
            ibcm_trace_id_IBCM_TRACE_establish_err,
        ),
        (
            IdTrace::NoListenerErr,
            ibcm_trace_id_IBCM_TRACE_no_listener_err,
        ),
        (IdTrace::SendDrepErr, ibcm_trace_id_IBCM_TRACE_send_drep_err),
        (
            IdTrace::DreqUnknownErr,
            ibcm_trace_id_IBCM_TRACE_dreq_unknown_err,
        ),
        (
            IdTrace::SendUnknownRejErr,
            ibcm_trace_id_IBCM_TRACE_send_unknown_rej_err,
        ),
        (
            IdTrace::RejUnknownErr,
            ibcm_trace_id_IBCM_TRACE_rej_unknown_err,
        ),
        (
            IdTrace::SendMraUnknownErr,
            ibcm_trace_id_IBCM_TRACE_send_mra_unknown_err,
        ),
        (
            IdTrace::MraUnknownErr,
            ibcm_trace_id_IBCM_TRACE_mra_unknown_err,
        ),
        (IdTrace::QpInitErr, ibcm_trace_id_IBCM_TRACE_qp_init_err),
        (IdTrace::QpRtrErr, ibcm_trace_id_IBCM_TRACE_qp_rtr_err),
        (IdTrace::QpRtsErr, ibcm_trace_id_IBCM_TRACE_qp_rts_err),
        (IdTrace::DreqSkipped, ibcm_trace_id_IBCM_TRACE_dreq_skipped),
    ];
    assert!(pairs.len() == ibcm_trace_id_IBCM_TRACE_ID_COUNT as usize);
    let mut i = 0;
    while i < pairs.len() {
        assert!(pairs[i].0 as u32 == pairs[i].1);
        i += 1;
    }
};

/// An event of `icm_id_class` for `id`, with its current states.
pub(crate) fn id(ev: IdTrace, id: &CmId) {
    // SAFETY: The handle is live while `id` is; the helper only reads it.
    unsafe { bindings::ibcm_glue_trace_id(ev as u32, CmId::raw(id)) }
}

/// `icm_send_rej`: `id` sends (or is asked to send) a REJ with `reason`.
pub(crate) fn send_rej(id: &CmId, reason: u16) {
    // SAFETY: As in [`id`].
    unsafe { bindings::ibcm_glue_trace_send_rej(CmId::raw(id), u32::from(reason)) }
}

/// An event of `icm_local_class`, with the comm IDs of the received message.
pub(crate) fn local(ev: Local, local_id: u32, remote_id: u32) {
    // SAFETY: Plain values.
    unsafe { bindings::ibcm_glue_trace_local(ev as u32, local_id, remote_id) }
}

/// An event of `icm_remote_class`.
pub(crate) fn remote(ev: Remote, remote_id: u32) {
    // SAFETY: Plain values.
    unsafe { bindings::ibcm_glue_trace_remote(ev as u32, remote_id) }
}

/// `icm_no_listener_err` for a REQ with local comm ID `remote_id` that makes no connection.
/// cm.c traces the id it had set up for the REQ (state REQ_RCVD, the REQ's comm ID as remote
/// ID, a fresh local ID); ib_cm-rs sets up no id before a listener is found, so the event
/// shows local ID 0 and no id address.
pub(crate) fn no_listener(remote_id: u32) {
    // SAFETY: A plain value.
    unsafe { bindings::ibcm_glue_trace_no_listener(remote_id) }
}

/// `icm_send_rep_err`: `ib_send_cm_rep()` on `id` in a wrong state.
pub(crate) fn send_rep_err(id: &CmId) {
    // SAFETY: As in [`id`].
    unsafe { bindings::ibcm_glue_trace_send_rep_err(CmId::raw(id)) }
}

/// `icm_rep_unknown_err`: a REP for an id in `state`, which does not wait for one.
pub(crate) fn rep_unknown_err(local_id: u32, remote_id: u32, state: u32) {
    // SAFETY: Plain values.
    unsafe { bindings::ibcm_glue_trace_rep_unknown_err(local_id, remote_id, state) }
}

/// `icm_mad_send_err`: the tracked MAD sent in `state` ended with `status`.
pub(crate) fn mad_send_err(state: u32, status: u32) {
    // SAFETY: Plain values.
    unsafe { bindings::ibcm_glue_trace_mad_send_err(state, status) }
}
