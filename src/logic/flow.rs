// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Flow control of the CM's own sends, decided purely (the kernel side is `backlog.rs` and
//! `send.rs`).
//!
//! 6.12's MAD layer has none: every REQ the CM is asked for goes on the wire at once, and in
//! a storm the peer's MAD receive queue overflows, its answers queue behind other REQs, and
//! the retries pile on. Per port, the CM keeps at most a limit of the messages that open a
//! handshake or a teardown outstanding at the MAD layer (until their answer cancels them or
//! their retries run out) and queues the rest in order; answers never wait (6.17's MAD flow
//! control and its follow-up "IB/cm: Use separate agent w/o flow control for REP").

use super::wire::AttrId;

/// What 6.12's MAD layer posts on QP1's receive queue per port when nobody changed ib_mad's
/// `recv_queue_size` (`IB_MAD_QP_RECV_SIZE`), for a device that does not say.
pub(crate) const DEFAULT_RECV_QUEUE: u32 = 512;

/// Whether a message of `attr` takes a flow-control slot: the requests that start a handshake
/// or a teardown and wait for an answer (REQ, DREQ, LAP, SIDR_REQ). The answers that complete
/// one (REP, RTU, MRA, REJ, DREP, APR, SIDR_REP) never wait behind them.
pub(crate) fn controlled(attr: AttrId) -> bool {
    matches!(
        attr,
        AttrId::Req | AttrId::Dreq | AttrId::Lap | AttrId::SidrReq
    )
}

/// The default limit of a port whose MAD QP reports a receive queue of `recv_queue` work
/// requests (0: unknown): a quarter of the queue ib_mad posts, as 6.17 derives its own, and at
/// least one. Drivers report the capacity they rounded the MAD layer's request up to (rxe: to
/// one below a power of two, 1023 for ib_core's default `recv_queue_size` of 512; mlx5: to a
/// power of two), so the power of two at or below the capacity stands for the request.
pub(crate) fn derived_limit(recv_queue: u32) -> u32 {
    let q = if recv_queue == 0 {
        DEFAULT_RECV_QUEUE
    } else {
        // The highest power of two at or below it.
        1 << (u32::BITS - 1 - recv_queue.leading_zeros())
    };
    (q / 4).max(1)
}

/// The limit in force: the administrator's `flow_control_limit` (`-1`: the port's derived
/// limit; `0`: none, every message goes out at once, as 6.12's CM; `n`: at most `n`).
pub(crate) fn limit(param: i32, derived: u32) -> Option<u32> {
    match param {
        0 => None,
        n if n < 0 => Some(derived),
        n => u32::try_from(n).ok(),
    }
}

/// What happens to a controlled message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Admit {
    /// It goes out now and takes a slot.
    Post,
    /// It waits in the backlog for a slot.
    Queue,
    /// The backlog is full: the call fails.
    Refuse,
}

/// The decision for one more controlled message, with `outstanding` messages holding slots,
/// `queued` waiting, under `limit` (`None`: no flow control) and a backlog of at most
/// `backlog_max`. Order is kept: nothing overtakes a message already waiting.
pub(crate) fn admit(outstanding: u32, queued: u32, limit: Option<u32>, backlog_max: u32) -> Admit {
    match limit {
        None if queued == 0 => Admit::Post,
        Some(l) if queued == 0 && outstanding < l => Admit::Post,
        _ if queued < backlog_max => Admit::Queue,
        _ => Admit::Refuse,
    }
}

/// Whether the head of the backlog may go out now.
pub(crate) fn may_dequeue(outstanding: u32, limit: Option<u32>) -> bool {
    limit.map_or(true, |l| outstanding < l)
}

/// Whether a received message of `attr` is queued for the CM's work, with `queued` received
/// messages of its port waiting or being handled there, under `limit` (0: none, as cm.c,
/// which queues every one). The CM workqueue runs one item per CPU at a time; a peer (or a
/// storm of peers) that sends faster than it drains must not make the CM allocate without
/// bound. Up to
/// `limit` everything is queued; beyond it the requests that would make new state (REQ,
/// SIDR_REQ) are dropped, and their senders retry; beyond twice the limit every message is
/// dropped, as a MAD lost on the wire (most are retried by the side that waits for them or
/// answer one that is; a REJ and a destroy's DREQ are sent once), so the queue of a port never
/// holds more than twice the limit.
pub(crate) fn admit_recv(queued: u32, limit: u32, attr: AttrId) -> bool {
    if limit == 0 {
        return true;
    }
    let bound = if matches!(attr, AttrId::Req | AttrId::SidrReq) {
        limit
    } else {
        limit.saturating_mul(2)
    };
    queued < bound
}
