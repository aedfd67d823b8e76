// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REJ and MRA, both ways: `ib_send_cm_rej()`, `ib_send_cm_mra()`, `cm_rej_handler()` (with
//! `cm_acquire_rejected_id()`) and `cm_mra_handler()` (with `cm_acquire_mraed_id()`).

use super::{api, deliver_recv, Ctx, Recv, REJ_TIMEOUT};
use crate::{
    cm_id::{CmId, StoredPd},
    comm_id,
    device::CmDevice,
    logic::{
        state::{Input, MsgKind},
        wire::{
            conn::{Mra, Rej, MRA_PRIVATE_DATA, REJ_ARI},
            field::Bytes,
            AttrId, CmMessage, RecvHdr,
        },
    },
    recv_wc::RecvWc,
    remote::ReqKey,
};
use kernel::{prelude::*, sync::Arc};

/// `ib_send_cm_rej()` in any state of cm.c's list; the state decides the REJ's form.
pub(crate) fn send_rej(id: &Arc<CmId>, reason: u16, ari: &[u8], pd: &[u8]) -> Result {
    let mut msg = CmMessage::Rej(Rej {
        local_comm_id: 0,
        remote_comm_id: 0,
        message_rejected: 0,
        ari_length: 0,
        reason,
        ari: [0; REJ_ARI],
        private_data: Bytes::new(pd),
    });
    if let CmMessage::Rej(rej) = &mut msg {
        let n = ari.len().min(REJ_ARI);
        rej.ari[..n].copy_from_slice(&ari[..n]);
        // CAST: at most 72.
        rej.ari_length = n as u8;
    }
    let ctx = Ctx {
        msg: Some(&mut msg),
        ..Ctx::default()
    };
    api(id, Input::SendRej, ctx, |_, _| {}, |_, _| {})
}

/// `ib_send_cm_mra()`: with `IB_CM_MRA_FLAG_DELAY` (0x80) nothing is sent now; the MRA goes
/// out when a duplicate REQ or REP arrives.
pub(crate) fn send_mra(id: &Arc<CmId>, service_timeout: u8, pd: &[u8]) -> Result {
    if pd.len() > MRA_PRIVATE_DATA {
        return Err(EINVAL);
    }
    let delay = service_timeout & 0x80 != 0;
    // A delayed MRA is built only if a duplicate asks for it (from the stored copy), so none
    // is built here: that would zero and fill a whole message for nothing.
    let mut msg = (!delay).then(|| {
        CmMessage::Mra(Mra {
            local_comm_id: 0,
            remote_comm_id: 0,
            message_mraed: 0,
            service_timeout: service_timeout & 0x1F,
            private_data: Bytes::new(pd),
        })
    });
    // The stored copy is kept whether or not a MAD goes out now.
    let mut keep = Some(StoredPd::copy(pd)?);
    let ctx = Ctx {
        msg: msg.as_mut(),
        ..Ctx::default()
    };
    api(
        id,
        Input::SendMra { delay },
        ctx,
        |_, _| {},
        |_, g| {
            g.conn.service_timeout = service_timeout;
            if let Some(k) = keep.take() {
                g.stored_pd = k;
            }
        },
    )
}

/// A REJ (`cm_rej_handler`).
pub(crate) fn on_rej(dev: &CmDevice, port_num: u32, wc: &RecvWc, hdr: &RecvHdr<'_>, rej: &Rej<'_>) {
    let id = if rej.reason == REJ_TIMEOUT {
        // The peer timed out our REP: found by its CA GUID (the ARI) and its comm ID.
        let mut guid = [0u8; 8];
        guid.copy_from_slice(&rej.ari[..8]);
        let key = ReqKey {
            ca_guid: u64::from_be_bytes(guid),
            comm_id: rej.local_comm_id,
        };
        let found = crate::remote::tables().lock().conns.get_req(&key);
        // Through the comm-ID table, as cm.c's `cm_find_remote_id` + `cm_acquire_id`: an id
        // still being set up (not yet handed to its handler) is not found.
        found.and_then(|id| comm_id::acquire(id.local_id(), id.remote_id()))
    } else if rej.message_rejected == MsgKind::Req.wire() {
        comm_id::acquire(rej.remote_comm_id, 0)
    } else {
        comm_id::acquire(rej.remote_comm_id, rej.local_comm_id)
    };
    let Some(id) = id else { return };
    let stale = rej.reason == super::REJ_STALE_CONN;
    let (reason, ari_length) = (rej.reason, rej.ari_length);
    deliver_recv(
        &id,
        Input::RecvRej { stale },
        Recv::new(dev, port_num, AttrId::Rej, hdr, wc),
        84,
        |ev| {
            let ari = ev.payload_ptr(12);
            let p = ev.rej_rcvd();
            p.reason = reason.into();
            p.ari = ari;
            // Clamped to the ARI field's 72 bytes (cm.c passes the 7-bit length unclamped).
            p.ari_length = ari_length.min(72);
        },
    );
}

/// An MRA (`cm_mra_handler`).
pub(crate) fn on_mra(dev: &CmDevice, port_num: u32, wc: &RecvWc, hdr: &RecvHdr<'_>, mra: &Mra<'_>) {
    let Some(kind) = MsgKind::from_wire(mra.message_mraed) else {
        return;
    };
    let id = match kind {
        MsgKind::Req => comm_id::acquire(mra.remote_comm_id, 0),
        _ => comm_id::acquire(mra.remote_comm_id, mra.local_comm_id),
    };
    let Some(id) = id else { return };
    let t = mra.service_timeout;
    let recv = Recv::new(dev, port_num, AttrId::Mra, hdr, wc);
    super::deliver_recv_ctx(&id, Input::RecvMra { mraed: kind }, recv, 10, t, |ev| {
        ev.mra_rcvd().service_timeout = t;
    });
}
