// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REQ out: `ib_send_cm_req()` (cm.c's `cm_validate_req_param()`, `cm_format_req()` and
//! `ib_send_cm_req()`); REQ in: `cm_req_handler()` and `cm_match_req()` (the duplicate and
//! stale checks, the listener match, the passive id and its REQ_RECEIVED event).

use super::{begin_call, send_msg};
use crate::{
    av::{Av, SgidAttr},
    bindings,
    cm_id::{CmDevice, CmId, Conn, Filed, Init},
    conn,
    event::{self, Event},
    logic::{
        input,
        req_event::{self, RecvPort},
        service_id::ServiceId,
        state::{Input, MsgKind, Out, State},
        timeout,
        wire::{
            conn::{Path, Req, ReqFields, ReqView, MSG_REQ},
            field::Bytes,
            CmMessage, RecvHdr,
        },
    },
    path::{self, fill_path, fill_typed_path},
    recv::{bth_pkey, hand_over, issue_rej, respond, ListenerPin},
    recv_wc::RecvWc,
    remote::{self, ConnReservation, QpKey, ReqKey},
    send, trace, tunables,
};
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// `IB_LID_PERMISSIVE`.
const LID_PERMISSIVE: u16 = 0xFFFF;

/// The REQ's view of one path record (`cm_format_req`); `inbound` is the primary path's
/// inbound record, if the caller gave one.
fn req_path(
    p: &bindings::sa_path_rec,
    inbound: Option<&bindings::sa_path_rec>,
    ack_delay: u8,
) -> Path {
    let (slid, dlid, ext) = path::lids(p);
    let (mut sgid, mut dgid) = path::gids(p);
    if ext {
        // OPA_MAKE_ID: the OPA GID prefix with the 32-bit LID as interface ID.
        sgid[8..].copy_from_slice(&(0x0006_6A00_0000_0000u64 | u64::from(slid)).to_be_bytes());
        dgid[8..].copy_from_slice(&(0x0006_6A00_0000_0000u64 | u64::from(dlid)).to_be_bytes());
    }
    let (local_lid, remote_lid) = if p.hop_limit <= 1 {
        // CAST: cm.c keeps the low 16 bits of the path's LIDs (`htons(ntohl(lid))`).
        if ext {
            (0, 0)
        } else {
            (slid as u16, dlid as u16)
        }
    } else if let Some(inbound) = inbound {
        let il = path::lids(inbound);
        // CAST: as above.
        (il.1 as u16, LID_PERMISSIVE)
    } else {
        (LID_PERMISSIVE, LID_PERMISSIVE)
    };
    Path {
        local_lid,
        remote_lid,
        local_gid: sgid,
        remote_gid: dgid,
        flow_label: u32::from_be(p.flow_label),
        packet_rate: p.rate,
        traffic_class: p.traffic_class,
        hop_limit: p.hop_limit,
        sl: p.sl,
        subnet_local: p.hop_limit <= 1,
        local_ack_timeout: timeout::ack_timeout(ack_delay, p.packet_life_time),
    }
}

/// What `ib_send_cm_req()` passes, borrowed by the entry layer (`entry/abi.rs`), which
/// checked the pointers.
pub(crate) struct ReqArgs<'a> {
    /// The scalar parameters; its pointers are read only through the fields below.
    pub(crate) param: &'a bindings::ib_cm_req_param,
    /// `primary_path`.
    pub(crate) primary: &'a bindings::sa_path_rec,
    /// `primary_path_inbound`.
    pub(crate) primary_inbound: Option<&'a bindings::sa_path_rec>,
    /// `alternate_path`.
    pub(crate) alternate: Option<&'a bindings::sa_path_rec>,
    /// `ppath_sgid_attr`.
    pub(crate) primary_sgid: SgidAttr<'a>,
    /// The private data (at most the REQ's field).
    pub(crate) private_data: &'a [u8],
}

/// `ib_send_cm_req()`.
pub(crate) fn send_req(id: &Arc<CmId>, args: &ReqArgs<'_>) -> Result {
    let param = args.param;
    let qpt = param.qp_type;
    if !(qpt == bindings::ib_qp_type_IB_QPT_RC
        || qpt == bindings::ib_qp_type_IB_QPT_UC
        || qpt == bindings::ib_qp_type_IB_QPT_XRC_INI)
    {
        return Err(EINVAL);
    }
    let pd = args.private_data;
    let (pri, alt) = (args.primary, args.alternate);
    if let Some(alt) = alt {
        if alt.pkey != pri.pkey || alt.mtu != pri.mtu {
            return Err(EINVAL);
        }
    }
    if id.cm_state() != crate::logic::state::State::Idle {
        return Err(EINVAL);
    }
    let dev = &id.dev;
    let av = Av::from_path_rec(dev, pri, args.primary_sgid)?;
    let alt_av = match alt {
        Some(alt) => Some(Av::from_path_rec(dev, alt, SgidAttr::NONE)?),
        None => None,
    };
    // Read inside the device's send gate: once removal began, EINVAL (see `Av::from_path_rec`).
    let (Some(guid), Some(ack_delay)) = (dev.node_guid(), dev.ack_delay()) else {
        return Err(EINVAL);
    };
    let xrc = qpt == bindings::ib_qp_type_IB_QPT_XRC_INI;
    // The administrator's bounds apply to what the caller asks (the REQ carries the result).
    let bounds = tunables::bounds();
    let remote_cm_response_timeout = bounds.timeout(param.remote_cm_response_timeout);
    let local_cm_response_timeout = bounds.timeout(param.local_cm_response_timeout);
    let max_cm_retries = bounds.retries(param.max_cm_retries);
    let mut msg = CmMessage::Req(Req {
        local_comm_id: 0,
        vendor_id: param.ece.vendor_id & 0x00FF_FFFF,
        service_id: u64::from_be(param.service_id),
        local_ca_guid: u64::from_be(guid),
        local_qkey: 0,
        local_qpn: param.qp_num & 0x00FF_FFFF,
        responder_resources: if xrc { 0 } else { param.responder_resources },
        local_eecn: 0,
        initiator_depth: param.initiator_depth,
        remote_eecn: 0,
        remote_cm_response_timeout: remote_cm_response_timeout & 0x1F,
        transport_service_type: if qpt == bindings::ib_qp_type_IB_QPT_UC {
            1
        } else if xrc {
            3
        } else {
            0
        },
        end_to_end_flow_control: param.flow_control != 0,
        starting_psn: param.starting_psn & 0x00FF_FFFF,
        local_cm_response_timeout: local_cm_response_timeout & 0x1F,
        retry_count: if xrc { 0 } else { param.retry_count & 7 },
        pkey: u16::from_be(pri.pkey),
        path_mtu: pri.mtu & 0xF,
        rdc_exists: false,
        rnr_retry_count: if xrc { 0 } else { param.rnr_retry_count & 7 },
        max_cm_retries: max_cm_retries & 0xF,
        srq: !xrc && param.srq != 0,
        extended_transport_type: if xrc { 1 } else { 0 },
        primary: req_path(pri, args.primary_inbound, ack_delay),
        alternate: match alt {
            Some(alt) => req_path(alt, None, ack_delay),
            None => Path::default(),
        },
        sap_supported: false,
        private_data: Bytes::new(pd),
    });
    let sid = ServiceId::from_be(param.service_id);
    let wait = timeout::req_wait_ms(pri.packet_life_time, remote_cm_response_timeout);
    let (mut g, ()) = begin_call(id, Input::SendReq, |s, _| input::send_req(s))?;
    // The id takes the request's addresses and parameters before the send, which needs them
    // (they stay if it fails, as cm.c's do); the replaced addresses go after the lock.
    let old = (g.av.replace(av), core::mem::replace(&mut g.alt_av, alt_av));
    id.set_service_id(sid);
    g.conn.timeout_ms = wait;
    g.conn.max_cm_retries = max_cm_retries;
    g.conn.initiator_depth = param.initiator_depth;
    g.conn.responder_resources = param.responder_resources;
    g.conn.retry_count = param.retry_count;
    g.conn.path_mtu = pri.mtu;
    g.conn.pkey = u16::from_be(pri.pkey);
    g.conn.set_qp_type(qpt);
    g.conn.local_qpn = param.qp_num & 0x00FF_FFFF;
    g.conn.rq_psn = param.starting_psn & 0x00FF_FFFF;
    let sent = send_msg(
        id,
        &mut g,
        Out::Req,
        &mut msg,
        param.ece.attr_mod,
        State::ReqSent,
    );
    if sent.is_ok() {
        id.set_state(State::ReqSent.raw());
    }
    drop(g);
    drop(old);
    sent
}

/// The passive id's parameters from a REQ (`cm_req_handler`).
fn conn_of_req(req: &ReqView<'_>, tid: u64) -> Conn {
    // The administrator's bounds apply to the waits and retries the peer asks of us too.
    let bounds = tunables::bounds();
    let mut conn = Conn {
        tid,
        remote_qpn: req.local_qpn(),
        sq_psn: req.starting_psn(),
        timeout_ms: timeout::conv_ms(bounds.timeout(req.local_cm_response_timeout())),
        path_mtu: req.path_mtu(),
        pkey: req.pkey(),
        max_cm_retries: bounds.retries(req.max_cm_retries()),
        responder_resources: req.initiator_depth(),
        initiator_depth: req.responder_resources(),
        retry_count: req.retry_count(),
        rnr_retry_count: req.rnr_retry_count(),
        ..Conn::default()
    };
    conn.set_qp_type(req_event::qp_type(req));
    conn
}

/// `IB_CM_REJ_INVALID_GID`.
pub(crate) const REJ_INVALID_GID: u16 = 12;
/// `IB_CM_REJ_INVALID_ALT_GID`.
pub(crate) const REJ_INVALID_ALT_GID: u16 = 18;

/// REQ in (`cm_req_handler`): the duplicate and stale checks, the listener match, and the
/// passive id handed to the listener's handler.
pub(crate) fn on_req(
    owner: ArcBorrow<'_, CmDevice>,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    view: ReqView<'_>,
) {
    let dev: &CmDevice = &owner;
    let sid = ServiceId::new(view.service_id());
    let key = ReqKey {
        ca_guid: view.local_ca_guid(),
        comm_id: view.local_comm_id(),
    };
    let qp = QpKey {
        ca_guid: view.local_ca_guid(),
        qpn: view.local_qpn(),
    };
    let found = remote::tables().lock().conns.holder(&key, &qp);
    // cm.c traces every REQ that makes no new connection (a retransmission, a stale
    // connection, no listener) as `icm_no_listener_err`, after its answer.
    let vacancy = match found {
        Ok(v) => v,
        Err(taken) => {
            let (held, holder) = taken.held();
            conn::on_held(dev, port_num, wc, hdr, MsgKind::Req, held, &holder, || {});
            return trace::no_listener(view.local_comm_id());
        }
    };
    let listener = dev.inner.lock().listen.find(sid);
    let Some(listener) = listener else {
        issue_rej(
            dev,
            port_num,
            wc,
            hdr.tid(),
            req_event::REJ_INVALID_SERVICE_ID,
            MSG_REQ,
        );
        return trace::no_listener(view.local_comm_id());
    };
    let listener = ListenerPin(listener);
    // Read in place from here on, each field where it is used.
    let req = &view;
    let Ok(wc_av) = Av::from_recv(dev, port_num, wc) else {
        return;
    };
    let port = RecvPort {
        roce: wc_av.is_roce(),
        opa: dev.port_opa_ah(port_num, wc),
        wc_slid: wc.slid(),
        wc_sl: wc.sl(),
        wc_dlid_path_bits: wc.dlid_path_bits(),
    };
    let (primary, alternate) = req_event::req_paths(req, &port);
    let paths = if alternate.is_some() { 2 } else { 1 };
    let ev = Event::with_paths(bindings::ib_cm_event_type_IB_CM_REQ_RECEIVED, wc, paths);
    let Ok(mut ev) = ev else {
        return;
    };
    fill_typed_path(&mut ev.paths()[0], &primary, &wc_av);
    ev.paths()[0].hop_limit = wc_av.hop_limit();
    if let Some(alt) = &alternate {
        fill_path(&mut ev.paths()[1], alt);
        ev.paths()[1].rec_type = ev.paths()[0].rec_type;
        path::set_lids(&mut ev.paths()[1], alt.dlid, alt.slid);
    }
    // The id's address comes from the primary path (`cm_init_av_by_path`); if that fails,
    // REJ INVALID_GID with our port's GID 0 as ARI.
    let mut av = match Av::from_path_rec(dev, &ev.paths()[0], wc_av.sgid()) {
        Ok(av) => av,
        Err(_) => {
            let ari = dev.port_gid0(port_num, wc).map(|g| path::gid_bytes(&g));
            let rej = req_event::rej_of_req(
                0,
                req.local_comm_id(),
                REJ_INVALID_GID,
                ari.as_ref().map_or(&[][..], |a| &a[..]),
                &[],
            );
            return respond(dev, port_num, wc, hdr.tid(), &CmMessage::Rej(rej));
        }
    };
    if av.is_ib() {
        // The REQ's primary local LID (after the routed-REQ rule), programmed into the QP by
        // `ib_cm_init_qp_attr(RTR)`.
        av.dlid_datapath = req_event::datapath_dlid(req, &port);
    }
    // A REQ with an alternate path gives the id its alternate address too; if that path gives
    // none, REJ INVALID_ALT_GID with the primary path's source GID as ARI (as cm.c, which
    // resolves it with no sgid attribute).
    let alt_av = if alternate.is_some() {
        match Av::from_path_rec(dev, &ev.paths()[1], SgidAttr::NONE) {
            Ok(alt) => Some(alt),
            Err(_) => {
                let ari = path::gids(&ev.paths()[0]).0;
                let rej =
                    req_event::rej_of_req(0, req.local_comm_id(), REJ_INVALID_ALT_GID, &ari, &[]);
                // cm.c sends this one from the id, on the primary path's address it has just
                // built (`cm_alloc_msg`), not back along the REQ's packet as the INVALID_GID
                // REJ above; without a handle nothing is sent, as there.
                let _ = send::send_along(dev, &av, &CmMessage::Rej(rej), hdr.tid());
                return;
            }
        }
    } else {
        None
    };
    // An OPA source GID is shown as the port's GID 0, on both paths (`cm_opa_to_ib_sgid`).
    let rewrite = req_event::ib_sgid_rewrites(&primary, alternate.as_ref(), &port);
    for (path, _) in ev.paths().iter_mut().zip(rewrite).filter(|(_, r)| *r) {
        // On failure the OPA GID stays, as in C.
        if let Some(gid) = dev.port_gid0(port_num, wc) {
            path.sgid = gid;
        }
    }
    let Ok(reservation) = ConnReservation::new(GFP_KERNEL) else {
        return;
    };
    let sgid_attr = av.sgid_attr();
    let init = Init {
        handler: listener.0.handler(),
        context: listener.0.context(),
        state: State::ReqRcvd,
        service_id: sid,
        remote_id: req.local_comm_id(),
        av: Some(av),
        alt_av,
        conn: conn_of_req(req, hdr.tid()),
        // Filed below, once in the tables.
        remote: None,
        delivering: true,
    };
    let Ok(id) = CmId::build(owner.into(), init) else {
        return;
    };
    drop(wc_av);
    // A copy of the same REQ, or another REQ from the same QP, may have been handled on
    // another CPU meanwhile (through this device or another): the insert checks again, under
    // the tables' lock, and registers in both tables or neither; under the id's lock, the
    // id records where it was filed (what takes it out of the tables again).
    let refused = {
        let mut g = id.inner.lock();
        let filed = remote::tables()
            .lock()
            .conns
            .insert(key, qp, &id, reservation, Some(vacancy));
        match filed {
            Ok(link) => {
                debug_assert!(g.remote.is_none());
                g.remote = Some(Filed::Conn(link));
                None
            }
            Err(refused) => Some(refused),
        }
    };
    // A refused reservation is freed when this function returns; no lock is held then.
    if let Some((_, taken)) = refused {
        let (held, holder) = taken.held();
        id.destroy_with(-(bindings::ENOMEM as i32));
        conn::on_held(dev, port_num, wc, hdr, MsgKind::Req, held, &holder, || {});
        // As on the early path (cm.c traces every failed `cm_match_req`).
        return trace::no_listener(req.local_comm_id());
    }

    let params = req_event::req_params(req, hdr.attr_mod());
    let pd = ev.payload_ptr(140);
    let (primary_ptr, alt_ptr) = {
        let (a, b) = ev.paths().split_at_mut(1);
        (a.as_mut_ptr(), b.as_mut_ptr())
    };
    ev.ev.private_data = pd;
    let p = ev.req_rcvd();
    p.listen_id = CmId::raw(&listener.0);
    p.bth_pkey = bth_pkey(dev, port_num, wc);
    p.port = u8::try_from(port_num).unwrap_or(0);
    p.primary_path = primary_ptr;
    p.alternate_path = if alternate.is_some() {
        alt_ptr
    } else {
        core::ptr::null_mut()
    };
    // The id's address holds this attribute while it is the id's address: for the whole
    // handler call, unless a LAP (InfiniBand only) replaces the address meanwhile, which drops
    // the reference as cm.c's `cm_init_av_for_lap()` does.
    p.ppath_sgid_attr = sgid_attr;
    p.remote_ca_guid = params.remote_ca_guid.to_be();
    p.remote_qkey = params.remote_qkey;
    p.remote_qpn = params.remote_qpn;
    p.qp_type = params.qp_type;
    p.starting_psn = params.starting_psn;
    p.responder_resources = params.responder_resources;
    p.initiator_depth = params.initiator_depth;
    event::set_req_bits(
        p,
        params.local_cm_response_timeout,
        params.flow_control.into(),
        params.remote_cm_response_timeout,
        params.retry_count,
        params.rnr_retry_count,
        params.srq.into(),
    );
    p.ece.vendor_id = params.ece_vendor_id;
    p.ece.attr_mod = params.ece_attr_mod;
    hand_over(id, ev, true);
    drop(listener);
}
