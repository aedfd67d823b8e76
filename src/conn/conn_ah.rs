// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A connection end's address handle (see `ah::ConnAh`) and what a send
//! completion does to the id (`cm_send_handler()` / `cm_process_send_error()` in cm.c): the
//! id forgets its tracked MAD and gives back its use of the handle, and a tracked MAD that
//! failed delivers the `*_ERROR` event of the state it was sent in. Under a backoff retry
//! policy a tracked MAD whose wait ran out goes out again first, while it has retries left.

use super::{deliver_or_put, leave, queue_event};
use crate::{
    ah::ConnAh,
    bindings,
    cm_id::{CmId, CmIdInner},
    event::Event,
    logic::{
        input,
        state::{self, Out, State},
    },
    remote::Unlinked,
    send::Completed,
    trace,
};
use kernel::sync::Arc;

/// The completion `done` of a send of `id` whose wait for an answer ran out: if it is the
/// tracked MAD and the retry policy left the CM retries of its own, it goes out again
/// (`None`: nothing is left to do). Otherwise as [`untrack`], returning the completion too.
pub(crate) fn repost_or_untrack<'a>(
    id: &Arc<CmId>,
    mut done: Completed<'a>,
) -> Option<(Completed<'a>, Option<State>)> {
    let mut g = id.inner.lock();
    if !g.destroyed && g.take_repost(done.buf(), id.cm_state()) {
        match done.repost(id, &mut g) {
            Ok(()) => return None,
            // The device is going away or the post failed: the timeout stands.
            Err(back) => done = back,
        }
    }
    let sent_in = untrack_locked(id, &mut g, &done);
    drop(g);
    Some((done, sent_in))
}

/// The completion `done` of a send of `id`: the id gives back the send's use of its connection
/// handle and, if it was the tracked MAD, forgets it. Returned is the state the tracked MAD was
/// sent in (`cm_process_send_error`'s check); the caller frees the completion after.
pub(crate) fn untrack(id: &CmId, done: &Completed<'_>) -> Option<State> {
    untrack_locked(id, &mut id.inner.lock(), done)
}

fn untrack_locked(id: &CmId, g: &mut CmIdInner, done: &Completed<'_>) -> Option<State> {
    if done.on_conn_ah && ah_in_flight(g.ah_sends) != 0 {
        g.ah_sends -= 1;
    }
    end_conn_ah(id, g);
    g.untrack(done.buf())
}

/// Cancels the id's tracked MAD (`ib_cancel_mad`): one at the MAD layer completes with a
/// flush, one still waiting in its port's flow-control backlog never reaches the wire and is
/// given back here, as its completion would be (its use of the connection handle returned,
/// the buffer freed; the caller's `id` keeps the id alive past the buffer's reference).
/// Whether the MAD never went out.
pub(crate) fn cancel_tracked(id: &Arc<CmId>, g: &mut CmIdInner) -> bool {
    let Some(waiting) = g.cancel_tracked(&id.dev) else {
        return false;
    };
    let done = Completed::unposted(&id.dev, waiting, bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR);
    if done.on_conn_ah && ah_in_flight(g.ah_sends) != 0 {
        g.ah_sends -= 1;
    }
    end_conn_ah(id, g);
    drop(done);
    true
}

/// The sends in flight on the connection handle, from `CmIdInner::ah_sends`.
pub(super) fn ah_in_flight(ah_sends: u8) -> u8 {
    ah_sends & !ConnAh::RETIRED
}

/// Whether the connection handle is retired, from `CmIdInner::ah_sends`.
pub(super) fn ah_retired(ah_sends: u8) -> bool {
    ah_sends & ConnAh::RETIRED != 0
}

/// Ends the use of the id's connection handle once the id is back in IDLE (or the handle
/// was retired): see [`retire_conn_ah`].
pub(super) fn end_conn_ah(id: &CmId, g: &mut CmIdInner) {
    if !ah_retired(g.ah_sends) && state::keeps_conn_ah(id.cm_state()) {
        return;
    }
    retire_conn_ah(id, g);
}

/// Ends the use of the id's connection handle whatever the state. With no send on it in flight
/// it is destroyed here, under the id lock, as cm.c's `cm_free_priv_msg()` destroys a MAD's
/// handle (`rdma_destroy_ah(ah, 0)` does not sleep), so no one can see the id without a handle
/// while the handle still exists (device removal relies on that). With sends in flight it is
/// retired: no later send takes it (a new connection of the same id gets a handle of its
/// own), and the last completion destroys it.
pub(super) fn retire_conn_ah(id: &CmId, g: &mut CmIdInner) {
    if !g.conn_ah.is_some() {
        return;
    }
    if ah_in_flight(g.ah_sends) == 0 {
        g.ah_sends = 0;
        g.conn_ah.release(id.dev.conn_ahs());
    } else {
        g.ah_sends |= ConnAh::RETIRED;
    }
}

/// What the id's connection handle is, for debugfs: `-` (none), `held` or `retired`.
pub(crate) fn conn_ah_status(id: &CmId) -> &'static str {
    let g = id.inner.lock();
    if !g.conn_ah.is_some() {
        "-"
    } else if ah_retired(g.ah_sends) {
        "retired"
    } else {
        "held"
    }
}

/// Device removal, once no send can start: every id of `dev` gives up its connection handle
/// before the CM's removal returns (after which ib_mad frees the port's protection domain the
/// handles were made on). An idle one (an established id, an id waiting in REP_RCVD for its
/// RTU) is destroyed now; one with sends in flight (a REQ still queued at the agent counts) is retired, and the
/// completions that the agents' unregistration flushes destroy it.
pub(crate) fn retire_conn_ahs(dev: &crate::cm_id::CmDevice) {
    let mut index = 0u32;
    while let Some((id, at)) = crate::comm_id::next_of_device(index, dev) {
        retire_conn_ah(&id, &mut id.inner.lock());
        drop(id);
        match at.checked_add(1) {
            Some(i) => index = i,
            None => break,
        }
    }
}

/// Whether a send `o` of `id` in its current state goes on the id's connection handle (or, the
/// REQ or the REP, creates it): see [`ConnAh`].
pub(super) fn on_conn_ah(id: &CmId, g: &CmIdInner, o: Out) -> bool {
    // The count stays below the retired bit: a connection has a few MADs in flight at most.
    let room = ah_in_flight(g.ah_sends) < ConnAh::RETIRED - 1;
    if g.conn_ah.is_some() {
        !ah_retired(g.ah_sends) && room && state::keeps_conn_ah(id.cm_state())
    } else {
        matches!(o, Out::Req | Out::Rep) && g.ah_sends == 0
    }
}

/// After a send of `id` completed: a tracked MAD that timed out (or failed) delivers the
/// `*_ERROR` event of the state it was sent in (`cm_process_send_error`), unless the id is past
/// its destroy. The buffer held no use of the id (cm.c's `cm_free_msg` drops a reference that
/// `cm_destroy_id` waits for; here destroy waits only for callbacks), so the delivery takes
/// its own.
#[inline]
pub(crate) fn send_done(id: &Arc<CmId>, tracked_in: Option<State>, status: bindings::ib_wc_status) {
    let failed = status != bindings::ib_wc_status_IB_WC_SUCCESS
        && status != bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR;
    if let Some(sent_in) = tracked_in.filter(|_| failed) {
        tracked_failed(id, sent_in, status);
    }
}

/// [`send_done`] of a tracked MAD sent in `sent_in` that failed with `status`: out of line,
/// so that the completion of every MAD that went well does not carry its frame.
#[inline(never)]
fn tracked_failed(id: &Arc<CmId>, sent_in: State, status: bindings::ib_wc_status) {
    if !id.get_user() {
        return;
    }
    let mut ev = Event::own();
    let mut unlinked = Unlinked::default();
    let mut g = id.inner.lock();
    let mut deliver = None;
    if !g.destroyed {
        // cm.c traces a failed tracked MAD whenever the id is still in the state it was sent
        // in, before it looks at what that state does with it.
        if sent_in == id.cm_state() {
            trace::mad_send_err(sent_in.raw(), status);
        }
        if let Ok(f) = input::send_failed(id.cm_state(), sent_in) {
            if let Some(l) = f.leave {
                leave(id, &mut g, l, &mut unlinked);
            }
            id.set_state(f.next.raw());
            end_conn_ah(id, &mut g);
            *ev.send_status() = status;
            deliver = queue_event(id, &mut g, ev, f.event);
        }
    }
    drop(g);
    unlinked.free();
    deliver_or_put(id, deliver);
}
