// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The connection state machine's vocabulary: the states and LAP states of an id (the ABI's
//! values), the inputs, the messages an id sends, the events it delivers and the ways an input
//! is refused. What each input does is `super::input`, one pure function per input.

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

/// What happened to an id: the inputs of the generic table (`super::table`) and of the
/// refusal tracepoints (`super::trace`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
// The module constructs only the inputs it traces; the host tests construct every one.
#[cfg_attr(not(test), allow(dead_code))]
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
