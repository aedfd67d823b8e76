// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! DREQ and DREP, both ways: `ib_send_cm_dreq()`, `ib_send_cm_drep()`, `cm_dreq_handler()`,
//! `cm_issue_drep()` and `cm_drep_handler()`.

use super::{api, deliver_recv, Ctx, Recv};
use crate::{
    cm_id::{CmId, StoredPd},
    comm_id,
    logic::{
        state::Input,
        wire::{
            conn::{CommIdsAndData, Dreq, DREP_PRIVATE_DATA, DREQ_PRIVATE_DATA},
            field::Bytes,
            AttrId, CmMessage, RecvHdr,
        },
    },
    port::Counter,
    recv_wc::RecvWc,
    trace::{self, Local},
};
use kernel::{prelude::*, sync::Arc};

/// `ib_send_cm_dreq()`: `-EINVAL` unless ESTABLISHED (rdma_cm relies on it in DREQ_RCVD to
/// fall back to a DREP).
pub(crate) fn send_dreq(id: &Arc<CmId>, pd: &[u8]) -> Result {
    if pd.len() > DREQ_PRIVATE_DATA {
        return Err(EINVAL);
    }
    let mut msg = CmMessage::Dreq(Dreq {
        local_comm_id: 0,
        remote_comm_id: 0,
        remote_qpn_eecn: 0,
        private_data: Bytes::new(pd),
    });
    let ctx = Ctx {
        msg: Some(&mut msg),
        ..Ctx::default()
    };
    api(id, Input::SendDreq, ctx, |_, _| {}, |_, _| {})
}

/// `ib_send_cm_drep()`: enters timewait, then sends (the state change stands if the send
/// fails).
pub(crate) fn send_drep(id: &Arc<CmId>, pd: &[u8]) -> Result {
    if pd.len() > DREP_PRIVATE_DATA {
        return Err(EINVAL);
    }
    let mut msg = CmMessage::Drep(CommIdsAndData {
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
    api(id, Input::SendDrep, ctx, |_, _| {}, |_, _| {})
}

/// A DREQ (`cm_dreq_handler`). A DREQ for no id is answered with a DREP and counted as a
/// duplicate (`cm_issue_drep`); one whose QPN is not the id's local QPN is dropped.
pub(crate) fn on_dreq(
    dev: &crate::device::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    dreq: &Dreq<'_>,
) {
    let Some(id) = comm_id::acquire(dreq.remote_comm_id, dreq.local_comm_id) else {
        if let Some(port) = dev.port(port_num) {
            port.count(Counter::RxDuplicates, AttrId::Dreq.counter_index(), 1);
        }
        let drep = CommIdsAndData {
            local_comm_id: dreq.remote_comm_id,
            remote_comm_id: dreq.local_comm_id,
            private_data: Bytes::EMPTY,
        };
        crate::recv::respond(dev, port_num, wc, hdr.tid(), &CmMessage::Drep(drep));
        let (l, r) = (dreq.local_comm_id, dreq.remote_comm_id);
        trace::local(Local::IssueDrep, l, r);
        trace::local(Local::NoPrivErr, l, r);
        return;
    };
    if id.inner.lock().conn.local_qpn != dreq.remote_qpn_eecn {
        id.put_user();
        return;
    }
    deliver_recv(
        &id,
        Input::RecvDreq,
        Recv::new(dev, port_num, AttrId::Dreq, hdr, wc),
        12,
        |_| {},
    );
}

/// A DREP (`cm_drep_handler`).
pub(crate) fn on_drep(
    dev: &crate::device::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    drep: &CommIdsAndData<'_>,
) {
    let Some(id) = comm_id::acquire(drep.remote_comm_id, drep.local_comm_id) else {
        return;
    };
    deliver_recv(
        &id,
        Input::RecvDrep,
        Recv::new(dev, port_num, AttrId::Drep, hdr, wc),
        8,
        |_| {},
    );
}
