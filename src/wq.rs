// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The CM workqueue (cm.c's `cm.wq`): created at module init, destroyed at module exit after
//! every device is gone. Receive work, the timewait timers, the reply-cache sweeps and the
//! USER_ESTABLISHED work run on it.

use crate::bindings;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;

/// The CM workqueue (`cm.wq`), created at module init.
static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// The CM workqueue, NULL before init and after exit.
pub(crate) fn wq() -> *mut bindings::workqueue_struct {
    WQ.load(Ordering::Acquire)
}

/// Creates the CM workqueue.
pub(crate) fn init() -> Result {
    // SAFETY: Plain allocation of a workqueue.
    let wq = unsafe { bindings::ibcm_glue_alloc_wq() };
    if wq.is_null() {
        return Err(ENOMEM);
    }
    WQ.store(wq, Ordering::Release);
    Ok(())
}

/// Destroys the CM workqueue (after the client is unregistered: no work can be queued).
pub(crate) fn destroy() {
    let wq = WQ.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !wq.is_null() {
        // SAFETY: Created by `init`; nothing queues on it any more.
        unsafe { bindings::destroy_workqueue(wq) };
    }
}

/// Waits for every queued receive work item to finish.
pub(crate) fn flush() {
    let wq = WQ.load(Ordering::Acquire);
    if !wq.is_null() {
        // SAFETY: `wq` is live until `destroy`, which runs after every device is removed.
        unsafe { bindings::ibcm_glue_flush_wq(wq) };
    }
}

/// The CM workqueue as the kernel crate's `Queue`, `None` before init and after exit.
pub(crate) fn queue() -> Option<&'static kernel::workqueue::Queue> {
    let wq = wq();
    if wq.is_null() {
        return None;
    }
    // SAFETY: The CM workqueue lives until module exit (`destroy`), after every device is
    // gone and nothing queues on it any more.
    Some(unsafe { kernel::workqueue::Queue::from_raw(wq) })
}
