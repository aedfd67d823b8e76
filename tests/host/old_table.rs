// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The transition table the module executed before its handlers became direct, kept verbatim
//! as a reference: `logic::table::step`, now built from the per-input decisions of
//! `logic::input`, must agree with it on every (state, LAP state, input) case.

use crate::logic::state::{Event, Input, Lap, MsgKind, Out, Refusal, State};
use crate::logic::table::{Action, Actions, OnFail, Step};

use Action::*;
use State::*;

fn to(next: State, lap: Lap, actions: &[Action], on_fail: OnFail) -> Result<Step, Refusal> {
    Ok(Step {
        next,
        lap,
        actions: Actions::of(actions),
        on_fail,
    })
}

/// The form of a REJ an id sends from `state` (`cm_format_rej`).
fn rej_from(state: State) -> Out {
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

/// The transition function.
pub(crate) fn old_step(state: State, lap: Lap, input: Input) -> Result<Step, Refusal> {
    use OnFail::{Keep, Proceed};
    match input {
        Input::SendReq => match state {
            Idle => to(ReqSent, lap, &[Send(Out::Req)], Keep),
            _ => Err(Refusal::Invalid),
        },
        Input::SendRep => match state {
            ReqRcvd | MraReqSent => to(RepSent, lap, &[Send(Out::Rep)], Keep),
            _ => Err(Refusal::Invalid),
        },
        Input::SendRtu => match state {
            RepRcvd | MraRepSent => to(Established, lap, &[Send(Out::Rtu)], Keep),
            _ => Err(Refusal::Invalid),
        },
        Input::SendDreq => match state {
            Established if matches!(lap, Lap::Sent | Lap::MraLapRcvd) => {
                to(DreqSent, lap, &[Cancel, Send(Out::Dreq)], OnFail::Timewait)
            }
            Established => to(DreqSent, lap, &[Send(Out::Dreq)], OnFail::Timewait),
            _ => Err(Refusal::Invalid),
        },
        Input::SendDrep => match state {
            DreqRcvd => to(Timewait, lap, &[EnterTimewait, Send(Out::Drep)], Proceed),
            _ => Err(Refusal::Invalid),
        },
        Input::SendRej => match state {
            ReqSent | MraReqRcvd | ReqRcvd | MraReqSent | RepRcvd | MraRepSent => {
                to(Idle, lap, &[ResetRemote, Send(rej_from(state))], Proceed)
            }
            RepSent | MraRepRcvd => to(
                Timewait,
                lap,
                &[EnterTimewait, Send(rej_from(state))],
                Proceed,
            ),
            _ => Err(Refusal::Invalid),
        },
        Input::SendMra { delay } => {
            let (next, next_lap, kind) = match state {
                ReqRcvd => (MraReqSent, lap, MsgKind::Req),
                RepRcvd => (MraRepSent, lap, MsgKind::Rep),
                Established if lap == Lap::Rcvd => (Established, Lap::MraLapSent, MsgKind::Other),
                _ => return Err(Refusal::Invalid),
            };
            if delay {
                to(next, next_lap, &[], Keep)
            } else {
                to(next, next_lap, &[Send(Out::Mra(kind))], Keep)
            }
        }
        Input::SendSidrReq => match state {
            Idle => to(SidrReqSent, lap, &[Send(Out::SidrReq)], Keep),
            _ => Err(Refusal::Invalid),
        },
        Input::SendSidrRep => match state {
            SidrReqRcvd => to(Idle, lap, &[Send(Out::SidrRep), ResetRemote], Keep),
            _ => Err(Refusal::Invalid),
        },
        Input::NotifyEstablished => match state {
            // cm.c sets ESTABLISHED first and then finds the device going down (-ENODEV).
            RepSent | MraRepRcvd => to(Established, lap, &[QueueEstablished], OnFail::Proceed),
            Established => Err(Refusal::IsConn),
            _ => Err(Refusal::Invalid),
        },
        Input::NotifyPathMig => match (state, lap) {
            (Established, Lap::Uninit | Lap::Idle) => to(Established, Lap::Idle, &[Migrate], Keep),
            _ => Err(Refusal::Invalid),
        },
        Input::UserEstablished => match state {
            Established => to(
                Established,
                lap,
                &[Cancel, Deliver(Event::UserEstablished)],
                Keep,
            ),
            _ => Err(Refusal::Ignore),
        },
        Input::Destroy { enomem, xrc_tgt } => destroy(state, lap, enomem, xrc_tgt),
        Input::RecvRep => match state {
            ReqSent | MraReqRcvd => to(
                RepRcvd,
                lap,
                &[InsertRemote, AcceptRep, Cancel, Deliver(Event::RepReceived)],
                Keep,
            ),
            _ => Err(Refusal::Ignore),
        },
        Input::RecvDupRep => match state {
            Established => to(state, lap, &[CountDuplicate, Send(Out::ResendRtu)], Keep),
            MraRepSent => to(
                state,
                lap,
                &[CountDuplicate, Send(Out::ResendMra(MsgKind::Rep))],
                Keep,
            ),
            _ => Err(Refusal::Duplicate),
        },
        Input::RecvDupReq => match state {
            MraReqSent => to(
                state,
                lap,
                &[CountDuplicate, Send(Out::ResendMra(MsgKind::Req))],
                Keep,
            ),
            Timewait => to(
                state,
                lap,
                &[CountDuplicate, Send(Out::ResendRejStale)],
                Keep,
            ),
            _ => Err(Refusal::Duplicate),
        },
        Input::RecvRtu => match state {
            RepSent | MraRepRcvd => to(
                Established,
                lap,
                &[Cancel, Deliver(Event::RtuReceived)],
                Keep,
            ),
            _ => Err(Refusal::Duplicate),
        },
        Input::RecvDreq => match state {
            RepSent | DreqSent | MraRepRcvd => to(
                DreqRcvd,
                lap,
                &[Cancel, SaveTid, Deliver(Event::DreqReceived)],
                Keep,
            ),
            Established if matches!(lap, Lap::Sent | Lap::MraLapRcvd) => to(
                DreqRcvd,
                lap,
                &[Cancel, SaveTid, Deliver(Event::DreqReceived)],
                Keep,
            ),
            Established => to(
                DreqRcvd,
                lap,
                &[SaveTid, Deliver(Event::DreqReceived)],
                Keep,
            ),
            Timewait => to(
                Timewait,
                lap,
                &[CountDuplicate, Send(Out::ResendDrep)],
                Keep,
            ),
            DreqRcvd => Err(Refusal::Duplicate),
            _ => Err(Refusal::Ignore),
        },
        Input::RecvDrep => match state {
            DreqSent | DreqRcvd => to(
                Timewait,
                lap,
                &[EnterTimewait, Cancel, Deliver(Event::DrepReceived)],
                Keep,
            ),
            _ => Err(Refusal::Ignore),
        },
        Input::RecvRej { stale } => {
            let leave = if stale { EnterTimewait } else { ResetRemote };
            let left = if stale { Timewait } else { Idle };
            let ev = Deliver(Event::RejReceived);
            match state {
                ReqSent | MraReqRcvd | RepSent | MraRepRcvd => {
                    to(left, lap, &[Cancel, leave, ev], Keep)
                }
                ReqRcvd | MraReqSent => to(left, lap, &[leave, ev], Keep),
                DreqSent => to(Timewait, lap, &[Cancel, EnterTimewait, ev], Keep),
                RepRcvd | MraRepSent => to(Timewait, lap, &[EnterTimewait, ev], Keep),
                Established if lap == Lap::Sent => {
                    to(Timewait, lap, &[Cancel, EnterTimewait, ev], Keep)
                }
                Established if lap == Lap::Uninit => to(Timewait, lap, &[EnterTimewait, ev], Keep),
                _ => Err(Refusal::Ignore),
            }
        }
        Input::RecvMra { mraed } => {
            let ev = Deliver(Event::MraReceived);
            match (state, mraed) {
                (ReqSent, MsgKind::Req) => to(MraReqRcvd, lap, &[ModifyTimeout, ev], Keep),
                (RepSent, MsgKind::Rep) => to(MraRepRcvd, lap, &[ModifyTimeout, ev], Keep),
                (Established, MsgKind::Other) if lap == Lap::Sent => {
                    to(Established, Lap::MraLapRcvd, &[ModifyTimeout, ev], Keep)
                }
                (Established, _) if lap == Lap::MraLapRcvd => Err(Refusal::Duplicate),
                (MraReqRcvd | MraRepRcvd, _) => Err(Refusal::Duplicate),
                _ => Err(Refusal::Ignore),
            }
        }
        Input::RecvSidrRep => match state {
            SidrReqSent => to(Idle, lap, &[Cancel, Deliver(Event::SidrRepReceived)], Keep),
            _ => Err(Refusal::Ignore),
        },
        // `cm_lap_handler()`: the id's addresses are replaced before this step whatever the
        // state (the kernel side does that); only an established id with no alternate path
        // exchange under way takes the LAP.
        Input::RecvLap => match (state, lap) {
            (Established, Lap::Uninit | Lap::Idle) => to(
                Established,
                Lap::Rcvd,
                &[SaveTid, Deliver(Event::LapReceived)],
                Keep,
            ),
            // Our MRA for it was lost: send it again.
            (Established, Lap::MraLapSent) => to(
                state,
                lap,
                &[CountDuplicate, Send(Out::ResendMra(MsgKind::Other))],
                Keep,
            ),
            (Established, Lap::Rcvd) => Err(Refusal::Duplicate),
            _ => Err(Refusal::Ignore),
        },
        // `cm_apr_handler()`.
        Input::RecvApr => match (state, lap) {
            (Established, Lap::Sent | Lap::MraLapRcvd) => to(
                Established,
                Lap::Idle,
                &[Cancel, Deliver(Event::AprReceived)],
                Keep,
            ),
            _ => Err(Refusal::Ignore),
        },
        Input::SendFailed { sent_in } if sent_in != state => Err(Refusal::Ignore),
        Input::SendFailed { .. } => match state {
            ReqSent | MraReqRcvd => to(Idle, lap, &[ResetRemote, Deliver(Event::ReqError)], Keep),
            RepSent | MraRepRcvd => to(Idle, lap, &[ResetRemote, Deliver(Event::RepError)], Keep),
            DreqSent => to(
                Timewait,
                lap,
                &[EnterTimewait, Deliver(Event::DreqError)],
                Keep,
            ),
            SidrReqSent => to(Idle, lap, &[Deliver(Event::SidrReqError)], Keep),
            _ => Err(Refusal::Ignore),
        },
        Input::TimewaitExpired => match state {
            Timewait => to(Idle, lap, &[Deliver(Event::TimewaitExit)], Keep),
            _ => Err(Refusal::Ignore),
        },
    }
}

/// `cm_destroy_id()` by state, its `retest` loop unrolled: the farewell message, then IDLE.
/// The listener case is the listen table's business and only resets the state here.
fn destroy(state: State, lap: Lap, enomem: bool, xrc_tgt: bool) -> Result<Step, Refusal> {
    use OnFail::Proceed;
    let timeout_rej = Send(Out::Rej {
        msg: MsgKind::Other,
        zero_local_id: false,
    });
    match state {
        Idle | Listen | Timewait => to(Idle, lap, &[], Proceed),
        SidrReqSent => to(Idle, lap, &[Cancel], Proceed),
        SidrReqRcvd => to(Idle, lap, &[Send(Out::SidrRep), ResetRemote], Proceed),
        // REJ TIMEOUT with the node GUID as ARI (the executor fills reason and ARI).
        ReqSent | MraReqRcvd => to(Idle, lap, &[Cancel, ResetRemote, timeout_rej], Proceed),
        ReqRcvd if enomem => to(Idle, lap, &[ResetRemote], Proceed),
        ReqRcvd | MraReqSent | RepRcvd | MraRepSent => {
            to(Idle, lap, &[ResetRemote, Send(rej_from(state))], Proceed)
        }
        RepSent | MraRepRcvd => to(
            Idle,
            lap,
            &[Cancel, EnterTimewait, Send(rej_from(state))],
            Proceed,
        ),
        Established if xrc_tgt => to(Idle, lap, &[], Proceed),
        // The DREQ goes out, is cancelled at once, and the id passes through timewait.
        Established => to(
            Idle,
            lap,
            &[Send(Out::Dreq), Cancel, EnterTimewait],
            Proceed,
        ),
        DreqSent => to(Idle, lap, &[Cancel, EnterTimewait], Proceed),
        DreqRcvd => to(Idle, lap, &[EnterTimewait, Send(Out::Drep)], Proceed),
    }
}
