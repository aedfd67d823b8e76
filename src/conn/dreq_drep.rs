// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! DREQ and DREP, both ways, and the end of timewait: `ib_send_cm_dreq()`,
//! `ib_send_cm_drep()`, `cm_dreq_handler()`, `cm_issue_drep()`, `cm_drep_handler()` and
//! `cm_timewait_handler()`.

use super::{
    answer, begin_call, cancel_tracked, deliver_or_put, end_conn_ah, enter_timewait,
    lock_for_event, queue_event, recv_event, send_answer, send_msg, trace_refused, Recv,
};
use crate::{
    cm_id::{CmId, StoredPd},
    comm_id,
    event::Event,
    logic::{
        input::{self, DreqReceived},
        state::{self, Input, Out, Refusal, State},
        wire::{
            conn::{CommIdsAndData, CommIdsView, Dreq, DREP_PRIVATE_DATA, DREQ_PRIVATE_DATA},
            field::Bytes,
            AttrId, CmMessage, RecvHdr,
        },
    },
    recv_wc::RecvWc,
    remote::Unlinked,
    trace::{self, Local},
};
use kernel::{prelude::*, sync::Arc};

/// `ib_send_cm_dreq()`: `-EINVAL` unless ESTABLISHED (rdma_cm relies on it in DREQ_RCVD to
/// fall back to a DREP); a DREQ that cannot be posted enters timewait
/// (`cm_send_dreq_locked`).
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
    let mut unlinked = Unlinked::default();
    let (mut g, d) = begin_call(id, Input::SendDreq, input::send_dreq)?;
    if d.cancel {
        cancel_tracked(id, &mut g);
    }
    let sent = send_msg(id, &mut g, Out::Dreq, &mut msg, 0, State::DreqSent);
    match sent {
        Ok(()) => id.set_state(State::DreqSent.raw()),
        Err(_) => enter_timewait(id, &mut g, true, &mut unlinked),
    }
    drop(g);
    unlinked.free();
    sent
}

/// `ib_send_cm_drep()`: enters timewait, then sends (the state change stands if the send
/// fails).
pub(crate) fn send_drep(id: &Arc<CmId>, pd: &[u8]) -> Result {
    if pd.len() > DREP_PRIVATE_DATA {
        return Err(EINVAL);
    }
    let keep = StoredPd::copy(pd)?;
    let mut msg = CmMessage::Drep(CommIdsAndData {
        local_comm_id: 0,
        remote_comm_id: 0,
        private_data: Bytes::new(pd),
    });
    let mut unlinked = Unlinked::default();
    let (mut g, ()) = begin_call(id, Input::SendDrep, |s, _| input::send_drep(s))?;
    // The DREP goes out, and is traced, from TIMEWAIT.
    enter_timewait(id, &mut g, true, &mut unlinked);
    // cm.c keeps a DREP's private data (for a retransmitted DREQ) before sending it.
    let old = core::mem::replace(&mut g.stored_pd, keep);
    let sent = send_msg(id, &mut g, Out::Drep, &mut msg, 0, State::Timewait);
    drop(g);
    drop(old);
    unlinked.free();
    sent
}

/// A DREQ (`cm_dreq_handler`). A DREQ for no id is answered with a DREP and counted as a
/// duplicate (`cm_issue_drep`); one whose QPN is not the id's local QPN is dropped.
pub(crate) fn on_dreq(
    dev: &crate::cm_id::CmDevice,
    port_num: u32,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    dreq: CommIdsView<'_>,
) {
    let Some(id) = comm_id::acquire(dreq.remote_comm_id(), dreq.local_comm_id()) else {
        crate::recv::count_duplicate(dev, port_num, AttrId::Dreq);
        let drep = CommIdsAndData {
            local_comm_id: dreq.remote_comm_id(),
            remote_comm_id: dreq.local_comm_id(),
            private_data: Bytes::EMPTY,
        };
        crate::recv::respond(dev, port_num, wc, hdr.tid(), &CmMessage::Drep(drep));
        let (l, r) = (dreq.local_comm_id(), dreq.remote_comm_id());
        trace::local(Local::IssueDrep, l, r);
        trace::local(Local::NoPrivErr, l, r);
        return;
    };
    let mut slot = None;
    let Some(ev) = recv_event(&id, wc, 12, &mut slot) else {
        return;
    };
    let recv = Recv::new(dev, port_num, AttrId::Dreq, hdr, wc);
    let (mut g, ev) = lock_for_event(&id, ev);
    let (mut deliver, mut resend) = (None, None);
    if !g.destroyed && g.conn.local_qpn == dreq.dreq_remote_qpn() {
        match input::dreq_received(id.cm_state(), id.lap()) {
            Ok(DreqReceived::Accept { cancel }) => {
                if cancel {
                    cancel_tracked(&id, &mut g);
                }
                g.conn.tid = recv.tid;
                id.set_state(State::DreqRcvd.raw());
                deliver = queue_event(&id, &mut g, ev, state::Event::DreqReceived);
            }
            Ok(DreqReceived::Resend) => {
                crate::recv::count_duplicate(dev, port_num, AttrId::Dreq);
                resend = answer(&id, &g, Out::ResendDrep);
            }
            Err(r) => {
                if r == Refusal::Duplicate {
                    crate::recv::count_duplicate(dev, port_num, AttrId::Dreq);
                }
                trace_refused(&id, Input::RecvDreq, r);
            }
        }
    }
    drop(g);
    send_answer(&recv, resend);
    deliver_or_put(&id, deliver);
}

/// A DREP (`cm_drep_handler`): timewait, then the DREQ's retransmissions end.
pub(crate) fn on_drep(wc: &RecvWc, drep: CommIdsView<'_>) {
    let Some(id) = comm_id::acquire(drep.remote_comm_id(), drep.local_comm_id()) else {
        return;
    };
    let mut slot = None;
    let Some(ev) = recv_event(&id, wc, 8, &mut slot) else {
        return;
    };
    let mut unlinked = Unlinked::default();
    let (mut g, ev) = lock_for_event(&id, ev);
    let mut deliver = None;
    if !g.destroyed {
        match input::drep_received(id.cm_state()) {
            Ok(()) => {
                enter_timewait(&id, &mut g, true, &mut unlinked);
                cancel_tracked(&id, &mut g);
                deliver = queue_event(&id, &mut g, ev, state::Event::DrepReceived);
            }
            Err(r) => trace_refused(&id, Input::RecvDrep, r),
        }
    }
    drop(g);
    unlinked.free();
    deliver_or_put(&id, deliver);
}

/// The id's timewait is over (`cm_timewait_handler`; the caller holds a use): TIMEWAIT ->
/// IDLE, which ends its connection handle; TIMEWAIT_EXIT.
pub(crate) fn timewait_expired(id: &Arc<CmId>) {
    let ev = Event::own();
    let mut g = id.inner.lock();
    let mut deliver = None;
    if !g.destroyed && input::timewait_expired(id.cm_state()).is_ok() {
        id.set_state(State::Idle.raw());
        end_conn_ah(id, &mut g);
        deliver = queue_event(id, &mut g, ev, state::Event::TimewaitExit);
    }
    drop(g);
    deliver_or_put(id, deliver);
}
