// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REP and RTU, both ways: `ib_send_cm_rep()`, `ib_send_cm_rtu()`, `cm_rep_handler()`,
//! `cm_dup_rep_handler()`, `cm_rtu_handler()`, the stale-connection check of a REP, and
//! `cm_establish_handler()` (the USER_ESTABLISHED work, the RTU's stand-in).

use super::{
    begin_call, cancel_tracked, deliver_or_put, lock_for_event, on_duplicate, queue_event,
    recv_event, refusal_errno, send_msg, trace_refused, Recv,
};
use crate::{
    bindings,
    cm_id::{CmId, CmIdInner, Filed, StoredPd},
    comm_id,
    event::{self, Event},
    logic::{
        input,
        remote::Held,
        state::{self, Input, MsgKind, Out, State},
        timeout,
        wire::{
            conn::{CommIdsAndData, CommIdsView, RepView, RTU_PRIVATE_DATA},
            field::Bytes,
            AttrId, CmMessage, RecvHdr,
        },
    },
    recv_wc::RecvWc,
    remote::{ConnReservation, QpKey, ReqKey, Taken},
    trace::{self, Local, Remote},
};
use kernel::{prelude::*, sync::Arc};

/// `ib_send_cm_rep()`: `param`'s scalars and its private data `pd` (borrowed by the entry
/// layer).
pub(crate) fn send_rep(id: &Arc<CmId>, param: &bindings::ib_cm_rep_param, pd: &[u8]) -> Result {
    // Read inside the device's send gate. Once removal began they read as zeros: the handler
    // still checks the state first (a wrong one traces `icm_send_rep_err`, as cm.c), and the
    // send then fails with EINVAL (as cm.c, whose port has no MAD agent any more), so the
    // zeros never reach the wire.
    let guid = id.dev.node_guid().unwrap_or(0);
    let ack_delay = id.dev.ack_delay().unwrap_or(0);
    let qpn = param.qp_num & 0x00FF_FFFF;
    let mut g = id.inner.lock();
    let xrc_tgt = g.conn.qp_type() == bindings::ib_qp_type_IB_QPT_XRC_TGT;
    let mut msg = CmMessage::Rep(crate::logic::wire::conn::Rep {
        local_comm_id: 0,
        remote_comm_id: 0,
        local_qkey: 0,
        local_qpn: if xrc_tgt { 0 } else { qpn },
        vendor_id: param.ece.vendor_id & 0x00FF_FFFF,
        local_eecn: if xrc_tgt { qpn } else { 0 },
        starting_psn: param.starting_psn & 0x00FF_FFFF,
        responder_resources: param.responder_resources,
        initiator_depth: if xrc_tgt { 0 } else { param.initiator_depth },
        target_ack_delay: ack_delay & 0x1F,
        failover_accepted: param.failover_accepted & 3,
        end_to_end_flow_control: !xrc_tgt && param.flow_control != 0,
        rnr_retry_count: param.rnr_retry_count & 7,
        srq: xrc_tgt || param.srq != 0,
        local_ca_guid: u64::from_be(guid),
        private_data: Bytes::new(pd),
    });
    if g.destroyed {
        return Err(EINVAL);
    }
    if let Err(r) = input::send_rep(id.cm_state()) {
        trace_refused(id, Input::SendRep, r);
        trace::send_rep_err(id);
        return Err(refusal_errno(r));
    }
    send_msg(
        id,
        &mut g,
        Out::Rep,
        &mut msg,
        param.ece.attr_mod,
        State::RepSent,
    )?;
    id.set_state(State::RepSent.raw());
    g.conn.initiator_depth = param.initiator_depth;
    g.conn.responder_resources = param.responder_resources;
    g.conn.rq_psn = param.starting_psn & 0x00FF_FFFF;
    g.conn.local_qpn = qpn;
    Ok(())
}

/// `ib_send_cm_rtu()`: REP_RCVD or MRA_REP_SENT -> ESTABLISHED once the RTU is posted.
pub(crate) fn send_rtu(id: &Arc<CmId>, pd: &[u8]) -> Result {
    if pd.len() > RTU_PRIVATE_DATA {
        return Err(EINVAL);
    }
    let keep = StoredPd::copy(pd)?;
    let mut msg = CmMessage::Rtu(CommIdsAndData {
        local_comm_id: 0,
        remote_comm_id: 0,
        private_data: Bytes::new(pd),
    });
    let (mut g, ()) = begin_call(id, Input::SendRtu, |s, _| input::send_rtu(s))?;
    send_msg(id, &mut g, Out::Rtu, &mut msg, 0, State::Established)?;
    // Kept for the answers to a retransmitted REP; the replaced data is freed after the lock.
    let old = core::mem::replace(&mut g.stored_pd, keep);
    id.set_state(State::Established.raw());
    drop(g);
    drop(old);
    Ok(())
}

/// The peer's QPN in a REP (`cm_rep_get_qpn`: XRC initiators read the EECN field).
fn rep_qpn(rep: RepView<'_>, qp_type: u32) -> u32 {
    if qp_type == bindings::ib_qp_type_IB_QPT_XRC_INI {
        rep.local_eecn()
    } else {
        rep.local_qpn()
    }
}

/// Registers the REP's keys (duplicate-REP and stale-QP checks). A key already present is a
/// duplicate REP, a QP already connected a stale connection: the refused reservation and the
/// id holding the key come back, to be dropped after the id lock (this runs under it).
fn insert_remote(
    id: &Arc<CmId>,
    g: &mut CmIdInner,
    rep: RepView<'_>,
    res: ConnReservation,
) -> core::result::Result<(), (ConnReservation, Taken)> {
    let key = ReqKey {
        ca_guid: rep.local_ca_guid(),
        comm_id: rep.local_comm_id(),
    };
    let qp = QpKey {
        ca_guid: rep.local_ca_guid(),
        qpn: rep_qpn(rep, g.conn.qp_type()),
    };
    let link = crate::remote::tables()
        .lock()
        .conns
        .insert(key, qp, id, res, None)?;
    debug_assert!(g.remote.is_none());
    g.remote = Some(Filed::Conn(link));
    Ok(())
}

/// What the active side takes from the REP.
fn accept_rep(id: &CmId, g: &mut CmIdInner, rep: RepView<'_>) {
    id.set_remote_id(rep.local_comm_id());
    let target_ack_delay = rep.target_ack_delay();
    g.conn.remote_qpn = rep_qpn(rep, g.conn.qp_type());
    g.conn.initiator_depth = rep.responder_resources();
    g.conn.responder_resources = rep.initiator_depth();
    g.conn.sq_psn = rep.starting_psn();
    g.conn.rnr_retry_count = rep.rnr_retry_count();
    g.conn.target_ack_delay = target_ack_delay;
    if let Some(av) = g.av.as_mut() {
        av.timeout = timeout::after_rep(target_ack_delay, av.timeout);
    }
    if let Some(av) = g.alt_av.as_mut() {
        av.timeout = timeout::after_rep(target_ack_delay, av.timeout);
    }
}

/// Fills the REP_RECEIVED event `ev` from `rep`.
fn fill_rep_event(ev: &mut Event, rep: RepView<'_>, qp_type: u32, attr_mod: u32) {
    let p = ev.rep_rcvd();
    p.remote_ca_guid = rep.local_ca_guid().to_be();
    p.remote_qkey = rep.local_qkey();
    p.remote_qpn = rep_qpn(rep, qp_type);
    p.starting_psn = rep.starting_psn();
    p.responder_resources = rep.initiator_depth();
    p.initiator_depth = rep.responder_resources();
    event::set_rep_bits(
        p,
        rep.target_ack_delay(),
        rep.failover_accepted(),
        rep.end_to_end_flow_control().into(),
        rep.rnr_retry_count(),
        rep.srq().into(),
    );
    p.ece.vendor_id = rep.vendor_id();
    p.ece.attr_mod = attr_mod;
}

/// A REP (`cm_rep_handler`).
pub(crate) fn on_rep(
    dev: &crate::cm_id::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    rep: RepView<'_>,
) {
    let Some(id) = comm_id::acquire(rep.remote_comm_id(), 0) else {
        // `cm_dup_rep_handler`: the id already took a REP from this peer.
        if let Some(id) = comm_id::acquire(rep.remote_comm_id(), rep.local_comm_id()) {
            let r = Recv::new(dev, port_num, AttrId::Rep, hdr, wc);
            on_duplicate(&id, &r, Input::RecvDupRep, input::dup_rep_received);
        }
        trace::remote(Remote::RemoteNoPrivErr, rep.remote_comm_id());
        return;
    };
    let mut slot = None;
    let Some(ev) = recv_event(&id, wc, 36, &mut slot) else {
        return;
    };
    let Ok(res) = ConnReservation::new(GFP_KERNEL) else {
        id.put_user();
        return;
    };
    let (mut g, mut ev) = lock_for_event(&id, ev);
    let mut refused = None;
    let mut deliver = None;
    if !g.destroyed {
        match input::rep_received(id.cm_state()) {
            Err(r) => {
                trace_refused(&id, Input::RecvRep, r);
                trace::rep_unknown_err(rep.local_comm_id(), rep.remote_comm_id(), id.state());
            }
            Ok(()) => match insert_remote(&id, &mut g, rep, res) {
                Err((res, taken)) => refused = Some((res, taken.held())),
                Ok(()) => {
                    accept_rep(&id, &mut g, rep);
                    cancel_tracked(&id, &mut g);
                    id.set_state(State::RepRcvd.raw());
                    fill_rep_event(&mut ev, rep, g.conn.qp_type(), hdr.attr_mod());
                    deliver = queue_event(&id, &mut g, ev, state::Event::RepReceived);
                }
            },
        }
    }
    drop(g);
    deliver_or_put(&id, deliver);
    if let Some((res, (held, holder))) = refused {
        drop(res);
        if held == Held::CommId {
            trace::remote(Remote::InsertFailedErr, rep.remote_comm_id());
        }
        // A stale connection: REJ STALE_CONN for the REP, then a DREQ from the id that holds
        // the peer's QP; this id stays in REQ_SENT until its REQ times out.
        super::on_held(dev, port_num, wc, hdr, MsgKind::Rep, held, &holder, || {
            trace::local(
                Local::StaleconnErr,
                rep.local_comm_id(),
                rep.remote_comm_id(),
            )
        });
    }
}

/// An RTU (`cm_rtu_handler`).
pub(crate) fn on_rtu(
    dev: &crate::cm_id::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    rtu: CommIdsView<'_>,
) {
    let Some(id) = comm_id::acquire(rtu.remote_comm_id(), rtu.local_comm_id()) else {
        return;
    };
    let mut slot = None;
    let Some(ev) = recv_event(&id, wc, 8, &mut slot) else {
        return;
    };
    let (mut g, ev) = lock_for_event(&id, ev);
    let mut deliver = None;
    if !g.destroyed {
        match input::rtu_received(id.cm_state()) {
            Ok(()) => {
                cancel_tracked(&id, &mut g);
                id.set_state(State::Established.raw());
                deliver = queue_event(&id, &mut g, ev, state::Event::RtuReceived);
            }
            Err(r) => {
                if r == state::Refusal::Duplicate {
                    crate::recv::count_duplicate(dev, port_num, AttrId::Rtu);
                }
                trace_refused(&id, Input::RecvRtu, r);
            }
        }
    }
    drop(g);
    deliver_or_put(&id, deliver);
}

/// The USER_ESTABLISHED work runs (`cm_establish_handler`; the caller holds a use): in
/// ESTABLISHED the REP's retransmissions end and the event is delivered.
pub(crate) fn user_established(id: &Arc<CmId>) {
    let ev = Event::own();
    let mut g = id.inner.lock();
    let mut deliver = None;
    if !g.destroyed && input::user_established(id.cm_state()).is_ok() {
        cancel_tracked(id, &mut g);
        deliver = queue_event(id, &mut g, ev, state::Event::UserEstablished);
    }
    drop(g);
    deliver_or_put(id, deliver);
}
