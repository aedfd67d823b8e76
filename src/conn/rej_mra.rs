// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REJ and MRA, both ways: `ib_send_cm_rej()`, `ib_send_cm_mra()`, `cm_rej_handler()` (with
//! `cm_acquire_rejected_id()`) and `cm_mra_handler()` (with `cm_acquire_mraed_id()`).

use super::{
    begin_call, cancel_tracked, deliver_or_put, end_conn_ah, leave, lock_for_event, queue_event,
    recv_event, send_msg, trace_refused, REJ_TIMEOUT,
};
use crate::{
    cm_id::{CmDevice, CmId, StoredPd},
    comm_id,
    logic::{
        input,
        state::{self, Input, MsgKind, Out, Refusal},
        timeout,
        wire::{
            conn::{Mra, Rej, MRA_PRIVATE_DATA, REJ_ARI},
            field::Bytes,
            AttrId, CmMessage,
        },
    },
    recv_wc::RecvWc,
    remote::{ReqKey, Unlinked},
    trace, tunables,
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
    let mut unlinked = Unlinked::default();
    let (mut g, r) = begin_call(id, Input::SendRej, |s, _| {
        // cm.c traces a REJ on entry to `cm_send_rej_locked()`, before it looks at the state.
        trace::send_rej(id, reason);
        input::send_rej(s)
    })?;
    leave(id, &mut g, r.leave, &mut unlinked);
    // The state change stands if the REJ cannot be sent.
    let sent = send_msg(id, &mut g, r.rej, &mut msg, 0, r.next);
    id.set_state(r.next.raw());
    end_conn_ah(id, &mut g);
    drop(g);
    unlinked.free();
    sent
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
    let keep = StoredPd::copy(pd)?;
    let (mut g, m) = begin_call(id, Input::SendMra { delay }, input::send_mra)?;
    if let Some(msg) = msg.as_mut() {
        send_msg(id, &mut g, Out::Mra(m.kind), msg, 0, m.next)?;
    }
    id.set_state(m.next.raw());
    id.set_lap(m.lap);
    g.conn.service_timeout = service_timeout;
    let old = core::mem::replace(&mut g.stored_pd, keep);
    drop(g);
    drop(old);
    Ok(())
}

/// A REJ (`cm_rej_handler`).
pub(crate) fn on_rej(wc: &RecvWc, rej: &Rej<'_>) {
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
    let mut slot = None;
    let Some(mut ev) = recv_event(&id, wc, 84, &mut slot) else {
        return;
    };
    let ari = ev.payload_ptr(12);
    let p = ev.rej_rcvd();
    p.reason = rej.reason.into();
    p.ari = ari;
    // Clamped to the ARI field's 72 bytes (cm.c passes the 7-bit length unclamped).
    p.ari_length = rej.ari_length.min(72);
    let stale = rej.reason == super::REJ_STALE_CONN;
    let mut unlinked = Unlinked::default();
    let (mut g, ev) = lock_for_event(&id, ev);
    let mut deliver = None;
    if !g.destroyed {
        match input::rej_received(id.cm_state(), id.lap(), stale) {
            Ok(r) => {
                if r.cancel {
                    cancel_tracked(&id, &mut g);
                }
                leave(&id, &mut g, r.leave, &mut unlinked);
                id.set_state(r.next().raw());
                end_conn_ah(&id, &mut g);
                deliver = queue_event(&id, &mut g, ev, state::Event::RejReceived);
            }
            Err(r) => trace_refused(&id, Input::RecvRej { stale }, r),
        }
    }
    drop(g);
    unlinked.free();
    deliver_or_put(&id, deliver);
}

/// An MRA (`cm_mra_handler`).
pub(crate) fn on_mra(dev: &CmDevice, port_num: u32, wc: &RecvWc, mra: &Mra<'_>) {
    let Some(kind) = MsgKind::from_wire(mra.message_mraed) else {
        return;
    };
    let id = match kind {
        MsgKind::Req => comm_id::acquire(mra.remote_comm_id, 0),
        _ => comm_id::acquire(mra.remote_comm_id, mra.local_comm_id),
    };
    let Some(id) = id else { return };
    let t = mra.service_timeout;
    let mut slot = None;
    let Some(mut ev) = recv_event(&id, wc, 10, &mut slot) else {
        return;
    };
    ev.mra_rcvd().service_timeout = t;
    let (mut g, ev) = lock_for_event(&id, ev);
    let mut deliver = None;
    if !g.destroyed {
        match input::mra_received(id.cm_state(), id.lap(), kind) {
            Ok(m) => {
                // The tracked MAD waits longer (for the wait in progress only, under the
                // `mra_wait_once` policy); one already gone changes nothing.
                let av_timeout = g.av.as_ref().map_or(0, |av| av.timeout);
                let own = tunables::retry_policy()
                    .mra_once
                    .then_some(g.conn.timeout_ms);
                if g.modify_tracked(timeout::mra_wait_ms(t, av_timeout), own)
                    .is_ok()
                {
                    g.retag_tracked(m.next);
                    id.set_state(m.next.raw());
                    id.set_lap(m.lap);
                    deliver = queue_event(&id, &mut g, ev, state::Event::MraReceived);
                }
            }
            Err(r) => {
                if r == Refusal::Duplicate {
                    crate::recv::count_duplicate(dev, port_num, AttrId::Mra);
                }
                trace_refused(&id, Input::RecvMra { mraed: kind }, r);
            }
        }
    }
    drop(g);
    deliver_or_put(&id, deliver);
}
