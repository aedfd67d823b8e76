// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The timewait timer of an id, and the USER_ESTABLISHED work of `ib_cm_notify()`.
//!
//! Stands for `cm_create_timewait_info()`, the timer half of `cm_enter_timewait()`,
//! `cm_timewait_handler()`, `cm_establish()` and `cm_establish_handler()` in cm.c. The timer is
//! a `delayed_work` embedded in the id (cm.c allocates a `cm_timewait_info` per connection);
//! an armed timer holds one reference to the id. Destroy cancels it synchronously: a timewait
//! whose id is gone has nothing left to do (cm.c lets it fire and finds no id). A device going
//! down arms no timer, as in cm.c.

use crate::{
    bindings,
    cm_id::{CmId, CmIdInner},
    conn,
    event::Event,
    logic::{state::Input, timeout},
    recv,
};
use kernel::{
    new_work,
    prelude::*,
    sync::Arc,
    workqueue::{impl_has_work, Work, WorkItem},
};

/// Arms the timewait timer for `conv(av.timeout)` ms. Called with the id lock held.
pub(crate) fn arm(id: &Arc<CmId>, g: &mut CmIdInner) {
    // Queued under the device lock, so device removal's `going_down` and flush are ordered
    // with it (cm.c queues under `cm.lock`).
    let dev = id.dev.inner.lock();
    if g.timewait_armed || dev.going_down {
        return;
    }
    let ms = timeout::conv_ms(g.av.as_ref().map_or(0, |av| av.timeout));
    let wq = recv::wq();
    if wq.is_null() {
        return;
    }
    let raw = Arc::into_raw(id.clone());
    // SAFETY: `wq` lives until module exit, after every id is destroyed (and destroy cancels
    // the timer); the timer takes over the reference `raw` carries.
    let queued = unsafe { bindings::ibcm_glue_queue_delayed_work(wq, id.timewait.get(), ms) };
    if queued {
        g.timewait_armed = true;
    } else {
        // SAFETY: Not queued: the reference is still ours.
        drop(unsafe { Arc::from_raw(raw) });
    }
}

/// Stops the timer of an id being destroyed; sleeps until a running expiry has finished.
pub(crate) fn cancel(id: &CmId) {
    let armed = core::mem::replace(&mut id.inner.lock().timewait_armed, false);
    if !armed {
        return;
    }
    // SAFETY: The timer was initialised with the id; cancelling may sleep (destroy may).
    if unsafe { bindings::ibcm_glue_cancel_delayed_work_sync(id.timewait.get()) } {
        // SAFETY: It was pending, so its reference was never taken back: take it now.
        drop(unsafe { CmId::from_timewait(id.timewait.get()) });
    }
}

/// The timer fired (`cm_timewait_handler`): TIMEWAIT -> IDLE and TIMEWAIT_EXIT.
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for a timer armed by [`arm`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_timewait(dw: *mut bindings::delayed_work) {
    // SAFETY: The armed timer held this reference (see `arm`).
    let id = unsafe { CmId::from_timewait(dw) };
    {
        let mut g = id.inner.lock();
        if !g.timewait_armed {
            // Destroy got here first and will not cancel: the reference is ours to drop.
            return;
        }
        g.timewait_armed = false;
    }
    if !id.get_user() {
        return;
    }
    conn::input_with_event(&id, Input::TimewaitExpired, Event::new(0, &[]).ok());
}

/// The USER_ESTABLISHED work queued by `ib_cm_notify(IB_EVENT_COMM_EST)`. It holds only
/// memory (an `Arc`), not a use: a destroy that runs first makes it find nothing, as cm.c's
/// lookup by comm ID does.
#[pin_data]
pub(crate) struct EstablishWork {
    #[pin]
    work: Work<EstablishWork>,
    id: Arc<CmId>,
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

impl WorkItem for EstablishWork {
    type Pointer = Pin<KBox<EstablishWork>>;

    fn run(this: Pin<KBox<EstablishWork>>) {
        let id = this.id.clone();
        drop(this);
        if !id.get_user() {
            return;
        }
        conn::input_with_event(&id, Input::UserEstablished, Event::new(0, &[]).ok());
    }
}
