// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The connection state machine as a pure function: (state, LAP state, input) in, the next
//! states and a short list of actions out.
//!
//! Stands for the `switch (cm_id->state)` ladders of cm.c: `ib_send_cm_req/rep/rtu/dreq/drep/
//! rej/mra/sidr_req/sidr_rep()`, `cm_establish()`, `cm_migrate()`, `cm_destroy_id()`, the
//! state checks of `cm_rep_handler()`, `cm_dup_rep_handler()`, `cm_rtu_handler()`,
//! `cm_establish_handler()`, `cm_dreq_handler()`, `cm_drep_handler()`, `cm_rej_handler()`,
//! `cm_mra_handler()`, `cm_dup_req_handler()`, `cm_sidr_rep_handler()`,
//! `cm_timewait_handler()` and `cm_process_send_error()`.
//!
//! Nothing here touches the kernel: the caller holds the id's lock, calls [`step`], executes
//! the actions in order and stores the new states (`Documentation/design.rst`, "Connections").
//! Fallible actions ([`Action::Send`], [`Action::ModifyTimeout`], [`Action::InsertRemote`])
//! follow the step's [`OnFail`] policy when they fail, which is how cm.c differs between
//! "the state changes only once the MAD is posted" and "the state changes whatever happens".

/// `enum ib_cm_state`, with the ABI's values (all below 256: one byte in every id).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum State {
    /// Unused, or back to unused.
    Idle = 0,
    /// A listener.
    Listen = 1,
    /// Active: REQ sent.
    ReqSent = 2,
    /// Passive: REQ received, not yet answered.
    ReqRcvd = 3,
    /// Passive: MRA sent for the REQ.
    MraReqSent = 4,
    /// Active: the peer MRAed our REQ.
    MraReqRcvd = 5,
    /// Passive: REP sent.
    RepSent = 6,
    /// Active: REP received.
    RepRcvd = 7,
    /// Active: MRA sent for the REP.
    MraRepSent = 8,
    /// Passive: the peer MRAed our REP.
    MraRepRcvd = 9,
    /// Connected.
    Established = 10,
    /// DREQ sent.
    DreqSent = 11,
    /// DREQ received.
    DreqRcvd = 12,
    /// Disconnected, waiting for stray packets to drain.
    Timewait = 13,
    /// SIDR_REQ sent.
    SidrReqSent = 14,
    /// SIDR_REQ received.
    SidrReqRcvd = 15,
}

impl State {
    /// Every state, in ABI order.
    pub(crate) const ALL: [State; 16] = [
        State::Idle,
        State::Listen,
        State::ReqSent,
        State::ReqRcvd,
        State::MraReqSent,
        State::MraReqRcvd,
        State::RepSent,
        State::RepRcvd,
        State::MraRepSent,
        State::MraRepRcvd,
        State::Established,
        State::DreqSent,
        State::DreqRcvd,
        State::Timewait,
        State::SidrReqSent,
        State::SidrReqRcvd,
    ];

    /// The state of an ABI value.
    pub(crate) fn from_raw(v: u32) -> Option<State> {
        Self::ALL.get(usize::try_from(v).ok()?).copied()
    }

    /// The ABI value.
    pub(crate) fn raw(self) -> u32 {
        // CAST: a fieldless `repr(u8)` enum to its discriminant.
        u32::from(self as u8)
    }

    /// The state's name without the `IB_CM_` prefix, as the tracepoints print it.
    pub(crate) fn name(self) -> &'static str {
        const NAMES: [&str; 16] = [
            "IDLE",
            "LISTEN",
            "REQ_SENT",
            "REQ_RCVD",
            "MRA_REQ_SENT",
            "MRA_REQ_RCVD",
            "REP_SENT",
            "REP_RCVD",
            "MRA_REP_SENT",
            "MRA_REP_RCVD",
            "ESTABLISHED",
            "DREQ_SENT",
            "DREQ_RCVD",
            "TIMEWAIT",
            "SIDR_REQ_SENT",
            "SIDR_REQ_RCVD",
        ];
        NAMES[self as usize]
    }
}

/// `enum ib_cm_lap_state`, with the ABI's values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(crate) enum Lap {
    /// No alternate path business yet.
    Uninit = 0,
    /// Migrated or loaded; idle.
    Idle = 1,
    /// LAP sent (no API sends one in 6.12).
    Sent = 2,
    /// LAP received.
    Rcvd = 3,
    /// MRA sent for a LAP.
    MraLapSent = 4,
    /// MRA received for our LAP.
    MraLapRcvd = 5,
}

impl Lap {
    /// Every LAP state, in ABI order.
    pub(crate) const ALL: [Lap; 6] = [
        Lap::Uninit,
        Lap::Idle,
        Lap::Sent,
        Lap::Rcvd,
        Lap::MraLapSent,
        Lap::MraLapRcvd,
    ];

    /// The LAP state of an ABI value.
    pub(crate) fn from_raw(v: u32) -> Option<Lap> {
        Self::ALL.get(usize::try_from(v).ok()?).copied()
    }

    /// The ABI value.
    pub(crate) fn raw(self) -> u32 {
        // CAST: a fieldless `repr(u32)` enum to its discriminant.
        self as u32
    }
}

/// Which message an MRA or a REJ answers (`enum cm_msg_response`, the wire values).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum MsgKind {
    /// A REQ.
    Req = 0,
    /// A REP.
    Rep = 1,
    /// Anything else (a LAP, or a REJ after the handshake).
    Other = 2,
}

impl MsgKind {
    /// The kind of a wire value (3 is reserved).
    pub(crate) fn from_wire(v: u8) -> Option<MsgKind> {
        match v {
            0 => Some(MsgKind::Req),
            1 => Some(MsgKind::Rep),
            2 => Some(MsgKind::Other),
            _ => None,
        }
    }

    /// The wire value.
    pub(crate) fn wire(self) -> u8 {
        // CAST: a fieldless `repr(u8)` enum to its discriminant.
        self as u8
    }
}

/// What happened to an id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Input {
    /// `ib_send_cm_req()`.
    SendReq,
    /// `ib_send_cm_rep()`.
    SendRep,
    /// `ib_send_cm_rtu()`.
    SendRtu,
    /// `ib_send_cm_dreq()`.
    SendDreq,
    /// `ib_send_cm_drep()`.
    SendDrep,
    /// `ib_send_cm_rej()`.
    SendRej,
    /// `ib_send_cm_mra()`; `delay` is the `IB_CM_MRA_FLAG_DELAY` bit (the MRA is only sent
    /// when a duplicate arrives).
    SendMra {
        /// The delay flag.
        delay: bool,
    },
    /// `ib_send_cm_sidr_req()`.
    SendSidrReq,
    /// `ib_send_cm_sidr_rep()`.
    SendSidrRep,
    /// `ib_cm_notify(IB_EVENT_COMM_EST)`.
    NotifyEstablished,
    /// `ib_cm_notify(IB_EVENT_PATH_MIG)`.
    NotifyPathMig,
    /// The work item queued by [`Input::NotifyEstablished`] runs.
    UserEstablished,
    /// `ib_destroy_cm_id()` (or a handler's non-zero return, `enomem` for `-ENOMEM`).
    Destroy {
        /// The handler refused with `-ENOMEM`: no REJ, so the peer retries.
        enomem: bool,
        /// The id is an XRC target (an established one goes to IDLE without a DREQ).
        xrc_tgt: bool,
    },
    /// A REP for this id's comm ID with no remote ID yet.
    RecvRep,
    /// A REP for an id whose remote ID is the REP's (a retransmission).
    RecvDupRep,
    /// A REQ whose remote keys this id holds (a retransmission).
    RecvDupReq,
    /// An RTU.
    RecvRtu,
    /// A DREQ whose remote QPN is this id's local QPN.
    RecvDreq,
    /// A DREP.
    RecvDrep,
    /// A REJ; `stale` for reason STALE_CONN.
    RecvRej {
        /// Reason 10.
        stale: bool,
    },
    /// An MRA for the given message.
    RecvMra {
        /// What it acknowledges.
        mraed: MsgKind,
    },
    /// A SIDR_REP.
    RecvSidrRep,
    /// A LAP (IB and OPA ports; cm.c drops LAPs on RoCE before they reach an id).
    RecvLap,
    /// An APR (likewise; only an id whose LAP is outstanding takes one, and nothing in 6.12
    /// sends a LAP).
    RecvApr,
    /// The tracked MAD ended in error (timeout after its retries), sent in `sent_in`.
    SendFailed {
        /// The state recorded with the MAD when it was sent (or re-armed by an MRA).
        sent_in: State,
    },
    /// The timewait timer fired.
    TimewaitExpired,
}

/// A message an action sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Out {
    /// REQ (tracked: timeout and retries).
    Req,
    /// REP (tracked).
    Rep,
    /// RTU.
    Rtu,
    /// DREQ (tracked).
    Dreq,
    /// DREP.
    Drep,
    /// SIDR_REQ (tracked).
    SidrReq,
    /// SIDR_REP.
    SidrRep,
    /// REJ of message `msg`; `zero_local_id` for a REQ not answered yet (cm.c sends comm ID 0).
    Rej {
        /// The message rejected.
        msg: MsgKind,
        /// Local comm ID 0 on the wire.
        zero_local_id: bool,
    },
    /// MRA for `0`.
    Mra(MsgKind),
    /// Answers to a received retransmission, sent back to its sender with the id's TID (the
    /// one of the exchange, as cm.c): the RTU again, the stored MRA again, the DREP again, or
    /// REJ STALE_CONN.
    ResendRtu,
    /// See [`Out::ResendRtu`].
    ResendMra(MsgKind),
    /// See [`Out::ResendRtu`].
    ResendDrep,
    /// See [`Out::ResendRtu`].
    ResendRejStale,
}

impl Out {
    /// Whether the MAD layer retransmits it until answered (the id's tracked MAD).
    pub(crate) fn tracked(self) -> bool {
        matches!(self, Out::Req | Out::Rep | Out::Dreq | Out::SidrReq)
    }
}

/// Whether an id in `state` keeps its connection address handle (`ah.rs`, design A in
/// `Documentation/performance.rst`): made by the REQ (active side) or the REP (passive side)
/// and kept through the connection and its timewait, until the id is back in IDLE. Listeners
/// and SIDR ids never have one (a SIDR_REQ and its SIDR_REP go on a handle per send).
pub(crate) fn keeps_conn_ah(state: State) -> bool {
    !matches!(
        state,
        State::Idle | State::Listen | State::SidrReqSent | State::SidrReqRcvd
    )
}

/// `IB_CM_REJ_TIMEOUT`.
pub(crate) const REJ_TIMEOUT: u16 = 4;

/// The reason of a REJ the CM sends on its own, from `state` (`cm_destroy_id`, a handler's
/// refusal): TIMEOUT from the active side's REQ states, whose ARI is then the device's node
/// GUID; CONSUMER_DEFINED from every other state.
pub(crate) fn own_rej_reason(state: State) -> u16 {
    if matches!(state, State::ReqSent | State::MraReqRcvd) {
        REJ_TIMEOUT
    } else {
        crate::logic::req_event::REJ_CONSUMER_DEFINED
    }
}

/// `enum ib_cm_event_type` of the events the state machine delivers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(crate) enum Event {
    /// REQ timed out.
    ReqError = 0,
    /// REP timed out.
    RepError = 2,
    /// REP received.
    RepReceived = 3,
    /// RTU received.
    RtuReceived = 4,
    /// `ib_cm_notify(COMM_EST)` took effect.
    UserEstablished = 5,
    /// DREQ timed out.
    DreqError = 6,
    /// DREQ received.
    DreqReceived = 7,
    /// DREP received.
    DrepReceived = 8,
    /// Timewait over.
    TimewaitExit = 9,
    /// MRA received.
    MraReceived = 10,
    /// REJ received.
    RejReceived = 11,
    /// LAP received.
    LapReceived = 13,
    /// APR received.
    AprReceived = 14,
    /// SIDR_REQ timed out.
    SidrReqError = 15,
    /// SIDR_REP received.
    SidrRepReceived = 17,
}

impl Event {
    /// The ABI value.
    pub(crate) fn raw(self) -> u32 {
        // CAST: a fieldless `repr(u32)` enum to its discriminant.
        self as u32
    }
}

/// One thing the kernel side does for a step.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Action {
    /// Cancel the id's tracked MAD, if any (`ib_cancel_mad`).
    Cancel,
    /// Extend the tracked MAD's wait by the MRA's service timeout and tag it with the new
    /// state (`ib_modify_mad`); fallible.
    ModifyTimeout,
    /// Leave the duplicate and stale tables (`cm_reset_to_idle`).
    ResetRemote,
    /// Leave the tables and arm the timewait timer (`cm_enter_timewait`).
    EnterTimewait,
    /// Register the REP's remote keys (duplicate-REP and stale-QP checks); fallible.
    InsertRemote,
    /// Take the REP's parameters (remote comm ID, QPN, PSN, ACK delay, ...).
    AcceptRep,
    /// Take the DREQ's TID as the id's.
    SaveTid,
    /// Send a message; fallible.
    Send(Out),
    /// Deliver an event to the id's handler (queued, in order, no lock held).
    Deliver(Event),
    /// Count the received MAD in `cm_rx_duplicates`.
    CountDuplicate,
    /// Queue the USER_ESTABLISHED work (`cm_establish`); fallible.
    QueueEstablished,
    /// Use the alternate address as the primary (`cm_migrate`).
    Migrate,
}

/// What a failed fallible action does to the rest of the step.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum OnFail {
    /// Stop: nothing after it happens and the states stay as they were.
    Keep,
    /// Carry on: the remaining actions run and the new states are stored; the error is
    /// still returned (cm.c's REJ and DREP change state before sending).
    Proceed,
    /// Enter timewait instead (a DREQ that cannot be posted, `cm_send_dreq_locked`).
    Timewait,
}

/// Up to six actions, in order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Actions {
    list: [Option<Action>; 6],
}

impl Actions {
    const fn of(a: &[Action]) -> Actions {
        let mut list = [None; 6];
        let mut i = 0;
        while i < a.len() && i < 6 {
            list[i] = Some(a[i]);
            i += 1;
        }
        Actions { list }
    }

    /// The actions, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Action> + '_ {
        self.list.iter().map_while(|a| *a)
    }
}

/// The outcome of an accepted input.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Step {
    /// The new state.
    pub(crate) next: State,
    /// The new LAP state.
    pub(crate) lap: Lap,
    /// What to do, in order.
    pub(crate) actions: Actions,
    /// What a failed fallible action does.
    pub(crate) on_fail: OnFail,
}

/// Why an input was not accepted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Refusal {
    /// An API call in the wrong state: `-EINVAL`.
    Invalid,
    /// `ib_cm_notify(COMM_EST)` on an established id: `-EISCONN`.
    IsConn,
    /// A received message or timer the state does not expect: dropped.
    Ignore,
    /// A received message that repeats one already handled: dropped and counted as a
    /// duplicate.
    Duplicate,
}

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
pub(crate) fn step(state: State, lap: Lap, input: Input) -> Result<Step, Refusal> {
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
