// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! LAP and APR, received: `cm_lap_handler()` and `cm_apr_handler()`. Linux 6.12 has no call
//! that sends either (`ib_send_cm_lap()` and `ib_send_cm_apr()` are gone), so an id only ever
//! takes a peer's LAP: it delivers LAP_RECEIVED, the user may answer with an MRA
//! (`ib_send_cm_mra()` in ESTABLISHED with the LAP state RCVD), and `ib_cm_init_qp_attr()` then
//! gives the alternate path for RTS. Nothing in 6.12 brings the LAP state back to IDLE (that
//! took an APR of ours), so `ib_cm_notify(IB_EVENT_PATH_MIG)` refuses from then on, as in cm.c.
//! On RoCE ports both messages are dropped before any lookup (counted on receipt), as in cm.c.
//! Differences: a LAP that arrives through another device than its id's is dropped (see
//! `on_lap`); the alternate path's port is looked up on the receiving device only (cm.c:
//! every CM device); an APR's additional-information length is clamped to its 72 bytes.

use super::{deliver_recv, finish, run, Ctx, Recv};
use crate::{
    av::{Av, SgidAttr},
    bindings, comm_id,
    device::CmDevice,
    event::Event,
    logic::{
        req_event::lap_path,
        state::Input,
        wire::{
            lap::{Apr, Lap},
            AttrId, RecvHdr,
        },
    },
    path::fill_typed_path,
    recv_wc::RecvWc,
};

/// Payload offset of a LAP's private data.
const LAP_PD_OFFSET: usize = 64;
/// Payload offset of an APR's additional information.
const APR_INFO_OFFSET: usize = 12;
/// Payload offset of an APR's private data.
const APR_PD_OFFSET: usize = 84;

/// Whether cm.c handles alternate-path messages on this port (not on RoCE).
fn takes_alternate_paths(dev: &CmDevice, port_num: u32, wc: &RecvWc) -> bool {
    !dev.port_is_roce(port_num, wc)
}

/// A LAP (`cm_lap_handler`). The event's path record is built from the LAP and the id's
/// P_Key and MTU; the sender's address (from the completion) and the alternate path's address
/// are resolved before the id's lock is taken and replace the id's in whatever state it is;
/// the step decides the rest. A LAP whose addresses cannot be resolved is dropped.
pub(crate) fn on_lap(dev: &CmDevice, port_num: u32, wc: &RecvWc, hdr: &RecvHdr<'_>, lap: &Lap<'_>) {
    if !takes_alternate_paths(dev, port_num, wc) {
        return;
    }
    let Some(id) = comm_id::acquire(lap.remote_comm_id, lap.local_comm_id) else {
        return;
    };
    // Comm IDs are global, but an id sends through its own device: a LAP that reached it
    // through another HCA would leave it with addresses of that HCA (cm.c's addresses carry
    // their port and device, so it would send through the other HCA). Dropped instead.
    if !core::ptr::eq(&*id.dev, dev) {
        id.put_user();
        return;
    }
    let (pkey, mtu) = {
        let g = id.inner.lock();
        (g.conn.pkey, g.conn.path_mtu)
    };
    let port_opa = dev.port_opa_ah(port_num, wc);
    let path = lap_path(&lap.alternate, pkey, mtu, port_opa);
    let prepared = (|| {
        let mut ev = Event::with_paths(0, wc, 1).ok()?;
        let wc_av = Av::from_recv(dev, port_num, wc).and_then(Av::boxed).ok()?;
        // The address is IB or OPA here (not RoCE), so the record is too.
        fill_typed_path(&mut ev.paths()[0], &path, &wc_av);
        // The alternate address: the port of the path's source GID (`cm_init_av_by_path`
        // with no GID attribute).
        let alt_av = Av::from_path_rec(dev, &ev.paths()[0], SgidAttr::NONE).ok()?;
        ev.set_private_data(LAP_PD_OFFSET);
        let alt_path: *mut bindings::sa_path_rec = &mut ev.paths()[0];
        // The record lives in the event, which does not move (it is boxed).
        ev.lap_rcvd().alternate_path = alt_path;
        Some((ev, wc_av, alt_av))
    })();
    let Some((ev, wc_av, alt_av)) = prepared else {
        id.put_user();
        return;
    };
    let recv = Recv::new(dev, port_num, AttrId::Lap, hdr, wc);
    let mut ctx = Ctx {
        event: crate::slot::Slot::some(ev),
        recv: Some(recv),
        lap_avs: crate::slot::Slot::some((wc_av, alt_av)),
        ..Ctx::default()
    };
    let out = run(&id, Input::RecvLap, &mut ctx, |_, _| {}, |_, _| {});
    let _ = finish(&id, out, ctx.recv.as_ref());
}

/// An APR (`cm_apr_handler`): taken only while our LAP is outstanding, which nothing in 6.12
/// can make so; kept so that the table of inputs is cm.c's whole.
pub(crate) fn on_apr(dev: &CmDevice, port_num: u32, wc: &RecvWc, hdr: &RecvHdr<'_>, apr: &Apr<'_>) {
    if !takes_alternate_paths(dev, port_num, wc) {
        return;
    }
    let Some(id) = comm_id::acquire(apr.remote_comm_id, apr.local_comm_id) else {
        return;
    };
    let recv = Recv::new(dev, port_num, AttrId::Apr, hdr, wc);
    deliver_recv(&id, Input::RecvApr, recv, APR_PD_OFFSET, |ev| {
        let info = ev.payload_ptr(APR_INFO_OFFSET);
        let p = ev.apr_rcvd();
        p.ap_status = apr.ap_status.into();
        p.apr_info = info;
        p.info_len = apr.info_length;
    });
}
