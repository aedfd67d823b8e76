// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! SIDR, both ways: `ib_send_cm_sidr_req()`, `ib_send_cm_sidr_rep()`, `cm_sidr_req_handler()`
//! (the listener match and the passive id) and `cm_sidr_rep_handler()`.

use super::{
    begin_call, cancel_tracked, deliver_or_put, leave_remote, lock_for_event, queue_event,
    recv_event, send_msg, trace_refused,
};
use crate::{
    av::{Av, SgidAttr},
    bindings,
    cm_id::{CmDevice, CmId, Conn, Filed, Init},
    comm_id,
    event::Event,
    logic::{
        input,
        req_event::{self, SidrReply, SIDR_UNSUPPORTED},
        service_id::ServiceId,
        state::{self, Input, Out, State},
        wire::{
            field::Bytes,
            sidr::{SidrRep, SidrReq},
            AttrId, CmMessage, RecvHdr,
        },
    },
    recv::{bth_pkey, count_duplicate, hand_over, respond, ListenerPin},
    recv_wc::RecvWc,
    remote::{self, RemoteReservation, SidrKey, Unlinked},
    tunables,
};
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// A SIDR_REP with `status` for the request `id` holds (destroy's REJECT).
pub(crate) fn sidr_rep_of(id: &CmId, status: u8) -> SidrRep<'static> {
    req_event::sidr_rep(&SidrReply {
        request_id: id.remote_id(),
        status,
        qpn: 0,
        qkey: 0,
        service_id: id.service_id().get(),
        vendor_id: 0,
        info: &[],
        private_data: &[],
    })
}

/// `ib_send_cm_sidr_rep()`: the state changes only once the reply is posted.
pub(crate) fn send_sidr_rep(id: &Arc<CmId>, r: &SidrReply<'_>, attr_mod: u32) -> Result {
    let mut msg = CmMessage::SidrRep(req_event::sidr_rep(r));
    let mut unlinked = Unlinked::default();
    let (mut g, ()) = begin_call(id, Input::SendSidrRep, |s, _| input::send_sidr_rep(s))?;
    send_msg(id, &mut g, Out::SidrRep, &mut msg, attr_mod, State::Idle)?;
    leave_remote(id, &mut g, &mut unlinked);
    id.set_state(State::Idle.raw());
    drop(g);
    unlinked.free();
    Ok(())
}

/// `ib_send_cm_sidr_req()`: `param`'s scalars, its `path`, `sgid_attr` and private data
/// (borrowed by the entry layer).
pub(crate) fn send_sidr_req(
    id: &Arc<CmId>,
    param: &bindings::ib_cm_sidr_req_param,
    path: &bindings::sa_path_rec,
    sgid: SgidAttr<'_>,
    pd: &[u8],
) -> Result {
    let av = Av::from_path_rec(&id.dev, path, sgid)?;
    let pkey = u16::from_be(path.pkey);
    let mut msg = CmMessage::SidrReq(SidrReq {
        request_id: 0,
        pkey,
        service_id: u64::from_be(param.service_id),
        private_data: Bytes::new(pd),
    });
    let sid = ServiceId::from_be(param.service_id);
    let bounds = tunables::bounds();
    let timeout_ms = bounds.timeout_ms(u32::try_from(param.timeout_ms).unwrap_or(0));
    let (mut g, ()) = begin_call(id, Input::SendSidrReq, |s, _| input::send_sidr_req(s))?;
    // The id takes the request's address and parameters before the send, which needs them
    // (they stay if it fails, as cm.c's do).
    let old = g.av.replace(av);
    id.set_service_id(sid);
    g.conn.timeout_ms = timeout_ms;
    g.conn.max_cm_retries = bounds.retries(param.max_cm_retries);
    let sent = send_msg(id, &mut g, Out::SidrReq, &mut msg, 0, State::SidrReqSent);
    if sent.is_ok() {
        id.set_state(State::SidrReqSent.raw());
    }
    drop(g);
    drop(old);
    sent
}

/// A SIDR_REP (`cm_sidr_rep_handler`).
pub(crate) fn on_sidr_rep(wc: &RecvWc, rep: &SidrRep<'_>) {
    let Some(id) = comm_id::acquire(rep.request_id, 0) else {
        return;
    };
    let mut slot = None;
    let Some(mut ev) = recv_event(&id, wc, 96, &mut slot) else {
        return;
    };
    let info = ev.payload_ptr(24);
    let p = ev.sidr_rep_rcvd();
    p.status = rep.status.into();
    p.qkey = rep.qkey;
    p.qpn = rep.qpn;
    p.info = info;
    p.info_len = rep.info_length.min(72);
    let (mut g, mut ev) = lock_for_event(&id, ev);
    let mut deliver = None;
    if !g.destroyed {
        match input::sidr_rep_received(id.cm_state()) {
            Ok(()) => {
                ev.sidr_rep_rcvd().sgid_attr =
                    g.av.as_ref().map_or(core::ptr::null(), |av| av.sgid_attr());
                cancel_tracked(&id, &mut g);
                id.set_state(State::Idle.raw());
                deliver = queue_event(&id, &mut g, ev, state::Event::SidrRepReceived);
            }
            Err(r) => trace_refused(&id, Input::RecvSidrRep, r),
        }
    }
    drop(g);
    deliver_or_put(&id, deliver);
}

/// SIDR_REQ in (`cm_sidr_req_handler`): the duplicate check, the listener match, and the
/// passive id handed to the listener's handler.
pub(crate) fn on_sidr_req(
    owner: ArcBorrow<'_, CmDevice>,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    sidr: &SidrReq<'_>,
) {
    let dev: &CmDevice = &owner;
    let sid = ServiceId::new(sidr.service_id);
    let slid = wc.slid();
    let key = SidrKey {
        request_id: sidr.request_id,
        slid,
    };
    if remote::tables().lock().sidrs.contains(&key) {
        return count_duplicate(dev, port_num, AttrId::SidrReq);
    }
    let listener = dev.inner.lock().listen.find(sid);
    let Some(listener) = listener else {
        let rep = req_event::sidr_rep(&SidrReply {
            request_id: sidr.request_id,
            status: SIDR_UNSUPPORTED,
            qpn: 0,
            qkey: 0,
            service_id: sidr.service_id,
            vendor_id: 0,
            info: &[],
            private_data: &[],
        });
        return respond(dev, port_num, wc, hdr.tid(), &CmMessage::SidrRep(rep));
    };
    let listener = ListenerPin(listener);
    let Ok(av) = Av::from_recv(dev, port_num, wc).and_then(Av::boxed) else {
        return;
    };
    let (Ok(reservation), Ok(mut ev)) = (
        RemoteReservation::<SidrKey>::new(GFP_KERNEL),
        Event::for_wc(bindings::ib_cm_event_type_IB_CM_SIDR_REQ_RECEIVED, wc),
    ) else {
        return;
    };
    let sgid_attr = av.sgid_attr();
    let init = Init {
        handler: listener.0.handler(),
        context: listener.0.context(),
        state: State::SidrReqRcvd,
        service_id: sid,
        remote_id: sidr.request_id,
        av: Some(av),
        alt_av: None,
        conn: Conn {
            tid: hdr.tid(),
            ..Conn::default()
        },
        remote: Some(Filed::Sidr(key)),
        delivering: true,
    };
    let Ok(id) = CmId::build(owner.into(), init) else {
        return;
    };
    let refused = remote::tables().lock().sidrs.insert(key, &id, reservation);
    if refused.is_err() {
        drop(refused);
        // Not in SIDR_REQ_RCVD as far as destroy is concerned: a retransmission gets no
        // SIDR_REP REJECT (cm.c checks for duplicates before setting the state).
        {
            let mut g = id.inner.lock();
            g.remote = None;
            id.set_state(State::Idle.raw());
        }
        id.destroy_with(-(bindings::ENOMEM as i32));
        return count_duplicate(dev, port_num, AttrId::SidrReq);
    }
    ev.set_private_data(16);
    let p = ev.sidr_req_rcvd();
    p.listen_id = CmId::raw(&listener.0);
    p.service_id = sidr.service_id.to_be();
    p.sgid_attr = sgid_attr;
    p.bth_pkey = bth_pkey(dev, port_num, wc);
    p.port = u8::try_from(port_num).unwrap_or(0);
    p.pkey = sidr.pkey;
    hand_over(id, ev, false);
    drop(listener);
}
