// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! What the message handlers in `conn/` share: answers sent back along a received MAD
//! (`cm_issue_rej()`, response MADs), the listener pin, and the hand-over of a new passive id
//! to its listener's handler.
//!
//! The receive callback and the receive work that dispatches each message (`cm_recv_handler()`
//! and `cm_work_handler()` in cm.c) are in `entry/mad_agent.rs`. REQ in is `conn/req.rs`,
//! SIDR_REQ in `conn/sidr.rs`.

use crate::{
    alloc::CmBox,
    cm_id::{CmDevice, CmId},
    event::Event,
    logic::{
        req_event,
        wire::{AttrId, CmMessage, MAD_HDR_LEN},
    },
    port::Counter,
    recv_wc::RecvWc,
    send,
    trace::{self, Local},
};
use kernel::{c_str, sync::Arc};

/// Holds a listener pinned for one handler invocation (`cm_find_listen`'s reference).
pub(crate) struct ListenerPin(pub(crate) Arc<CmId>);

impl Drop for ListenerPin {
    fn drop(&mut self) {
        self.0.listener_put();
    }
}

/// The P_Key of the BTH the MAD arrived with (`cm_get_bth_pkey`), 0 if unknown.
pub(crate) fn bth_pkey(dev: &CmDevice, port_num: u32, wc: &RecvWc) -> u16 {
    dev.cached_pkey(port_num, wc.pkey_index(), wc)
        .unwrap_or_else(|| {
            dev.warn_malformed(
                port_num,
                c_str!("no cached P_Key for the request's pkey index"),
                wc,
            );
            0
        })
}

/// A REJ answering the received `wc` (a REQ, or for a stale connection a REP) without an id
/// (`cm_issue_rej`): its comm IDs are the received message's first two words, swapped.
pub(crate) fn issue_rej(
    dev: &CmDevice,
    port_num: u32,
    wc: &RecvWc,
    tid: u64,
    reason: u16,
    rejected: u8,
) {
    let payload = wc.mad().get(MAD_HDR_LEN..).unwrap_or(&[]);
    let rej = req_event::issued_rej(payload, reason, rejected);
    // The received message's own comm IDs (the REJ's, swapped).
    trace::local(Local::IssueRej, rej.remote_comm_id, rej.local_comm_id);
    respond(dev, port_num, wc, tid, &CmMessage::Rej(rej));
}

/// Sends `msg` back to the sender of the received `wc`, with TID `tid` (cm.c's response
/// MADs: QP1, the completion's address and P_Key index, no id attached).
pub(crate) fn respond(dev: &CmDevice, port_num: u32, wc: &RecvWc, tid: u64, msg: &CmMessage<'_>) {
    let _ = send::send_response(dev, port_num, wc, tid, msg);
}

pub(crate) fn count_duplicate(dev: &CmDevice, port_num: u32, attr: AttrId) {
    if let Some(port) = dev.port(port_num) {
        port.count(Counter::RxDuplicates, attr.counter_index(), 1);
    }
}

/// Gives a new passive id to its handler: the handler's handle is one new reference; the id
/// is published (REQ ids only) with its first event already being delivered, so nothing can
/// overtake it (`cm_finalize_id` + `cm_queue_work_unlock`).
pub(crate) fn hand_over(id: Arc<CmId>, ev: CmBox<Event>, publish: bool) {
    if publish {
        id.publish();
    }
    // The delivery's use: nobody else holds the id yet, so its bias is there.
    id.add_user();
    let _handle = CmId::into_raw(id.clone());
    id.deliver(ev.into());
}
