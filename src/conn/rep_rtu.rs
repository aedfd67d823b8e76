// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REP and RTU, both ways: `ib_send_cm_rep()`, `ib_send_cm_rtu()`, `cm_rep_handler()`,
//! `cm_dup_rep_handler()`, `cm_rtu_handler()` and the stale-connection check of a REP.

use super::{api, finish, run, Ctx, Recv};
use crate::alloc::CmBox;
use crate::{
    bindings,
    cm_id::{CmId, CmIdInner, StoredPd},
    comm_id,
    event::{self, Event},
    logic::{
        remote::Held,
        state::{Input, MsgKind},
        timeout,
        wire::{
            conn::{CommIdsAndData, Rep, RTU_PRIVATE_DATA},
            field::Bytes,
            AttrId, CmMessage, RecvHdr,
        },
    },
    recv_wc::RecvWc,
    remote::{self, ConnReservation, QpKey, RemoteKey, ReqKey},
    trace::{self, Local, Remote},
};
use kernel::{prelude::*, sync::Arc};

/// `ib_send_cm_rep()`: `param`'s scalars and its private data `pd` (borrowed by the entry
/// layer).
pub(crate) fn send_rep(id: &Arc<CmId>, param: &bindings::ib_cm_rep_param, pd: &[u8]) -> Result {
    let xrc_tgt = id.inner.lock().conn.qp_type() == bindings::ib_qp_type_IB_QPT_XRC_TGT;
    // Read inside the device's send gate. Once removal began they read as zeros: the step
    // still checks the state first (a wrong one traces `icm_send_rep_err`, as cm.c), and the
    // send then fails with EINVAL (as cm.c, whose port has no MAD agent any more), so the
    // zeros never reach the wire.
    let guid = id.dev.node_guid().unwrap_or(0);
    let ack_delay = id.dev.ack_delay().unwrap_or(0);
    let qpn = param.qp_num & 0x00FF_FFFF;
    let mut msg = CmMessage::Rep(Rep {
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
    let ctx = Ctx {
        msg: Some(&mut msg),
        attr_mod: param.ece.attr_mod,
        ..Ctx::default()
    };
    api(
        id,
        Input::SendRep,
        ctx,
        |_, _| {},
        |_, g| {
            g.conn.initiator_depth = param.initiator_depth;
            g.conn.responder_resources = param.responder_resources;
            g.conn.rq_psn = param.starting_psn & 0x00FF_FFFF;
            g.conn.local_qpn = qpn;
        },
    )
}

/// `ib_send_cm_rtu()`.
pub(crate) fn send_rtu(id: &Arc<CmId>, pd: &[u8]) -> Result {
    if pd.len() > RTU_PRIVATE_DATA {
        return Err(EINVAL);
    }
    let mut msg = CmMessage::Rtu(CommIdsAndData {
        local_comm_id: 0,
        remote_comm_id: 0,
        private_data: Bytes::new(pd),
    });
    let keep = StoredPd::copy(pd)?;
    let ctx = Ctx {
        msg: Some(&mut msg),
        keep_pd: crate::slot::Slot::some(keep),
        ..Ctx::default()
    };
    api(id, Input::SendRtu, ctx, |_, _| {}, |_, _| {})
}

/// The peer's QPN in a REP (`cm_rep_get_qpn`: XRC initiators read the EECN field).
fn rep_qpn(rep: &Rep<'_>, qp_type: u32) -> u32 {
    if qp_type == bindings::ib_qp_type_IB_QPT_XRC_INI {
        rep.local_eecn
    } else {
        rep.local_qpn
    }
}

/// [`crate::logic::table::Action::InsertRemote`]: registers the REP's keys; a key already
/// present is a duplicate REP, a QP already connected is a stale connection (the old id is
/// kept in the context for its DREQ).
pub(crate) fn insert_remote(id: &Arc<CmId>, g: &mut CmIdInner, ctx: &mut Ctx<'_>) -> Result {
    let rep = ctx.rep.ok_or(EINVAL)?;
    let res = ctx.reservation.take().ok_or(ENOMEM)?;
    let key = ReqKey {
        ca_guid: rep.local_ca_guid,
        comm_id: rep.local_comm_id,
    };
    let qp = QpKey {
        ca_guid: rep.local_ca_guid,
        qpn: rep_qpn(rep, g.conn.qp_type()),
    };
    let refused = remote::tables().lock().conns.insert(key, qp, id, res).err();
    let Some((res, taken)) = refused else {
        g.remote = Some(RemoteKey::req(key, qp));
        return Ok(());
    };
    // The refused reservation and the other id's reference are dropped with the context,
    // after the id lock (this runs under it).
    ctx.reservation = crate::slot::Slot::some(res);
    let (held, holder) = taken.held();
    if held == Held::CommId {
        trace::remote(Remote::InsertFailedErr, rep.remote_comm_id);
    }
    ctx.held = held;
    ctx.holder = crate::slot::Slot::some(holder);
    Err(EINVAL)
}

/// [`crate::logic::table::Action::AcceptRep`]: what the active side takes from the REP.
pub(crate) fn accept_rep(id: &CmId, g: &mut CmIdInner, ctx: &Ctx<'_>) {
    let Some(rep) = ctx.rep else { return };
    id.set_remote_id(rep.local_comm_id);
    g.conn.remote_qpn = rep_qpn(rep, g.conn.qp_type());
    g.conn.initiator_depth = rep.responder_resources;
    g.conn.responder_resources = rep.initiator_depth;
    g.conn.sq_psn = rep.starting_psn;
    g.conn.rnr_retry_count = rep.rnr_retry_count;
    g.conn.target_ack_delay = rep.target_ack_delay;
    if let Some(av) = g.av.as_mut() {
        av.timeout = timeout::after_rep(rep.target_ack_delay, av.timeout);
    }
    if let Some(av) = g.alt_av.as_mut() {
        av.timeout = timeout::after_rep(rep.target_ack_delay, av.timeout);
    }
}

/// The REP_RECEIVED event of `rep`, pointing into `wc`'s MAD.
fn rep_event(wc: &RecvWc, rep: &Rep<'_>, qp_type: u32, attr_mod: u32) -> Result<CmBox<Event>> {
    let mut ev = Event::for_wc(0, wc)?;
    let p = ev.rep_rcvd();
    p.remote_ca_guid = rep.local_ca_guid.to_be();
    p.remote_qkey = rep.local_qkey;
    p.remote_qpn = rep_qpn(rep, qp_type);
    p.starting_psn = rep.starting_psn;
    p.responder_resources = rep.initiator_depth;
    p.initiator_depth = rep.responder_resources;
    event::set_rep_bits(
        p,
        rep.target_ack_delay,
        rep.failover_accepted,
        rep.end_to_end_flow_control.into(),
        rep.rnr_retry_count,
        rep.srq.into(),
    );
    p.ece.vendor_id = rep.vendor_id;
    p.ece.attr_mod = attr_mod;
    ev.set_private_data(36);
    Ok(ev)
}

/// A REP (`cm_rep_handler`).
pub(crate) fn on_rep(
    dev: &crate::device::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    rep: &Rep<'_>,
) {
    let recv = Recv::new(dev, port_num, AttrId::Rep, hdr, wc);
    let Some(id) = comm_id::acquire(rep.remote_comm_id, 0) else {
        // `cm_dup_rep_handler`: the id already took a REP from this peer.
        if let Some(id) = comm_id::acquire(rep.remote_comm_id, rep.local_comm_id) {
            let mut ctx = Ctx {
                recv: Some(recv),
                ..Ctx::default()
            };
            let out = run(&id, Input::RecvDupRep, &mut ctx, |_, _| {}, |_, _| {});
            let _ = finish(&id, out, ctx.recv.as_ref());
        }
        trace::remote(Remote::RemoteNoPrivErr, rep.remote_comm_id);
        return;
    };
    let qp_type = id.inner.lock().conn.qp_type();
    let (Ok(ev), Ok(res)) = (
        rep_event(wc, rep, qp_type, hdr.attr_mod()),
        ConnReservation::new(GFP_KERNEL),
    ) else {
        id.put_user();
        return;
    };
    let mut ctx = Ctx {
        event: crate::slot::Slot::some(ev),
        recv: Some(recv),
        rep: Some(rep),
        reservation: crate::slot::Slot::some(res),
        ..Ctx::default()
    };
    let out = run(&id, Input::RecvRep, &mut ctx, |_, _| {}, |_, _| {});
    let holder = ctx.holder.take();
    let _ = finish(&id, out, ctx.recv.as_ref());
    if let Some(holder) = holder {
        // A stale connection: REJ STALE_CONN for the REP, then a DREQ from the id that holds
        // the peer's QP; this id stays in REQ_SENT until its REQ times out.
        super::on_held(
            dev,
            port_num,
            wc,
            hdr,
            MsgKind::Rep,
            ctx.held,
            &holder,
            || trace::local(Local::StaleconnErr, rep.local_comm_id, rep.remote_comm_id),
        );
    }
}

/// An RTU (`cm_rtu_handler`).
pub(crate) fn on_rtu(
    dev: &crate::device::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    rtu: &CommIdsAndData<'_>,
) {
    let Some(id) = comm_id::acquire(rtu.remote_comm_id, rtu.local_comm_id) else {
        return;
    };
    super::deliver_recv(
        &id,
        Input::RecvRtu,
        Recv::new(dev, port_num, AttrId::Rtu, hdr, wc),
        8,
        |_| {},
    );
}
