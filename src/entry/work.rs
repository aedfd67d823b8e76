// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Work functions and callbacks of the CM's deferred work: the timewait timer of a device
//! (`cm_timewait_handler`), the USER_ESTABLISHED work (`cm_establish_handler`) and the RCU
//! callback that gives back the comm table's reference of an erased id.

use crate::{
    bindings,
    cm_id::{CmDevice, CmId},
    conn,
    timewait::{self, EstablishWork},
    wq::DevWork,
};
use kernel::{prelude::*, sync::Arc, workqueue::WorkItem};

/// The device's timewait timer fired (`cm_timewait_handler`, for every due id): TIMEWAIT ->
/// IDLE and TIMEWAIT_EXIT, then the timer is armed for the next deadline.
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for the `timewait` work of a live [`CmDevice`]:
/// removal runs it a last time before it drops the device's last reference from ib_core.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_timewait(dw: *mut bindings::delayed_work) {
    // SAFETY: `dw` is the `timewait` field of a live `CmDevice` (caller contract).
    let dev = unsafe { CmDevice::from_work(dw, DevWork::Timewait) };
    while let Some(id) = timewait::next_due(dev) {
        expire(id);
        // A batch of expiries (removal ends them all at once) must not hog the CPU: each one
        // runs a handler.
        // SAFETY: Plain scheduling point; the work runs in process context, no lock held.
        unsafe { bindings::ibcm_glue_cond_resched() };
    }
}

/// Ends one id's timewait, unless destroy took it out first.
pub(crate) fn expire(id: Arc<CmId>) {
    if !timewait::claim_expiry(&id) || !id.get_user() {
        return;
    }
    conn::dreq_drep::timewait_expired(&id);
}

impl WorkItem for EstablishWork {
    type Pointer = Pin<KBox<EstablishWork>>;

    fn run(this: Pin<KBox<EstablishWork>>) {
        let id = this.id.clone();
        drop(this);
        if !id.get_user() {
            return;
        }
        conn::rep_rtu::user_established(&id);
    }
}

/// `call_rcu()` callback: drops the comm table's reference of an erased id.
///
/// # Safety
///
/// Called by RCU with the head passed to `ibcm_glue_call_rcu` by `comm_id::CommId::release`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_rcu_release(head: *mut bindings::callback_head) {
    // SAFETY: The head is embedded in a `CmId` whose table reference it carries (caller).
    drop(unsafe { CmId::from_rcu_head(head) });
}
