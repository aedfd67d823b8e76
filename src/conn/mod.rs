// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Connections: the kernel side of the state machine, one handler per input.
//!
//! Each handler takes the id's lock, asks its input's pure decision (`logic::input`) what to
//! do and does it with the objects at hand: sends and cancels are non-sleeping and happen
//! under the lock, as in cm.c, so a tracked MAD is always known to the id before anyone can
//! cancel it. What must not happen under the lock happens after it: answers to a received
//! MAD's sender (their address resolution may sleep), the DREQ to a stale connection,
//! freeing table nodes, and delivering the event (`CmId::deliver`). This file holds what the
//! handlers share: the event's queueing and delivery, leaving the tables, the send of a
//! message for an id, answers to retransmissions, and `ib_cm_notify()`.
//!
//! The files next to this one own one message family each: `req.rs` (REQ out and in),
//! `rep_rtu.rs`, `dreq_drep.rs`, `rej_mra.rs`, `lap_apr.rs`, `sidr.rs`, and `qp_attr.rs`.

mod conn_ah;
pub(crate) mod deliver;
pub(crate) mod destroy;
pub(crate) mod dreq_drep;
pub(crate) mod lap_apr;
pub(crate) mod qp_attr;
pub(crate) mod rej_mra;
pub(crate) mod rep_rtu;
pub(crate) mod req;
mod resend;
pub(crate) mod sidr;

use conn_ah::{cancel_tracked, end_conn_ah, on_conn_ah, retire_conn_ah};
pub(crate) use conn_ah::{conn_ah_status, repost_or_untrack, retire_conn_ahs, send_done, untrack};
use resend::{resend, Resend};

use crate::alloc::CmBox;
use crate::{
    bindings,
    cm_id::{CmId, CmIdInner, Filed},
    event::{Event, Pending},
    lock::SpinLockIrqGuard,
    logic::{
        input::{self, Leave},
        remote::{Held, Verdict},
        state::{self, Input, Lap, MsgKind, Out, Refusal, State},
        trace as logic_trace,
        wire::{
            conn::{Rej, REJ_ARI},
            field::Bytes,
            AttrId, CmMessage, RecvHdr,
        },
    },
    recv_wc::RecvWc,
    remote::{self, Unlinked},
    send,
    slot::Slot,
    timewait::{self, EstablishWork},
    trace,
};
use kernel::{prelude::*, sync::Arc};

pub(crate) use crate::logic::state::REJ_TIMEOUT;
pub(crate) use resend::REJ_STALE_CONN;

// Every REJ reason the CM sends or matches on is the value of `<rdma/ib_cm.h>`'s
// `enum ib_cm_rej_reason` (REJ_TIMEOUT was once 1, NO_QP's value, and no test compared it),
// and the other kernel constants the pure logic restates are the headers' (SA_EQ was once 1,
// IB_SA_LT's value).
const _: () = {
    use crate::logic::req_event as re;
    assert!(re::SA_EQ as u32 == bindings::ib_sa_selector_IB_SA_EQ);
    assert!(re::SIDR_UNSUPPORTED as u32 == bindings::ib_cm_sidr_status_IB_SIDR_UNSUPPORTED);
    assert!(re::SIDR_REJECT as u32 == bindings::ib_cm_sidr_status_IB_SIDR_REJECT);
    assert!(re::QPT_RC == bindings::ib_qp_type_IB_QPT_RC);
    assert!(re::QPT_UC == bindings::ib_qp_type_IB_QPT_UC);
    assert!(re::QPT_XRC_TGT == bindings::ib_qp_type_IB_QPT_XRC_TGT);
    assert!(REJ_TIMEOUT as u32 == bindings::ib_cm_rej_reason_IB_CM_REJ_TIMEOUT);
    assert!(REJ_STALE_CONN as u32 == bindings::ib_cm_rej_reason_IB_CM_REJ_STALE_CONN);
    assert!(
        re::REJ_CONSUMER_DEFINED as u32 == bindings::ib_cm_rej_reason_IB_CM_REJ_CONSUMER_DEFINED
    );
    assert!(
        re::REJ_INVALID_SERVICE_ID as u32
            == bindings::ib_cm_rej_reason_IB_CM_REJ_INVALID_SERVICE_ID
    );
    assert!(req::REJ_INVALID_GID as u32 == bindings::ib_cm_rej_reason_IB_CM_REJ_INVALID_GID);
    assert!(
        req::REJ_INVALID_ALT_GID as u32 == bindings::ib_cm_rej_reason_IB_CM_REJ_INVALID_ALT_GID
    );
};

/// A received MAD an input came with.
pub(crate) struct Recv<'a> {
    /// The receiving device (`work->port` in cm.c: answers and duplicate counts go through
    /// it, also when the id belongs to another device).
    pub(crate) dev: &'a crate::cm_id::CmDevice,
    /// The receiving port.
    pub(crate) port_num: u32,
    /// Its attribute (for the duplicate counter).
    pub(crate) attr: AttrId,
    /// Its TID.
    pub(crate) tid: u64,
    /// The completion, for answers to its sender.
    pub(crate) wc: &'a crate::recv_wc::RecvWc,
}

impl<'a> Recv<'a> {
    /// The MAD with header `hdr` and attribute `attr`, received on `port_num` of `dev`.
    pub(crate) fn new(
        dev: &'a crate::cm_id::CmDevice,
        port_num: u32,
        attr: AttrId,
        hdr: &RecvHdr<'_>,
        wc: &'a crate::recv_wc::RecvWc,
    ) -> Self {
        Recv {
            dev,
            port_num,
            attr,
            tid: hdr.tid(),
            wc,
        }
    }
}

/// A received MAD's event, pointing into the MAD (which it keeps), with its private data at
/// payload offset `pd_offset`; its type is set once the input is accepted. Made in `slot` (the
/// caller's stack), not allocated: [`lock_for_event`] boxes it only if it must wait in the
/// id's queue. A MAD too short for an event is dropped and the caller's use of `id` given back.
pub(crate) fn recv_event<'a>(
    id: &CmId,
    wc: &RecvWc,
    pd_offset: usize,
    slot: &'a mut Option<Event>,
) -> Option<Pending<'a>> {
    match Event::pending_for_wc(wc, slot) {
        Ok(mut ev) => {
            ev.set_private_data(pd_offset);
            Some(ev)
        }
        Err(_) => {
            id.put_user();
            None
        }
    }
}

/// Takes the id's lock for an input that may queue `ev`: if another thread is delivering the
/// id's events, `ev` must wait in the queue, so it is boxed first, outside the lock, with an
/// allocation that cannot fail (nothing is allocated under the lock, and no MAD is dropped for
/// want of memory here: cm.c's event is in the work item it already has), and the lock is
/// taken again. Under the returned guard the event is boxed or the id has no deliverer, so
/// [`queue_event`] needs no allocation; [`Ready`] is the only way to queue an event made in a
/// slot.
pub(crate) fn lock_for_event<'a, 'e>(
    id: &'a CmId,
    mut ev: Pending<'e>,
) -> (SpinLockIrqGuard<'a, CmIdInner>, Ready<'e>) {
    loop {
        let g = id.inner.lock();
        if !id.has_deliverer(&g) || ev.is_boxed() {
            return (g, Ready(ev));
        }
        drop(g);
        ev = Pending::Boxed(ev.boxed_nofail());
    }
}

/// A received MAD's event under its id's lock, as [`lock_for_event`] returns it: boxed, or
/// its id had no deliverer when the lock was taken (and the caller keeps that guard until it
/// queues the event).
pub(crate) struct Ready<'e>(Pending<'e>);

impl<'e> core::ops::Deref for Ready<'e> {
    type Target = Pending<'e>;

    fn deref(&self) -> &Pending<'e> {
        &self.0
    }
}

impl core::ops::DerefMut for Ready<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<'e> From<CmBox<Event>> for Ready<'e> {
    fn from(b: CmBox<Event>) -> Self {
        Ready(Pending::Boxed(b))
    }
}

/// Under the id's lock: `ev`, of type `e`, is for the caller to deliver (returned) unless
/// another thread is delivering, which then finds it in the queue. An event made in a slot
/// comes here only through [`lock_for_event`], so it never has to be queued; if it ever had
/// to (a caller that let that guard go), it is boxed without sleeping, and lost with a
/// warning if that fails.
pub(crate) fn queue_event<'e>(
    id: &CmId,
    g: &mut CmIdInner,
    ev: impl Into<Ready<'e>>,
    e: state::Event,
) -> Option<Pending<'e>> {
    let mut ev = ev.into().0;
    ev.ev.event = e.raw();
    if id.claim_delivery(g) {
        return Some(ev);
    }
    match ev.boxed_atomic() {
        Ok(b) => g.events.push(b),
        Err(_) => pr_warn!("an event was lost: it was queued without lock_for_event\n"),
    }
    None
}

/// After the id's lock: delivers `ev` (the caller's use of `id` goes with it) or gives the use
/// back.
pub(crate) fn deliver_or_put(id: &Arc<CmId>, ev: Option<Pending<'_>>) {
    match ev {
        Some(ev) => id.deliver(ev),
        None => id.put_user(),
    }
}

/// The tracepoint cm.c emits where it refuses `input` in the id's state, if any.
pub(crate) fn trace_refused(id: &CmId, input: Input, r: Refusal) {
    if let Some(ev) = logic_trace::for_refusal(id.cm_state(), input, r) {
        trace::id(ev, id);
    }
}

/// An answer to a retransmission and the TID it goes with.
pub(crate) type Answer = Option<(CmBox<Resend>, u64)>;

/// Under the id's lock: the answer `o` to a retransmission, traced, for [`send_answer`] to
/// send after the lock with the id's TID (cm.c formats every such answer with
/// `cm_id_priv->tid`). Not on the connection's handle: cm.c answers the received MAD's
/// sender, on QP1 with the received P_Key index, along the work completion's address (for a
/// routed REQ the router's LID, not the path's), and counts the answer as an id-less send
/// retried once; the device's reply cache (`respond`) does exactly that. Without memory the
/// answer is dropped (and not traced), as cm.c drops it when its allocation fails; the peer
/// retransmits.
pub(crate) fn answer(id: &CmId, g: &CmIdInner, o: Out) -> Answer {
    let msg = resend(id, g, o)?;
    if let Some(ev) = logic_trace::for_send(o) {
        trace::id(ev, id);
    }
    Some((msg, g.conn.tid))
}

/// After the id's lock: sends an [`answer`] back to the sender of `r`.
pub(crate) fn send_answer(r: &Recv<'_>, a: Answer) {
    if let Some((msg, tid)) = a {
        crate::recv::respond(r.dev, r.port_num, r.wc, tid, &msg.message());
    }
}

/// What a retransmitted REQ or REP does in a state (`logic::input::dup_req_received`,
/// `dup_rep_received`).
pub(crate) type DupDecision = fn(State) -> core::result::Result<Out, Refusal>;

/// A retransmitted REQ or REP (`input`) for `id`, which holds it (the caller holds a use):
/// counted as a duplicate and answered as `decide` says (`cm_dup_req_handler`,
/// `cm_dup_rep_handler`).
pub(crate) fn on_duplicate(id: &Arc<CmId>, r: &Recv<'_>, input: Input, decide: DupDecision) {
    let g = id.inner.lock();
    let mut a = None;
    if !g.destroyed {
        match decide(id.cm_state()) {
            Ok(o) => {
                crate::recv::count_duplicate(r.dev, r.port_num, r.attr);
                a = answer(id, &g, o);
            }
            Err(refusal) => {
                if refusal == Refusal::Duplicate {
                    crate::recv::count_duplicate(r.dev, r.port_num, r.attr);
                }
                trace_refused(id, input, refusal);
            }
        }
    }
    drop(g);
    send_answer(r, a);
    id.put_user();
}

/// The error of a refusal, for API callers.
pub(crate) fn refusal_errno(r: Refusal) -> Error {
    match r {
        Refusal::IsConn => crate::error::eisconn(),
        _ => EINVAL,
    }
}

/// The start of an API call on an id (cm.c checks the state under `cm_id_priv->lock`): the
/// id's lock and what `decide` says of its state and LAP state. A destroyed id gives
/// `-EINVAL`; a refusal is traced as `input`'s and gives its errno.
pub(crate) fn begin_call<'a, D>(
    id: &'a CmId,
    input: Input,
    decide: impl FnOnce(State, Lap) -> Result<D, Refusal>,
) -> Result<(SpinLockIrqGuard<'a, CmIdInner>, D)> {
    let g = id.inner.lock();
    if g.destroyed {
        return Err(EINVAL);
    }
    match decide(id.cm_state(), id.lap()) {
        Ok(d) => Ok((g, d)),
        Err(r) => {
            trace_refused(id, input, r);
            Err(refusal_errno(r))
        }
    }
}

/// Executes [`crate::logic::remote::verdict`] on a REQ or REP (`kind`) one of whose keys `holder`
/// holds as `held` (`cm_match_req`'s first two checks, `cm_rep_handler`'s). `after_rej` runs
/// between a stale connection's REJ and its DREQ (where cm.c traces a REP's
/// `icm_staleconn_err`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn on_held(
    dev: &crate::cm_id::CmDevice,
    port_num: u32,
    wc: &crate::recv_wc::RecvWc,
    hdr: &RecvHdr<'_>,
    kind: MsgKind,
    held: Held,
    holder: &CmId,
    after_rej: impl FnOnce(),
) {
    match crate::logic::remote::verdict(kind, held) {
        Verdict::Proceed | Verdict::Duplicate { holder: None } => {}
        Verdict::Duplicate {
            holder: Some(input),
        } => {
            // Only an id that is visible by comm ID (set up and handed over) answers, as
            // cm.c's `cm_acquire_id` in `cm_match_req`; one still being set up ignores it.
            let Some(id) = crate::comm_id::acquire(holder.local_id(), holder.remote_id()) else {
                return;
            };
            let (attr, decide): (_, DupDecision) = if kind == MsgKind::Req {
                (AttrId::Req, input::dup_req_received)
            } else {
                (AttrId::Rep, input::dup_rep_received)
            };
            let r = Recv::new(dev, port_num, attr, hdr, wc);
            on_duplicate(&id, &r, input, decide);
        }
        Verdict::Stale {
            rej_reason,
            rejected,
        } => {
            crate::recv::issue_rej(dev, port_num, wc, hdr.tid(), rej_reason, rejected.wire());
            after_rej();
            // To the holder if it is visible by comm ID, as cm.c's `cm_acquire_id` (effective
            // if ESTABLISHED); the use it takes is given back after the call (`cm_deref_id`).
            if let Some(old) = crate::comm_id::acquire(holder.local_id(), holder.remote_id()) {
                let _ = dreq_drep::send_dreq(&old, &[]);
                old.put_user();
            }
        }
    }
}

/// Takes the id out of the remote tables, if it is in them (the tables' lock only then); what
/// it unlinked goes into `u`, to be freed after the id's lock.
pub(crate) fn leave_remote(id: &CmId, g: &mut CmIdInner, u: &mut Unlinked) {
    if let Some(filed) = g.remote.take() {
        let mut t = remote::tables().lock();
        match filed {
            Filed::Conn(link) => {
                u.conn = Slot::from_option(t.conns.remove(link, id));
            }
            Filed::Sidr(k) => {
                u.sidr = Slot::from_option(t.sidrs.remove(&k, id));
            }
        }
    }
}

/// `cm_enter_timewait()`: leaves the remote tables and, with `arm` (not for a destroy), arms
/// timewait (under the device lock, ordered with removal's `going_down`), as cm.c does in two
/// sections of `cm.lock`; the state is TIMEWAIT from here on. Both run under the id lock, so
/// no other input of the id sees it out of the tables but not yet in timewait.
pub(crate) fn enter_timewait(id: &Arc<CmId>, g: &mut CmIdInner, arm: bool, u: &mut Unlinked) {
    leave_remote(id, g, u);
    if arm {
        timewait::arm(id, g);
    }
    id.set_state(State::Timewait.raw());
}

/// Leaves as `l` says (see [`leave_remote`], [`enter_timewait`]).
pub(crate) fn leave(id: &Arc<CmId>, g: &mut CmIdInner, l: Leave, u: &mut Unlinked) {
    match l {
        Leave::Remote => leave_remote(id, g, u),
        Leave::Timewait => enter_timewait(id, g, true, u),
    }
}

/// The REJ an id sends by default (destroy): TIMEOUT with the node GUID as ARI from the
/// active side's REQ states, CONSUMER_DEFINED otherwise.
pub(crate) fn default_rej(id: &CmId) -> Rej<'static> {
    // Read inside the device's send gate: once removal began (the id outlives its
    // `ib_device`), no REJ can be sent anyway and the ARI stays zero.
    let guid = id.dev.node_guid().unwrap_or(0);
    let mut rej = Rej {
        local_comm_id: 0,
        remote_comm_id: 0,
        message_rejected: 0,
        ari_length: 0,
        reason: state::own_rej_reason(id.cm_state()),
        ari: [0; REJ_ARI],
        private_data: Bytes::EMPTY,
    };
    if rej.reason == REJ_TIMEOUT {
        // `node_guid` is big-endian in memory: its bytes are the wire bytes.
        rej.ari[..8].copy_from_slice(&guid.to_ne_bytes());
        rej.ari_length = 8;
    }
    rej
}

/// Sends `o` for `id` under its lock (non-sleeping, as cm.c's sends): `msg` is complete but
/// for what the id fills in here (comm IDs, the REJ's and MRA's forms, the DREQ's QPN, the
/// SIDR_REP's request and service IDs); a tracked MAD is recorded with state `next`.
pub(crate) fn send_msg(
    id: &Arc<CmId>,
    g: &mut CmIdInner,
    o: Out,
    msg: &mut CmMessage<'_>,
    attr_mod: u32,
    next: State,
) -> Result {
    let (local, remote) = (id.local_id(), id.remote_id());
    match (o, &mut *msg) {
        (
            Out::Rej {
                msg: kind,
                zero_local_id,
            },
            CmMessage::Rej(rej),
        ) => {
            rej.local_comm_id = if zero_local_id { 0 } else { local };
            rej.remote_comm_id = remote;
            rej.message_rejected = kind.wire();
        }
        (_, CmMessage::Dreq(d)) => {
            d.local_comm_id = local;
            d.remote_comm_id = remote;
            d.remote_qpn_eecn = g.conn.remote_qpn;
        }
        (_, CmMessage::Drep(d)) | (_, CmMessage::Rtu(d)) => {
            d.local_comm_id = local;
            d.remote_comm_id = remote;
        }
        (_, CmMessage::SidrRep(r)) => {
            r.request_id = remote;
            r.service_id = id.service_id().get();
        }
        (Out::Mra(kind), CmMessage::Mra(m)) => {
            m.local_comm_id = local;
            m.remote_comm_id = remote;
            m.message_mraed = kind.wire();
        }
        (_, CmMessage::Rep(r)) => {
            r.local_comm_id = local;
            r.remote_comm_id = remote;
        }
        (_, CmMessage::Req(r)) => r.local_comm_id = local,
        (_, CmMessage::SidrReq(r)) => r.request_id = local,
        // Not reached: every `o` comes with its own kind of message.
        _ => return Err(EINVAL),
    }
    // Messages that open an exchange get a new TID (`cm_form_tid`, formed by the send under
    // its gate); the others answer with the id's.
    let tid = match o {
        Out::Req | Out::Dreq | Out::SidrReq => None,
        _ => Some(g.conn.tid),
    };
    let timeout_ms = if o.tracked() { g.conn.timeout_ms } else { 0 };
    let hs = on_conn_ah(id, g, o);
    // Traced once the MAD is allocated, with the state the id sends in (a REJ is traced by
    // its sender, before the state changes).
    let sent = send::send_for_id(
        id,
        g,
        msg,
        tid,
        attr_mod,
        timeout_ms,
        logic_trace::for_send(o),
        hs,
    );
    let (buf, tid) = match sent {
        Ok(sent) => sent,
        Err(e) => {
            // The id stays in its state: a connection handle the send just made for an id whose
            // state keeps none (a REQ from IDLE) goes again, as cm.c frees the MAD with its
            // handle (`cm_free_priv_msg`).
            end_conn_ah(id, g);
            return Err(e);
        }
    };
    if o == Out::Req {
        g.conn.tid = tid;
    }
    if o.tracked() {
        g.track(buf, next);
    }
    Ok(())
}

/// `ib_cm_notify()` (`cm_establish`, `cm_migrate`): callable with interrupts off, so
/// nothing here sleeps (the work item is allocated atomically, the migration copies in place).
pub(crate) fn notify(id: &Arc<CmId>, event: bindings::ib_event_type) -> Result {
    match event {
        bindings::ib_event_type_IB_EVENT_COMM_EST => {
            let work = EstablishWork::new(id)?;
            let (g, ()) = begin_call(id, Input::NotifyEstablished, |s, _| {
                input::notify_established(s)
            })?;
            // cm.c sets ESTABLISHED first and then finds the device going down (-ENODEV).
            id.set_state(State::Established.raw());
            // Queued under the device lock, ordered with removal (cm.c: under `cm.lock`);
            // queueing neither allocates nor sleeps.
            let dev = id.dev.inner.lock();
            let queue = crate::wq::queue().filter(|_| !dev.going_down);
            let Some(queue) = queue else {
                drop(dev);
                drop(g);
                return Err(ENODEV);
            };
            queue.enqueue(work);
            Ok(())
        }
        bindings::ib_event_type_IB_EVENT_PATH_MIG => {
            let (mut g, ()) = begin_call(id, Input::NotifyPathMig, input::notify_path_mig)?;
            // cm_migrate: the alternate becomes the primary and stays the alternate, which a
            // later ib_cm_init_qp_attr(RTS) loads into the QP again (IB_QP_ALT_PATH with
            // REARM). Copied in place, without allocating.
            let inner = &mut *g;
            if let (Some(av), Some(alt)) = (inner.av.as_mut(), inner.alt_av.as_ref()) {
                av.copy_from(alt);
                // The connection's handle goes to the old primary (perhaps from another
                // port's PD): no send may take it any more; later ones make their own, as
                // after a LAP.
                retire_conn_ah(id, &mut g);
            }
            id.set_lap(Lap::Idle);
            Ok(())
        }
        _ => Err(EINVAL),
    }
}
