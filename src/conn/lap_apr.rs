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

use super::{
    answer, cancel_tracked, deliver_or_put, lock_for_event, queue_event, recv_event,
    retire_conn_ah, send_answer, trace_refused, Recv,
};
use crate::{
    av::{Av, SgidAttr},
    bindings,
    cm_id::CmDevice,
    comm_id,
    event::Event,
    logic::{
        input::{self, LapReceived},
        req_event::lap_path,
        state::{self, Input, Lap as LapState, MsgKind, Out, Refusal},
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
/// `logic::input::lap_received` decides the rest. A LAP whose addresses cannot be resolved is
/// dropped.
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
    let mut g = id.inner.lock();
    let (mut deliver, mut resend, mut replaced) = (None, None, None);
    if !g.destroyed {
        // `cm_lap_handler()` replaces both addresses before it looks at the state; the
        // primary keeps its ACK timeout and datapath DLID (`cm_init_av_for_lap()`).
        let mut av = wc_av;
        if let Some(old) = g.av.as_deref() {
            av.timeout = old.timeout;
            av.dlid_datapath = old.dlid_datapath;
        }
        replaced = Some((g.av.replace(av), g.alt_av.replace(alt_av)));
        // The connection handle was made from the replaced address: no send may take it.
        retire_conn_ah(&id, &mut g);
        match input::lap_received(id.cm_state(), id.lap()) {
            Ok(LapReceived::Accept) => {
                g.conn.tid = recv.tid;
                id.set_lap(LapState::Rcvd);
                deliver = queue_event(&id, &mut g, ev, state::Event::LapReceived);
            }
            Ok(LapReceived::Resend) => {
                crate::recv::count_duplicate(dev, port_num, AttrId::Lap);
                resend = answer(&id, &g, Out::ResendMra(MsgKind::Other));
            }
            Err(r) => {
                if r == Refusal::Duplicate {
                    crate::recv::count_duplicate(dev, port_num, AttrId::Lap);
                }
                trace_refused(&id, Input::RecvLap, r);
            }
        }
    }
    drop(g);
    // The replaced addresses hold sgid attribute references: dropped after the lock.
    drop(replaced);
    send_answer(&recv, resend);
    deliver_or_put(&id, deliver);
}

/// An APR (`cm_apr_handler`): taken only while our LAP is outstanding, which nothing in 6.12
/// can make so; kept so that the table of inputs is cm.c's whole.
pub(crate) fn on_apr(dev: &CmDevice, port_num: u32, wc: &RecvWc, apr: &Apr<'_>) {
    if !takes_alternate_paths(dev, port_num, wc) {
        return;
    }
    let Some(id) = comm_id::acquire(apr.remote_comm_id, apr.local_comm_id) else {
        return;
    };
    let mut slot = None;
    let Some(mut ev) = recv_event(&id, wc, APR_PD_OFFSET, &mut slot) else {
        return;
    };
    let info = ev.payload_ptr(APR_INFO_OFFSET);
    let p = ev.apr_rcvd();
    p.ap_status = apr.ap_status.into();
    p.apr_info = info;
    p.info_len = apr.info_length;
    let (mut g, ev) = lock_for_event(&id, ev);
    let mut deliver = None;
    if !g.destroyed {
        match input::apr_received(id.cm_state(), id.lap()) {
            Ok(()) => {
                cancel_tracked(&id, &mut g);
                id.set_lap(LapState::Idle);
                deliver = queue_event(&id, &mut g, ev, state::Event::AprReceived);
            }
            Err(r) => trace_refused(&id, Input::RecvApr, r),
        }
    }
    drop(g);
    deliver_or_put(&id, deliver);
}
