// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The timewait queue of a device, and the USER_ESTABLISHED work item of `ib_cm_notify()`
//! (the work functions that end a timewait and deliver USER_ESTABLISHED are in
//! `entry/work.rs`).
//!
//! Stands for `cm_create_timewait_info()`, the timer half of `cm_enter_timewait()`,
//! `cm_timewait_handler()`, `cm_establish()` and `cm_establish_handler()` in cm.c. cm.c
//! allocates a `cm_timewait_info` with its own `delayed_work` per connection; here an id in
//! timewait is linked into its device's `TimewaitQueue` (`tw_queue.rs`) (24 bytes in the id: two links and a
//! deadline, kept in deadline order by `logic::deadline_list`), and one `delayed_work` per
//! device, armed for the earliest deadline, ends every due timewait. A queued id holds one
//! reference. Destroy takes the id off the queue: a timewait whose id is gone has nothing left
//! to do (cm.c lets it fire and finds no id). A device going down queues no id, as in cm.c, and
//! removal ends the timewaits still queued at once (cm.c's already queued timers fire later).

use crate::{
    cm_id::{CmDevice, CmId, CmIdInner},
    device::jiffies,
    logic::timeout,
    wq,
};
use kernel::{
    new_work,
    prelude::*,
    sync::Arc,
    workqueue::{impl_has_work, Work},
};

/// Queues the id for `conv(av.timeout)` ms of timewait. Called with the id lock held (`g`); takes
/// the device lock, under which device removal's `going_down` and its final run of the queue
/// are ordered with the arming (cm.c queues under `cm.lock`).
pub(crate) fn arm(id: &Arc<CmId>, g: &mut CmIdInner) {
    if g.timewait_armed {
        return;
    }
    let mut dev = id.dev.inner.lock();
    if dev.going_down {
        return;
    }
    let wq = wq::wq();
    if wq.is_null() {
        return;
    }
    let class = g.av.as_ref().map_or(0, |av| av.timeout);
    let ms = timeout::conv_ms(class);
    let delay = kernel::time::msecs_to_jiffies(ms);
    let first = dev
        .timewait
        .insert(id.clone(), class, jiffies().wrapping_add(delay));
    g.timewait_armed = true;
    g.timewait_class = class;
    if first {
        // The device's timer was later (or idle): move it up. Removal runs it a last time
        // and nothing queues it after `going_down`.
        id.dev.timewait.reschedule(delay);
    }
}

/// Takes an id being destroyed out of the device's timewait list of `class`, once destroy
/// has cleared its `timewait_armed` (under the id lock, in `conn::destroy_actions`). An expiry
/// already running for it finds `timewait_armed` cleared and does nothing; one that got past
/// that check either fails to take a use (destroy dropped the bias) and does nothing, or holds
/// one, which destroy waits for: no event reaches a destroyed id.
pub(crate) fn leave(id: &CmId, class: u8) {
    let queued = id.dev.inner.lock().timewait.remove(id, class);
    // The queue's reference, dropped outside the lock.
    drop(queued);
}

/// Removal: ends every timewait still queued on a device marked `going_down` and waits until
/// that is done; nothing is queued on it afterwards.
pub(crate) fn end_all(dev: &CmDevice) {
    let wq = wq::wq();
    if wq.is_null() {
        return;
    }
    // Flushing may sleep: removal runs in process context. The last run queues nothing
    // (`going_down`); retiring makes that final.
    dev.timewait.reschedule(0);
    dev.timewait.flush();
    dev.timewait.retire();
    if !dev.inner.lock().timewait.is_empty() {
        pr_warn!("timewait queue not empty after device removal ended it\n");
    }
}

/// The USER_ESTABLISHED work queued by `ib_cm_notify(IB_EVENT_COMM_EST)`. It holds only
/// memory (an `Arc`), not a use: a destroy that runs first makes it find nothing, as cm.c's
/// lookup by comm ID does.
#[pin_data]
pub(crate) struct EstablishWork {
    #[pin]
    work: Work<EstablishWork>,
    /// The id to deliver USER_ESTABLISHED to.
    pub(crate) id: Arc<CmId>,
}

impl_has_work! {
    impl HasWork<Self> for EstablishWork { self.work }
}

impl EstablishWork {
    /// Allocates the work (`GFP_ATOMIC`: `ib_cm_notify` may run in hard-IRQ context).
    pub(crate) fn new(id: &Arc<CmId>) -> Result<Pin<KBox<EstablishWork>>> {
        KBox::pin_init(
            pin_init!(EstablishWork { work <- new_work!("EstablishWork::work"), id: id.clone() }),
            GFP_ATOMIC,
        )
    }
}

/// The next id of `dev` whose timewait is due (all of them once the device is going down),
/// taken off the queue; or, when none is, `None` after arming the device's timewait work
/// for the next deadline.
pub(crate) fn next_due(dev: &CmDevice) -> Option<Arc<CmId>> {
    let mut inner = dev.inner.lock();
    let now = jiffies();
    let all = inner.going_down;
    if let Some(id) = inner.timewait.pop_due(now, all) {
        return Some(id);
    }
    match inner.timewait.next_delay(now) {
        // A sooner arming by `arm` stays: queueing a pending work is a no-op.
        Some(delay) if !all => dev.timewait.queue(delay),
        _ => {}
    }
    None
}

/// Claims the expiry of an id [`next_due`] returned: false if destroy got there first.
pub(crate) fn claim_expiry(id: &CmId) -> bool {
    let mut g = id.inner.lock();
    if !g.timewait_armed {
        return false;
    }
    g.timewait_armed = false;
    true
}
