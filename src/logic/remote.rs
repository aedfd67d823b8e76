// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The duplicate and stale checks of a REQ and a REP against the remote tables, as a pure
//! decision: which of the message's keys the tables hold in, what to do out.
//!
//! Stands for the checks of cm.c's `cm_match_req()` and `cm_rep_handler()`: the comm-ID key
//! (the peer's CA GUID and comm ID, `cm_insert_remote_id`) is checked first, the QP key (CA GUID
//! and QPN, `cm_insert_remote_qpn`) only if the first is free. The kernel side
//! (`src/remote.rs`) does the lookup and the insert; this says what follows from them.

use super::{req_event::REJ_STALE_CONN, state::Input, state::MsgKind};

/// Which key of a message the tables already hold (the first taken, in cm.c's order).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum Held {
    /// Neither: the message's id may register both.
    #[default]
    Neither,
    /// The comm-ID key, by the id that holds this same request or REP (whatever the QP key).
    CommId,
    /// Only the QP key: another connection (or attempt) of the peer's queue pair.
    Qp,
}

/// What the receive path does with a REQ or a REP after the check.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Verdict {
    /// A new message: the REQ goes on to the listener match, the REP's id is filed under its
    /// keys.
    Proceed,
    /// A retransmission: it makes nothing new. The id holding the key gets `holder`, if any
    /// (REQ: [`Input::RecvDupReq`], once that id is visible by comm ID, as cm.c's
    /// `cm_acquire_id`); a REP is dropped (cm.c traces `icm_insert_failed_err`).
    Duplicate {
        /// The input for the id holding the key.
        holder: Option<Input>,
    },
    /// A stale connection: the message is refused with a REJ (sent back along its packet,
    /// `cm_issue_rej`, no id), and the id holding the QP key sends a DREQ (which only an
    /// ESTABLISHED id does; in any other state `ib_send_cm_dreq` refuses it, as in cm.c). A REQ
    /// makes no id; the REP's id stays where it is (REQ_SENT, until its REQ times out).
    Stale {
        /// The REJ's reason.
        rej_reason: u16,
        /// The REJ's "message rejected" field.
        rejected: MsgKind,
    },
}

/// The verdict on a message of `kind` (a REQ or a REP) whose keys the tables hold as `held`.
pub(crate) fn verdict(kind: MsgKind, held: Held) -> Verdict {
    match held {
        Held::Neither => Verdict::Proceed,
        Held::CommId => Verdict::Duplicate {
            holder: match kind {
                MsgKind::Req => Some(Input::RecvDupReq),
                // Another id holds the peer's comm ID (a peer that reuses one while our entry
                // for it lives): the REP is dropped and its id stays in REQ_SENT. (A REP's own
                // retransmission reaches its id by comm ID, as `RecvDupRep`, and never gets here.)
                MsgKind::Rep | MsgKind::Other => None,
            },
        },
        Held::Qp => Verdict::Stale {
            rej_reason: REJ_STALE_CONN,
            rejected: kind,
        },
    }
}

/// How the peer names a connection request: its CA GUID and its local comm ID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct ReqKey {
    /// The REQ's local CA GUID.
    pub(crate) ca_guid: u64,
    /// The REQ's local comm ID.
    pub(crate) comm_id: u32,
}

/// The peer's queue pair: its CA GUID and the REQ's local QPN.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct QpKey {
    /// The REQ's local CA GUID.
    pub(crate) ca_guid: u64,
    /// The REQ's local QPN.
    pub(crate) qpn: u32,
}

/// How the peer names a SIDR request: request ID and source LID (always 0 on RoCE, so two
/// hosts with the same request ID collide, as in cm.c, quirk 4).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct SidrKey {
    /// The SIDR_REQ's request ID.
    pub(crate) request_id: u32,
    /// The work completion's source LID.
    pub(crate) slid: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cm.c's answers, written from `cm_match_req()` and `cm_rep_handler()`: (message, key
    /// held) -> (REJ STALE_CONN sent for the message, the holder's input on a duplicate).
    const CM_C: [(MsgKind, Held, Option<MsgKind>, Option<Input>); 6] = [
        (MsgKind::Req, Held::Neither, None, None),
        // `cm_dup_req_handler()` on the id holding the REQ.
        (MsgKind::Req, Held::CommId, None, Some(Input::RecvDupReq)),
        // `cm_issue_rej(..., IB_CM_REJ_STALE_CONN, CM_MSG_RESPONSE_REQ)` and a DREQ.
        (MsgKind::Req, Held::Qp, Some(MsgKind::Req), None),
        (MsgKind::Rep, Held::Neither, None, None),
        // `trace_icm_insert_failed_err()`, then the REP is dropped.
        (MsgKind::Rep, Held::CommId, None, None),
        // `cm_issue_rej(..., IB_CM_REJ_STALE_CONN, CM_MSG_RESPONSE_REP)` and a DREQ.
        (MsgKind::Rep, Held::Qp, Some(MsgKind::Rep), None),
    ];

    #[test]
    fn every_message_and_key_as_cm_c() {
        for (kind, held, rej, input) in CM_C {
            let v = verdict(kind, held);
            let got = match v {
                Verdict::Proceed => (false, None, None),
                Verdict::Duplicate { holder } => (true, None, holder),
                Verdict::Stale {
                    rej_reason,
                    rejected,
                } => {
                    assert_eq!(rej_reason, 10, "{kind:?} {held:?}: STALE_CONN");
                    (true, Some(rejected), None)
                }
            };
            assert_eq!(got.0, held != Held::Neither, "{kind:?} {held:?}: proceeds");
            assert_eq!((got.1, got.2), (rej, input), "{kind:?} {held:?}");
        }
    }
}
