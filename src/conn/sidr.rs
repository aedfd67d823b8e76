// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! SIDR, both ways: `ib_send_cm_sidr_req()`, `ib_send_cm_sidr_rep()` and
//! `cm_sidr_rep_handler()` (the SIDR_REQ in is `recv.rs`).

use super::{api, deliver_recv, Ctx, Recv};
use crate::{
    av::Av,
    bindings,
    cm_id::CmId,
    comm_id,
    logic::{
        req_event::{self, SidrReply},
        service_id::ServiceId,
        state::Input,
        wire::{
            field::Bytes,
            sidr::{SidrRep, SidrReq, SIDR_REQ_PRIVATE_DATA},
            AttrId, CmMessage, MadHeader,
        },
    },
    recv::RecvWc,
};
use kernel::{prelude::*, sync::Arc};

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
    let rep = req_event::sidr_rep(r);
    let mut msg = CmMessage::SidrRep(rep);
    let ctx = Ctx {
        msg: Some(&mut msg),
        attr_mod,
        ..Ctx::default()
    };
    api(id, Input::SendSidrRep, ctx, |_, _| {}, |_, _| {})
}

/// `ib_send_cm_sidr_req()`.
///
/// # Safety
///
/// `param` must be valid, with its path and private data.
pub(crate) unsafe fn send_sidr_req(
    id: &Arc<CmId>,
    param: &bindings::ib_cm_sidr_req_param,
) -> Result {
    if param.path.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: Caller contract.
    let pd = unsafe {
        super::c_bytes(
            param.private_data,
            param.private_data_len,
            SIDR_REQ_PRIVATE_DATA,
        )
    }?;
    // SAFETY: Valid path and attribute (caller).
    let av = unsafe { Av::from_path(&id.dev, param.path, param.sgid_attr) }?;
    // SAFETY: `param.path` is valid (caller).
    let pkey = u16::from_be(unsafe { (*param.path).pkey });
    let mut msg = CmMessage::SidrReq(SidrReq {
        request_id: 0,
        pkey,
        service_id: u64::from_be(param.service_id),
        private_data: Bytes::new(pd),
    });
    let ctx = Ctx {
        msg: Some(&mut msg),
        ..Ctx::default()
    };
    let sid = ServiceId::from_be(param.service_id);
    let timeout_ms = u32::try_from(param.timeout_ms).unwrap_or(0);
    let retries = param.max_cm_retries;
    let mut av = Some(av);
    api(
        id,
        Input::SendSidrReq,
        ctx,
        |id, g| {
            g.av = av.take();
            id.set_service_id(sid);
            g.conn.timeout_ms = timeout_ms;
            g.conn.max_cm_retries = retries;
        },
        |_, _| {},
    )
}

/// A SIDR_REP (`cm_sidr_rep_handler`).
pub(crate) fn on_sidr_rep(
    dev: &crate::device::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &MadHeader,
    rep: &SidrRep<'_>,
) {
    let Some(id) = comm_id::acquire(rep.request_id, 0) else {
        return;
    };
    let sgid_attr = id
        .inner
        .lock()
        .av
        .as_ref()
        .map_or(core::ptr::null(), |av| av.sgid_attr());
    let (status, qkey, qpn, info_len) = (rep.status, rep.qkey, rep.qpn, rep.info_length);
    deliver_recv(
        &id,
        Input::RecvSidrRep,
        Recv::new(dev, port_num, AttrId::SidrRep, hdr, wc),
        96,
        |ev| {
            let info = ev.payload_ptr(24);
            // SAFETY: `sidr_rep_rcvd` is the union member of SIDR_REP_RECEIVED.
            let p = unsafe { ev.ev.param.sidr_rep_rcvd.as_mut() };
            p.status = status.into();
            p.qkey = qkey;
            p.qpn = qpn;
            p.info = info;
            p.info_len = info_len.min(72);
            p.sgid_attr = sgid_attr;
        },
    );
}
