// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! `ib_destroy_cm_id()`'s protocol half (`cm_destroy_id()` in cm.c): a shared listener loses
//! a share; any other id says the farewell its state requires (REJ, DREQ, DREP, SIDR_REP
//! REJECT, cancel), leaves every table and waits until no use of it is in flight.

use super::{
    cancel_tracked, default_rej, enter_timewait, leave_remote, retire_conn_ah, send_msg, sidr,
};
use crate::{
    bindings,
    cm_id::CmId,
    listen::Released,
    logic::{
        input::{self, Leave},
        req_event::SIDR_REJECT,
        state::{own_rej_reason, Out, State},
        timeout::destroy_wait_ms,
        wire::{
            conn::{CommIdsAndData, Dreq},
            field::Bytes,
            CmMessage,
        },
    },
    remote::Unlinked,
    timewait, trace,
};
use kernel::sync::Arc;

impl CmId {
    /// `cm_destroy_id(id, err)` for one handle reference of `self`.
    ///
    /// A shared listener loses one share and returns at once. Otherwise the id says its
    /// farewell as its state requires (the state machine's destroy actions: REJ, DREQ, DREP,
    /// SIDR_REP REJECT, cancel), leaves every table, and then waits, without a lock held,
    /// until every use in flight has ended. A wait longer than the id's budget
    /// (`logic::timeout::destroy_wait_ms`: its retries x timeout x 5/4, as 6.19 has it in place
    /// of cm.c's fixed 10 s) is counted on the device and reported, rate limited, with the id's
    /// comm ID, states, service ID and handler, again after each further budget.
    ///
    /// A second destroy of the same handle is a caller bug, as in cm.c; it is not detected.
    pub(crate) fn destroy_with(self: &Arc<Self>, err: i32) {
        if self.state() == bindings::ib_cm_state_IB_CM_LISTEN && self.release_share() {
            return;
        }
        let old_state = self.cm_state();
        let farewell = destroy_actions(self, err);
        if let Some(class) = farewell.timewait_class {
            timewait::leave(self, class);
        }
        if let Some(comm) = self.take_comm_id() {
            comm.release(self, farewell.published);
        }
        self.put_user();
        let mut waited_ms = 0u64;
        while !self.wait_unused_ms(farewell.wait_ms) {
            if waited_ms == 0 {
                self.dev.count_slow_destroy();
            }
            waited_ms = waited_ms.saturating_add(u64::from(farewell.wait_ms));
            self.warn_destroy_wait(old_state, waited_ms);
        }
        // The addresses hold sgid attribute references of the device's GID table: release
        // them now, as cm.c's `cm_destroy_av()` does, not when the last memory reference
        // goes (that may be the comm table's, dropped after an RCU grace period).
        let leftovers = {
            let mut g = self.inner.lock();
            (
                g.av.take(),
                g.alt_av.take(),
                g.stored_pd.take(),
                g.events.take(),
            )
        };
        drop(leftovers);
    }

    /// Drops one share of a listener; returns `true` if others remain (the caller is done).
    /// The last share takes the listener out of its tree and marks it destroyed.
    fn release_share(&self) -> bool {
        let mut guard = self.inner.lock();
        let mut dev = self.dev.inner.lock();
        let node = match dev.listen.release(self.service_id(), self) {
            Released::StillShared => return true,
            Released::NotListening => None,
            Released::Removed(node) => Some(node),
        };
        guard.destroyed = true;
        self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
        drop(dev);
        drop(guard);
        // The tree's reference goes with the node, freed outside the locks.
        drop(node);
        false
    }
}

/// What destroy's locked section took from the id, for the rest of `CmId::destroy_with`.
#[must_use = "the id must still leave timewait and the comm-ID table"]
struct Farewell {
    /// The id was in timewait, on the device's list of this class: it must leave it.
    timewait_class: Option<u8>,
    /// The comm-ID table held the id.
    published: bool,
    /// How long to wait for the id's callbacks before reporting the wait.
    wait_ms: u32,
}

/// `cm_destroy_id()`'s per-state part: the farewell `logic::input::destroy` names, then IDLE,
/// out of the remote tables and of timewait, unpublished, in one locked section that first
/// marks the id destroyed (no other input takes it from then on); queued events are dropped
/// undelivered. Sends here are not retransmitted answers: their errors change nothing (cm.c
/// ignores them too), and no timewait is armed.
fn destroy_actions(id: &Arc<CmId>, err: i32) -> Farewell {
    let enomem = err == -(bindings::ENOMEM as i32);
    let mut u = Unlinked::default();
    let mut g = id.inner.lock();
    g.destroyed = true;
    let xrc_tgt = g.conn.qp_type() == bindings::ib_qp_type_IB_QPT_XRC_TGT;
    let state = id.cm_state();
    match input::destroy(state, enomem, xrc_tgt) {
        input::Farewell::Nothing => {}
        input::Farewell::CancelSidrReq => {
            cancel_tracked(id, &mut g);
        }
        input::Farewell::SidrRep => {
            let mut msg = CmMessage::SidrRep(sidr::sidr_rep_of(id, SIDR_REJECT));
            let _ = send_msg(id, &mut g, Out::SidrRep, &mut msg, 0, State::Idle);
            leave_remote(id, &mut g, &mut u);
        }
        input::Farewell::LeaveRemote => leave_remote(id, &mut g, &mut u),
        input::Farewell::Rej { cancel, leave, rej } => {
            // REJ TIMEOUT with the node GUID as ARI from the active side's REQ states,
            // CONSUMER_DEFINED otherwise; traced before the state changes, as cm.c's
            // `cm_send_rej_locked()`.
            // A REQ still waiting in its port's flow-control backlog is dropped unsent: the
            // peer never saw it, so no REJ follows it (cm.c's REQ always went out first).
            let unsent = cancel && cancel_tracked(id, &mut g);
            let mut msg = CmMessage::Rej(default_rej(id));
            if !unsent {
                trace::send_rej(id, own_rej_reason(state));
            }
            match leave {
                Leave::Remote => leave_remote(id, &mut g, &mut u),
                Leave::Timewait => enter_timewait(id, &mut g, false, &mut u),
            }
            if !unsent {
                let _ = send_msg(id, &mut g, rej, &mut msg, 0, State::Idle);
            }
        }
        input::Farewell::Dreq => {
            // The DREQ goes out once (unretried: its retries are cancelled at once, or, if it
            // waits for a flow-control slot, it leaves with none), and the id passes through
            // timewait.
            let mut msg = CmMessage::Dreq(Dreq {
                local_comm_id: 0,
                remote_comm_id: 0,
                remote_qpn_eecn: 0,
                private_data: Bytes::EMPTY,
            });
            // Only the DREQ just sent may be let go once; if the send failed, whatever the id
            // still tracks is cancelled as usual.
            if send_msg(id, &mut g, Out::Dreq, &mut msg, 0, State::Idle).is_ok() {
                g.cancel_tracked_retries(&id.dev);
            } else {
                cancel_tracked(id, &mut g);
            }
            enter_timewait(id, &mut g, false, &mut u);
        }
        input::Farewell::CancelDreq => {
            // The ULP's DREQ, sent (or waiting to be) before the destroy: as above.
            g.cancel_tracked_retries(&id.dev);
            enter_timewait(id, &mut g, false, &mut u);
        }
        input::Farewell::Drep => {
            enter_timewait(id, &mut g, false, &mut u);
            let mut msg = CmMessage::Drep(CommIdsAndData {
                local_comm_id: 0,
                remote_comm_id: 0,
                private_data: Bytes::EMPTY,
            });
            let _ = send_msg(id, &mut g, Out::Drep, &mut msg, 0, State::Idle);
        }
    }
    id.set_state(State::Idle.raw());
    // Back in IDLE: the connection's address handle goes (after its last send if some are in
    // flight).
    retire_conn_ah(id, &mut g);
    // The farewell leaves the remote tables in every state that holds keys except an
    // established XRC target, which sends no DREQ: it leaves them here.
    leave_remote(id, &mut g, &mut u);
    // An expiry already running finds `timewait_armed` cleared and does nothing (see
    // `timewait::leave`).
    let timewait_class =
        core::mem::replace(&mut g.timewait_armed, false).then_some(g.timewait_class);
    let published = core::mem::replace(&mut g.published, false);
    let wait_ms = destroy_wait_ms(g.conn.max_cm_retries, g.conn.timeout_ms);
    let leftover = g.events.take();
    drop(g);
    drop(leftover);
    u.free();
    Farewell {
        timewait_class,
        published,
        wait_ms,
    }
}
