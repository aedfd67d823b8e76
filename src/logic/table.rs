// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The connection state machine as one generic table: (state, LAP state, input) in, the next
//! states and a short list of actions out.
//!
//! Built from the per-input decisions of `super::input`, which the handlers in `conn/` use
//! directly; this form exists so that the host tests can check every (state, LAP state, input)
//! pair, refusals included, against cm.c's lists in one place (`tests/host/state_tests.rs`),
//! and against the table the module executed before it had direct handlers
//! (`tests/host/old_table.rs`). Fallible actions ([`Action::Send`], [`Action::ModifyTimeout`],
//! [`Action::InsertRemote`]) follow the step's [`OnFail`] policy when they fail, which is how
//! cm.c differs between "the state changes only once the MAD is posted" and "the state
//! changes whatever happens".

use super::input::{self, DreqReceived, Farewell, LapReceived, Leave};
use super::state::{Event, Input, Lap, MsgKind, Out, Refusal, State};

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
    /// The list of `a` (at most six).
    pub(crate) const fn of(a: &[Action]) -> Actions {
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

/// The action of leaving as `l`.
fn leave(l: Leave) -> Action {
    match l {
        Leave::Remote => ResetRemote,
        Leave::Timewait => EnterTimewait,
    }
}

/// The transition function.
pub(crate) fn step(state: State, lap: Lap, input: Input) -> Result<Step, Refusal> {
    use OnFail::{Keep, Proceed};
    match input {
        Input::SendReq => {
            input::send_req(state)?;
            to(ReqSent, lap, &[Send(Out::Req)], Keep)
        }
        Input::SendRep => {
            input::send_rep(state)?;
            to(RepSent, lap, &[Send(Out::Rep)], Keep)
        }
        Input::SendRtu => {
            input::send_rtu(state)?;
            to(Established, lap, &[Send(Out::Rtu)], Keep)
        }
        Input::SendDreq => {
            if input::send_dreq(state, lap)?.cancel {
                to(DreqSent, lap, &[Cancel, Send(Out::Dreq)], OnFail::Timewait)
            } else {
                to(DreqSent, lap, &[Send(Out::Dreq)], OnFail::Timewait)
            }
        }
        Input::SendDrep => {
            input::send_drep(state)?;
            to(Timewait, lap, &[EnterTimewait, Send(Out::Drep)], Proceed)
        }
        Input::SendRej => {
            let r = input::send_rej(state)?;
            to(r.next, lap, &[leave(r.leave), Send(r.rej)], Proceed)
        }
        Input::SendMra { delay } => {
            let m = input::send_mra(state, lap)?;
            if delay {
                to(m.next, m.lap, &[], Keep)
            } else {
                to(m.next, m.lap, &[Send(Out::Mra(m.kind))], Keep)
            }
        }
        Input::SendSidrReq => {
            input::send_sidr_req(state)?;
            to(SidrReqSent, lap, &[Send(Out::SidrReq)], Keep)
        }
        Input::SendSidrRep => {
            input::send_sidr_rep(state)?;
            to(Idle, lap, &[Send(Out::SidrRep), ResetRemote], Keep)
        }
        Input::NotifyEstablished => {
            input::notify_established(state)?;
            // cm.c sets ESTABLISHED first and then finds the device going down (-ENODEV).
            to(Established, lap, &[QueueEstablished], Proceed)
        }
        Input::NotifyPathMig => {
            input::notify_path_mig(state, lap)?;
            to(Established, Lap::Idle, &[Migrate], Keep)
        }
        Input::UserEstablished => {
            input::user_established(state)?;
            to(
                Established,
                lap,
                &[Cancel, Deliver(Event::UserEstablished)],
                Keep,
            )
        }
        Input::Destroy { enomem, xrc_tgt } => {
            let a: &[Action] = match input::destroy(state, enomem, xrc_tgt) {
                Farewell::Nothing => &[],
                Farewell::CancelSidrReq => &[Cancel],
                Farewell::SidrRep => &[Send(Out::SidrRep), ResetRemote],
                Farewell::LeaveRemote => &[ResetRemote],
                Farewell::Rej {
                    cancel: true,
                    leave: l,
                    rej,
                } => &[Cancel, leave(l), Send(rej)],
                Farewell::Rej {
                    cancel: false,
                    leave: l,
                    rej,
                } => &[leave(l), Send(rej)],
                Farewell::Dreq => &[Send(Out::Dreq), Cancel, EnterTimewait],
                Farewell::CancelDreq => &[Cancel, EnterTimewait],
                Farewell::Drep => &[EnterTimewait, Send(Out::Drep)],
            };
            to(Idle, lap, a, Proceed)
        }
        Input::RecvRep => {
            input::rep_received(state)?;
            to(
                RepRcvd,
                lap,
                &[InsertRemote, AcceptRep, Cancel, Deliver(Event::RepReceived)],
                Keep,
            )
        }
        Input::RecvDupRep => {
            let o = input::dup_rep_received(state)?;
            to(state, lap, &[CountDuplicate, Send(o)], Keep)
        }
        Input::RecvDupReq => {
            let o = input::dup_req_received(state)?;
            to(state, lap, &[CountDuplicate, Send(o)], Keep)
        }
        Input::RecvRtu => {
            input::rtu_received(state)?;
            to(
                Established,
                lap,
                &[Cancel, Deliver(Event::RtuReceived)],
                Keep,
            )
        }
        Input::RecvDreq => match input::dreq_received(state, lap)? {
            DreqReceived::Accept { cancel: true } => to(
                DreqRcvd,
                lap,
                &[Cancel, SaveTid, Deliver(Event::DreqReceived)],
                Keep,
            ),
            DreqReceived::Accept { cancel: false } => to(
                DreqRcvd,
                lap,
                &[SaveTid, Deliver(Event::DreqReceived)],
                Keep,
            ),
            DreqReceived::Resend => to(state, lap, &[CountDuplicate, Send(Out::ResendDrep)], Keep),
        },
        Input::RecvDrep => {
            input::drep_received(state)?;
            to(
                Timewait,
                lap,
                &[EnterTimewait, Cancel, Deliver(Event::DrepReceived)],
                Keep,
            )
        }
        Input::RecvRej { stale } => {
            let r = input::rej_received(state, lap, stale)?;
            let ev = Deliver(Event::RejReceived);
            if r.cancel {
                to(r.next(), lap, &[Cancel, leave(r.leave), ev], Keep)
            } else {
                to(r.next(), lap, &[leave(r.leave), ev], Keep)
            }
        }
        Input::RecvMra { mraed } => {
            let m = input::mra_received(state, lap, mraed)?;
            to(
                m.next,
                m.lap,
                &[ModifyTimeout, Deliver(Event::MraReceived)],
                Keep,
            )
        }
        Input::RecvSidrRep => {
            input::sidr_rep_received(state)?;
            to(Idle, lap, &[Cancel, Deliver(Event::SidrRepReceived)], Keep)
        }
        Input::RecvLap => match input::lap_received(state, lap)? {
            LapReceived::Accept => to(
                Established,
                Lap::Rcvd,
                &[SaveTid, Deliver(Event::LapReceived)],
                Keep,
            ),
            LapReceived::Resend => to(
                state,
                lap,
                &[CountDuplicate, Send(Out::ResendMra(MsgKind::Other))],
                Keep,
            ),
        },
        Input::RecvApr => {
            input::apr_received(state, lap)?;
            to(
                Established,
                Lap::Idle,
                &[Cancel, Deliver(Event::AprReceived)],
                Keep,
            )
        }
        Input::SendFailed { sent_in } => {
            let f = input::send_failed(state, sent_in)?;
            match f.leave {
                Some(l) => to(f.next, lap, &[leave(l), Deliver(f.event)], Keep),
                None => to(f.next, lap, &[Deliver(f.event)], Keep),
            }
        }
        Input::TimewaitExpired => {
            input::timewait_expired(state)?;
            to(Idle, lap, &[Deliver(Event::TimewaitExit)], Keep)
        }
    }
}
