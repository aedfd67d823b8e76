// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The connection state machine as one pure decision per input: the state an id is in (and
//! its LAP state where cm.c looks at it) in, what the input does out.
//!
//! Stands for the `switch (cm_id->state)` ladders of cm.c: `ib_send_cm_req/rep/rtu/dreq/drep/
//! rej/mra/sidr_req/sidr_rep()`, `cm_establish()`, `cm_migrate()`, `cm_destroy_id()`, the
//! state checks of `cm_rep_handler()`, `cm_dup_rep_handler()`, `cm_rtu_handler()`,
//! `cm_establish_handler()`, `cm_dreq_handler()`, `cm_drep_handler()`, `cm_rej_handler()`,
//! `cm_mra_handler()`, `cm_dup_req_handler()`, `cm_sidr_rep_handler()`, `cm_lap_handler()`,
//! `cm_apr_handler()`, `cm_timewait_handler()` and `cm_process_send_error()`.
//!
//! Each handler in `conn/` takes the id's lock, asks its input's function here and does what
//! the answer says with the objects at hand (`Documentation/design.rst`, "Connections"). An
//! `Err` is a refusal: the input changes nothing. The generic table of `super::table` is
//! built from these functions, so the host tests of every (state, LAP state, input) pair
//! against cm.c's lists cover them; what a handler does beside its decision is tested in the
//! guest only.

use super::state::{Event, Lap, MsgKind, Out, Refusal, State};
use State::*;

/// How an id leaves a connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Leave {
    /// Leave the duplicate and stale tables (`cm_reset_to_idle`).
    Remote,
    /// Leave the tables and arm the timewait timer (`cm_enter_timewait`): the state is
    /// TIMEWAIT from there on.
    Timewait,
}

/// The form of a REJ an id sends from `state` (`cm_format_rej`).
pub(crate) fn rej_form(state: State) -> Out {
    match state {
        ReqRcvd => Out::Rej {
            msg: MsgKind::Req,
            zero_local_id: true,
        },
        MraReqSent => Out::Rej {
            msg: MsgKind::Req,
            zero_local_id: false,
        },
        RepRcvd | MraRepSent => Out::Rej {
            msg: MsgKind::Rep,
            zero_local_id: false,
        },
        _ => Out::Rej {
            msg: MsgKind::Other,
            zero_local_id: false,
        },
    }
}

/// Accepted in exactly `ok`, refused as an API call (`-EINVAL`) elsewhere.
fn api(state: State, ok: &[State]) -> Result<(), Refusal> {
    if ok.contains(&state) {
        Ok(())
    } else {
        Err(Refusal::Invalid)
    }
}

/// `ib_send_cm_req()`: IDLE -> REQ_SENT once the REQ is posted.
pub(crate) fn send_req(state: State) -> Result<(), Refusal> {
    api(state, &[Idle])
}

/// `ib_send_cm_rep()`: REQ_RCVD or MRA_REQ_SENT -> REP_SENT once the REP is posted.
pub(crate) fn send_rep(state: State) -> Result<(), Refusal> {
    api(state, &[ReqRcvd, MraReqSent])
}

/// `ib_send_cm_rtu()`: REP_RCVD or MRA_REP_SENT -> ESTABLISHED once the RTU is posted.
pub(crate) fn send_rtu(state: State) -> Result<(), Refusal> {
    api(state, &[RepRcvd, MraRepSent])
}

/// `ib_send_cm_dreq()` accepted: ESTABLISHED -> DREQ_SENT once the DREQ is posted; a DREQ
/// that cannot be posted enters timewait instead (`cm_send_dreq_locked`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SendDreq {
    /// Cancel the outstanding LAP first.
    pub(crate) cancel: bool,
}

/// `ib_send_cm_dreq()`.
pub(crate) fn send_dreq(state: State, lap: Lap) -> Result<SendDreq, Refusal> {
    api(state, &[Established])?;
    Ok(SendDreq {
        cancel: matches!(lap, Lap::Sent | Lap::MraLapRcvd),
    })
}

/// `ib_send_cm_drep()`: DREQ_RCVD -> TIMEWAIT first, then the DREP (the state change stands if
/// it cannot be sent).
pub(crate) fn send_drep(state: State) -> Result<(), Refusal> {
    api(state, &[DreqRcvd])
}

/// `ib_send_cm_rej()` (and a destroy's REJ) accepted: leave, then the REJ; the state change
/// stands if the REJ cannot be sent (`cm_send_rej_locked`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SendRej {
    /// IDLE, or TIMEWAIT.
    pub(crate) next: State,
    /// How the id leaves.
    pub(crate) leave: Leave,
    /// The REJ's form.
    pub(crate) rej: Out,
}

/// `ib_send_cm_rej()`.
pub(crate) fn send_rej(state: State) -> Result<SendRej, Refusal> {
    let (next, leave) = match state {
        ReqSent | MraReqRcvd | ReqRcvd | MraReqSent | RepRcvd | MraRepSent => (Idle, Leave::Remote),
        RepSent | MraRepRcvd => (Timewait, Leave::Timewait),
        _ => return Err(Refusal::Invalid),
    };
    Ok(SendRej {
        next,
        leave,
        rej: rej_form(state),
    })
}

/// `ib_send_cm_mra()` accepted: the new states, and what the MRA acknowledges. With
/// `IB_CM_MRA_FLAG_DELAY` nothing is sent; otherwise the states change once it is posted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SendMra {
    /// The new state.
    pub(crate) next: State,
    /// The new LAP state.
    pub(crate) lap: Lap,
    /// The message acknowledged.
    pub(crate) kind: MsgKind,
}

/// `ib_send_cm_mra()`.
pub(crate) fn send_mra(state: State, lap: Lap) -> Result<SendMra, Refusal> {
    let (next, lap, kind) = match state {
        ReqRcvd => (MraReqSent, lap, MsgKind::Req),
        RepRcvd => (MraRepSent, lap, MsgKind::Rep),
        Established if lap == Lap::Rcvd => (Established, Lap::MraLapSent, MsgKind::Other),
        _ => return Err(Refusal::Invalid),
    };
    Ok(SendMra { next, lap, kind })
}

/// `ib_send_cm_sidr_req()`: IDLE -> SIDR_REQ_SENT once the SIDR_REQ is posted.
pub(crate) fn send_sidr_req(state: State) -> Result<(), Refusal> {
    api(state, &[Idle])
}

/// `ib_send_cm_sidr_rep()`: SIDR_REQ_RCVD -> IDLE, out of the SIDR table, once the reply is
/// posted.
pub(crate) fn send_sidr_rep(state: State) -> Result<(), Refusal> {
    api(state, &[SidrReqRcvd])
}

/// `ib_cm_notify(COMM_EST)` (`cm_establish`): REP_SENT or MRA_REP_RCVD -> ESTABLISHED, then
/// the USER_ESTABLISHED work is queued (the state stands if it cannot be: device going down).
pub(crate) fn notify_established(state: State) -> Result<(), Refusal> {
    match state {
        RepSent | MraRepRcvd => Ok(()),
        Established => Err(Refusal::IsConn),
        _ => Err(Refusal::Invalid),
    }
}

/// `ib_cm_notify(PATH_MIG)` (`cm_migrate`): an established id with no alternate path exchange
/// under way uses its alternate address as the primary; LAP state IDLE.
pub(crate) fn notify_path_mig(state: State, lap: Lap) -> Result<(), Refusal> {
    match (state, lap) {
        (Established, Lap::Uninit | Lap::Idle) => Ok(()),
        _ => Err(Refusal::Invalid),
    }
}

/// The USER_ESTABLISHED work runs (`cm_establish_handler`): in ESTABLISHED the tracked REP's
/// retransmissions end and the event is delivered.
pub(crate) fn user_established(state: State) -> Result<(), Refusal> {
    match state {
        Established => Ok(()),
        _ => Err(Refusal::Ignore),
    }
}

/// `cm_destroy_id()` by state, its `retest` loop unrolled: what the id does before it goes to
/// IDLE (a destroy is never refused, and the state changes whatever a send does).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Farewell {
    /// Nothing (IDLE, LISTEN, TIMEWAIT, an established XRC target).
    Nothing,
    /// Cancel the tracked SIDR_REQ.
    CancelSidrReq,
    /// SIDR_REP REJECT, then out of the SIDR table.
    SidrRep,
    /// Only out of the tables (REQ_RCVD when the handler failed with `-ENOMEM`: no REJ, so
    /// the peer retries).
    LeaveRemote,
    /// A REJ: `cancel` the tracked REQ or REP first, then leave and send it (REJ TIMEOUT with
    /// the node GUID from the active side's REQ states, CONSUMER_DEFINED otherwise).
    Rej {
        /// Cancel the tracked MAD first.
        cancel: bool,
        /// How the id leaves.
        leave: Leave,
        /// The REJ's form.
        rej: Out,
    },
    /// The DREQ goes out, is cancelled at once, and the id passes through timewait.
    Dreq,
    /// Cancel the tracked DREQ and pass through timewait.
    CancelDreq,
    /// Pass through timewait and send the DREP.
    Drep,
}

/// `cm_destroy_id()`: `enomem` when a handler refused the id with `-ENOMEM`, `xrc_tgt` for an
/// XRC target.
pub(crate) fn destroy(state: State, enomem: bool, xrc_tgt: bool) -> Farewell {
    match state {
        Idle | Listen | Timewait => Farewell::Nothing,
        SidrReqSent => Farewell::CancelSidrReq,
        SidrReqRcvd => Farewell::SidrRep,
        ReqSent | MraReqRcvd => Farewell::Rej {
            cancel: true,
            leave: Leave::Remote,
            rej: rej_form(state),
        },
        ReqRcvd if enomem => Farewell::LeaveRemote,
        ReqRcvd | MraReqSent | RepRcvd | MraRepSent => Farewell::Rej {
            cancel: false,
            leave: Leave::Remote,
            rej: rej_form(state),
        },
        RepSent | MraRepRcvd => Farewell::Rej {
            cancel: true,
            leave: Leave::Timewait,
            rej: rej_form(state),
        },
        Established if xrc_tgt => Farewell::Nothing,
        Established => Farewell::Dreq,
        DreqSent => Farewell::CancelDreq,
        DreqRcvd => Farewell::Drep,
    }
}

/// A REP for the id's comm ID (`cm_rep_handler`): REQ_SENT or MRA_REQ_RCVD -> REP_RCVD after
/// the REP's keys are registered (a refused registration changes nothing), the REP's
/// parameters taken and the REQ cancelled; REP_RECEIVED.
pub(crate) fn rep_received(state: State) -> Result<(), Refusal> {
    match state {
        ReqSent | MraReqRcvd => Ok(()),
        _ => Err(Refusal::Ignore),
    }
}

/// A retransmitted REP (`cm_dup_rep_handler`): counted as a duplicate, and the answer sent
/// again from ESTABLISHED (the RTU) or MRA_REP_SENT (the MRA).
pub(crate) fn dup_rep_received(state: State) -> Result<Out, Refusal> {
    match state {
        Established => Ok(Out::ResendRtu),
        MraRepSent => Ok(Out::ResendMra(MsgKind::Rep)),
        _ => Err(Refusal::Duplicate),
    }
}

/// A retransmitted REQ (`cm_dup_req_handler`): counted as a duplicate, and answered from
/// MRA_REQ_SENT (the MRA again) or TIMEWAIT (REJ STALE_CONN).
pub(crate) fn dup_req_received(state: State) -> Result<Out, Refusal> {
    match state {
        MraReqSent => Ok(Out::ResendMra(MsgKind::Req)),
        Timewait => Ok(Out::ResendRejStale),
        _ => Err(Refusal::Duplicate),
    }
}

/// An RTU (`cm_rtu_handler`): REP_SENT or MRA_REP_RCVD -> ESTABLISHED, the REP cancelled;
/// RTU_RECEIVED. Anywhere else it is a counted duplicate.
pub(crate) fn rtu_received(state: State) -> Result<(), Refusal> {
    match state {
        RepSent | MraRepRcvd => Ok(()),
        _ => Err(Refusal::Duplicate),
    }
}

/// What a DREQ does (`cm_dreq_handler`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DreqReceived {
    /// -> DREQ_RCVD with the DREQ's TID; DREQ_RECEIVED. `cancel`: the tracked MAD (REP, DREQ,
    /// LAP) is cancelled first.
    Accept {
        /// Cancel the tracked MAD first.
        cancel: bool,
    },
    /// In TIMEWAIT: counted as a duplicate, the DREP again.
    Resend,
}

/// A DREQ whose remote QPN is the id's local QPN.
pub(crate) fn dreq_received(state: State, lap: Lap) -> Result<DreqReceived, Refusal> {
    Ok(match state {
        RepSent | DreqSent | MraRepRcvd => DreqReceived::Accept { cancel: true },
        Established => DreqReceived::Accept {
            cancel: matches!(lap, Lap::Sent | Lap::MraLapRcvd),
        },
        Timewait => DreqReceived::Resend,
        DreqRcvd => return Err(Refusal::Duplicate),
        _ => return Err(Refusal::Ignore),
    })
}

/// A DREP (`cm_drep_handler`): DREQ_SENT or DREQ_RCVD -> TIMEWAIT, then the DREQ's
/// retransmissions end; DREP_RECEIVED.
pub(crate) fn drep_received(state: State) -> Result<(), Refusal> {
    match state {
        DreqSent | DreqRcvd => Ok(()),
        _ => Err(Refusal::Ignore),
    }
}

/// A REJ accepted (`cm_rej_handler`): cancel the tracked MAD if `cancel`, leave, REJ_RECEIVED.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RejReceived {
    /// Cancel the tracked MAD first.
    pub(crate) cancel: bool,
    /// How the id leaves (IDLE or TIMEWAIT).
    pub(crate) leave: Leave,
}

impl RejReceived {
    /// The state the REJ leaves the id in.
    pub(crate) fn next(self) -> State {
        match self.leave {
            Leave::Remote => Idle,
            Leave::Timewait => Timewait,
        }
    }
}

/// A REJ; `stale` for reason STALE_CONN (which always enters timewait).
pub(crate) fn rej_received(state: State, lap: Lap, stale: bool) -> Result<RejReceived, Refusal> {
    let early = if stale {
        Leave::Timewait
    } else {
        Leave::Remote
    };
    let (cancel, leave) = match state {
        ReqSent | MraReqRcvd | RepSent | MraRepRcvd => (true, early),
        ReqRcvd | MraReqSent => (false, early),
        DreqSent => (true, Leave::Timewait),
        RepRcvd | MraRepSent => (false, Leave::Timewait),
        Established if lap == Lap::Sent => (true, Leave::Timewait),
        Established if lap == Lap::Uninit => (false, Leave::Timewait),
        _ => return Err(Refusal::Ignore),
    };
    Ok(RejReceived { cancel, leave })
}

/// An MRA accepted (`cm_mra_handler`): the tracked MAD waits longer and is tagged with the new
/// state (fallible: a MAD already gone changes nothing); MRA_RECEIVED.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct MraReceived {
    /// The new state.
    pub(crate) next: State,
    /// The new LAP state.
    pub(crate) lap: Lap,
}

/// An MRA for `mraed`.
pub(crate) fn mra_received(state: State, lap: Lap, mraed: MsgKind) -> Result<MraReceived, Refusal> {
    let (next, lap) = match (state, mraed) {
        (ReqSent, MsgKind::Req) => (MraReqRcvd, lap),
        (RepSent, MsgKind::Rep) => (MraRepRcvd, lap),
        (Established, MsgKind::Other) if lap == Lap::Sent => (Established, Lap::MraLapRcvd),
        (Established, _) if lap == Lap::MraLapRcvd => return Err(Refusal::Duplicate),
        (MraReqRcvd | MraRepRcvd, _) => return Err(Refusal::Duplicate),
        _ => return Err(Refusal::Ignore),
    };
    Ok(MraReceived { next, lap })
}

/// A SIDR_REP (`cm_sidr_rep_handler`): SIDR_REQ_SENT -> IDLE, the SIDR_REQ cancelled;
/// SIDR_REP_RECEIVED.
pub(crate) fn sidr_rep_received(state: State) -> Result<(), Refusal> {
    match state {
        SidrReqSent => Ok(()),
        _ => Err(Refusal::Ignore),
    }
}

/// What a LAP does (`cm_lap_handler`; the id's addresses are replaced before, in any state).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LapReceived {
    /// LAP state RCVD with the LAP's TID; LAP_RECEIVED.
    Accept,
    /// Our MRA for it was lost: counted as a duplicate, the MRA again.
    Resend,
}

/// A LAP: only an established id with no alternate path exchange under way takes it.
pub(crate) fn lap_received(state: State, lap: Lap) -> Result<LapReceived, Refusal> {
    match (state, lap) {
        (Established, Lap::Uninit | Lap::Idle) => Ok(LapReceived::Accept),
        (Established, Lap::MraLapSent) => Ok(LapReceived::Resend),
        (Established, Lap::Rcvd) => Err(Refusal::Duplicate),
        _ => Err(Refusal::Ignore),
    }
}

/// An APR (`cm_apr_handler`): an id whose LAP is outstanding cancels it, LAP state IDLE;
/// APR_RECEIVED.
pub(crate) fn apr_received(state: State, lap: Lap) -> Result<(), Refusal> {
    match (state, lap) {
        (Established, Lap::Sent | Lap::MraLapRcvd) => Ok(()),
        _ => Err(Refusal::Ignore),
    }
}

/// A tracked MAD that failed (`cm_process_send_error`): the new state, how the id leaves (if
/// it does) and the `*_ERROR` event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SendFailed {
    /// The new state.
    pub(crate) next: State,
    /// How the id leaves, if it does.
    pub(crate) leave: Option<Leave>,
    /// The event.
    pub(crate) event: Event,
}

/// The tracked MAD sent in `sent_in` failed; only an id still in that state reacts.
pub(crate) fn send_failed(state: State, sent_in: State) -> Result<SendFailed, Refusal> {
    if sent_in != state {
        return Err(Refusal::Ignore);
    }
    let (next, leave, event) = match state {
        ReqSent | MraReqRcvd => (Idle, Some(Leave::Remote), Event::ReqError),
        RepSent | MraRepRcvd => (Idle, Some(Leave::Remote), Event::RepError),
        DreqSent => (Timewait, Some(Leave::Timewait), Event::DreqError),
        SidrReqSent => (Idle, None, Event::SidrReqError),
        _ => return Err(Refusal::Ignore),
    };
    Ok(SendFailed { next, leave, event })
}

/// The timewait timer fired (`cm_timewait_handler`): TIMEWAIT -> IDLE; TIMEWAIT_EXIT.
pub(crate) fn timewait_expired(state: State) -> Result<(), Refusal> {
    match state {
        Timewait => Ok(()),
        _ => Err(Refusal::Ignore),
    }
}
