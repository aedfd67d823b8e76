// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Which `ib_cma:icm_*` tracepoint an id's handler emits, as cm.c emits them.
//!
//! The events themselves are C (`include/ib_cm_trace.h`); this file decides, from what the
//! state machine did, which one fires: a message sent (`icm_send_*`, `icm_send_dup_*` for the
//! answers to a retransmission) or an input refused (`icm_*_err` for the API calls in a wrong
//! state and for the REJ, MRA and DREQ no state of the id expects).

use super::state::{Input, MsgKind, Out, Refusal, State};

/// An event of `icm_id_class`, numbered as `enum ibcm_trace_id` in `include/ib_cm_glue.h`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(crate) enum IdTrace {
    /// `icm_send_req`.
    SendReq = 0,
    /// `icm_send_rep`.
    SendRep,
    /// `icm_send_dup_req`: the answer to a retransmitted REQ (the MRA again, or REJ STALE_CONN
    /// from TIMEWAIT).
    SendDupReq,
    /// `icm_send_dup_rep`: the answer to a retransmitted REP (the RTU or the MRA again).
    SendDupRep,
    /// `icm_send_rtu`.
    SendRtu,
    /// `icm_send_mra`.
    SendMra,
    /// `icm_send_sidr_req`.
    SendSidrReq,
    /// `icm_send_sidr_rep`.
    SendSidrRep,
    /// `icm_send_dreq`.
    SendDreq,
    /// `icm_send_drep`.
    SendDrep,
    /// `icm_send_cm_rtu_err`: `ib_send_cm_rtu()` in a wrong state.
    SendCmRtuErr,
    /// `icm_establish_err`: `ib_cm_notify(COMM_EST)` in a wrong state.
    EstablishErr,
    /// `icm_no_listener_err`: a REQ for a service nobody listens on.
    NoListenerErr,
    /// `icm_send_drep_err`: `ib_send_cm_drep()` in a wrong state.
    SendDrepErr,
    /// `icm_dreq_unknown_err`: a DREQ no state of the id expects.
    DreqUnknownErr,
    /// `icm_send_unknown_rej_err`: `ib_send_cm_rej()` in a wrong state.
    SendUnknownRejErr,
    /// `icm_rej_unknown_err`: a REJ no state of the id expects.
    RejUnknownErr,
    /// `icm_send_mra_unknown_err`: `ib_send_cm_mra()` in a wrong state.
    SendMraUnknownErr,
    /// `icm_mra_unknown_err`: an MRA for an id that is not waiting (or already got one).
    MraUnknownErr,
    /// `icm_qp_init_err`: `ib_cm_init_qp_attr(INIT)` in a wrong state.
    QpInitErr,
    /// `icm_qp_rtr_err`.
    QpRtrErr,
    /// `icm_qp_rts_err`.
    QpRtsErr,
    /// `icm_dreq_skipped`: `ib_send_cm_dreq()` on an id that is not established.
    DreqSkipped,
}

/// What sending `o` from an id emits. A REJ emits `icm_send_rej` (with its reason, not an
/// id-class event) and the DREP answering a DREQ in TIMEWAIT emits nothing, as in cm.c.
pub(crate) fn for_send(o: Out) -> Option<IdTrace> {
    Some(match o {
        Out::Req => IdTrace::SendReq,
        Out::Rep => IdTrace::SendRep,
        Out::Rtu => IdTrace::SendRtu,
        Out::Dreq => IdTrace::SendDreq,
        Out::Drep => IdTrace::SendDrep,
        Out::SidrReq => IdTrace::SendSidrReq,
        Out::SidrRep => IdTrace::SendSidrRep,
        Out::Mra(_) => IdTrace::SendMra,
        Out::ResendMra(MsgKind::Req) | Out::ResendRejStale => IdTrace::SendDupReq,
        Out::ResendMra(MsgKind::Rep) | Out::ResendRtu => IdTrace::SendDupRep,
        // cm.c's LAP handler sends its MRA again without a tracepoint.
        Out::Rej { .. } | Out::ResendDrep | Out::ResendMra(MsgKind::Other) => return None,
    })
}

/// What an input refused in `state` emits. `ib_send_cm_rep()` in a wrong state emits
/// `icm_send_rep_err` and a REP no state expects `icm_rep_unknown_err` (other classes, traced
/// by their handlers). A refused `ib_send_cm_rej()` also emits `icm_send_rej` first (cm.c traces
/// the REJ before it looks at the state).
pub(crate) fn for_refusal(state: State, input: Input, r: Refusal) -> Option<IdTrace> {
    let api = r == Refusal::Invalid;
    Some(match input {
        Input::SendRtu if api => IdTrace::SendCmRtuErr,
        Input::SendDreq if api => IdTrace::DreqSkipped,
        Input::SendDrep if api => IdTrace::SendDrepErr,
        Input::SendRej if api => IdTrace::SendUnknownRejErr,
        Input::SendMra { .. } if api => IdTrace::SendMraUnknownErr,
        Input::NotifyEstablished if api => IdTrace::EstablishErr,
        Input::RecvRej { .. } => IdTrace::RejUnknownErr,
        // A duplicate DREQ (DREQ_RCVD) is only counted.
        Input::RecvDreq if r == Refusal::Ignore => IdTrace::DreqUnknownErr,
        // cm.c's MRA handler traces every MRA outside REQ_SENT, REP_SENT and ESTABLISHED
        // (duplicates included); in those three a mismatching MRA is dropped silently.
        Input::RecvMra { .. }
            if !matches!(state, State::ReqSent | State::RepSent | State::Established) =>
        {
            IdTrace::MraUnknownErr
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::state::Lap;
    use crate::logic::table;
    use std::vec::Vec;

    const ALL: [State; 16] = State::ALL;

    /// The tracepoint each refused input emits in each state, from the step function's own
    /// refusals.
    fn refused(input: Input) -> impl Iterator<Item = (State, Option<IdTrace>)> {
        ALL.into_iter().filter_map(move |s| {
            table::step(s, Lap::Uninit, input)
                .err()
                .map(|r| (s, for_refusal(s, input, r)))
        })
    }

    #[test]
    fn wrong_state_api_calls_trace_as_cm_c() {
        for (input, want) in [
            (Input::SendRtu, IdTrace::SendCmRtuErr),
            (Input::SendDreq, IdTrace::DreqSkipped),
            (Input::SendDrep, IdTrace::SendDrepErr),
            (Input::SendRej, IdTrace::SendUnknownRejErr),
            (Input::SendMra { delay: false }, IdTrace::SendMraUnknownErr),
        ] {
            let mut n = 0;
            for (s, t) in refused(input) {
                assert_eq!(t, Some(want), "{input:?} in {s:?}");
                n += 1;
            }
            assert!(n > 0, "{input:?} is refused somewhere");
        }
        // ib_send_cm_dreq() is refused everywhere but ESTABLISHED (cm_send_dreq_locked).
        assert_eq!(refused(Input::SendDreq).count(), ALL.len() - 1);
        // COMM_EST on an established id is -EISCONN and not traced; elsewhere it is.
        for (s, t) in refused(Input::NotifyEstablished) {
            let want = (s != State::Established).then_some(IdTrace::EstablishErr);
            assert_eq!(t, want, "{s:?}");
        }
    }

    #[test]
    fn unexpected_messages_trace_as_cm_c() {
        // A REJ is traced in exactly the states cm_rej_handler does not handle.
        let rej: Vec<(State, Option<IdTrace>)> = refused(Input::RecvRej { stale: false }).collect();
        let states: Vec<State> = rej.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            states,
            [
                State::Idle,
                State::Listen,
                State::DreqRcvd,
                State::Timewait,
                State::SidrReqSent,
                State::SidrReqRcvd
            ]
        );
        assert!(rej.iter().all(|(_, t)| *t == Some(IdTrace::RejUnknownErr)));
        // A DREQ in DREQ_RCVD is a counted duplicate, not traced.
        let dreq: Vec<(State, Option<IdTrace>)> = refused(Input::RecvDreq).collect();
        assert!(dreq
            .iter()
            .any(|&(s, t)| s == State::DreqRcvd && t.is_none()));
        assert!(dreq
            .iter()
            .filter(|(s, _)| *s != State::DreqRcvd)
            .all(|&(_, t)| t == Some(IdTrace::DreqUnknownErr)));
        // An MRA for an MRA'd REQ or REP is counted and traced; a mismatching one in REQ_SENT
        // is dropped silently.
        let mra = Input::RecvMra {
            mraed: MsgKind::Rep,
        };
        for (s, t) in refused(mra) {
            let silent = matches!(s, State::ReqSent | State::RepSent | State::Established);
            assert_eq!(t.is_none(), silent, "{s:?}");
        }
    }

    #[test]
    fn sends_trace_as_cm_c() {
        assert_eq!(for_send(Out::Req), Some(IdTrace::SendReq));
        assert_eq!(for_send(Out::Mra(MsgKind::Rep)), Some(IdTrace::SendMra));
        assert_eq!(
            for_send(Out::ResendMra(MsgKind::Req)),
            Some(IdTrace::SendDupReq)
        );
        assert_eq!(for_send(Out::ResendRejStale), Some(IdTrace::SendDupReq));
        assert_eq!(
            for_send(Out::ResendMra(MsgKind::Rep)),
            Some(IdTrace::SendDupRep)
        );
        assert_eq!(for_send(Out::ResendRtu), Some(IdTrace::SendDupRep));
        assert_eq!(for_send(Out::ResendDrep), None);
        assert_eq!(
            for_send(Out::Rej {
                msg: MsgKind::Req,
                zero_local_id: false
            }),
            None
        );
        assert_eq!(IdTrace::DreqSkipped as u32, 22);
    }
}
