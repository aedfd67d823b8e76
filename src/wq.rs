// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The CM workqueue (cm.c's `cm.wq`): created at module init, destroyed at module exit after
//! every device is gone. Receive work, the timewait timers, the reply-cache sweeps and the
//! USER_ESTABLISHED work run on it.

use crate::bindings;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::types::Opaque;

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

/// A delayed work item on the CM workqueue, embedded in a device (its timewait timer, its
/// reply-cache sweep, its flow-control kick); the C glue gave it its function when it was
/// initialised, and the function finds the device with [`crate::device::DeviceOf::from_work`].
///
/// # Invariants
///
/// Initialised (by [`DelayedWork::new`]) before any method runs. Its owner cancels or
/// flushes it, and stops queueing it, before the memory goes (device removal); so a queued
/// or running work never outlives it.
#[repr(transparent)]
#[pin_data]
pub(crate) struct DelayedWork {
    #[pin]
    work: Opaque<bindings::delayed_work>,
}

impl DelayedWork {
    /// Initialises the work with `init`, one of the glue's `ibcm_glue_init_*_work`, which
    /// sets the function the work runs.
    pub(crate) fn new(
        init: unsafe extern "C" fn(*mut bindings::delayed_work),
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            work <- Opaque::ffi_init(move |dw: *mut bindings::delayed_work| {
                // SAFETY: `dw` is this work's memory, and `init` one of the glue's
                // initialisers; nothing queues the work before it is initialised.
                unsafe { init(dw) }
            }),
        })
    }

    /// Queues the work in `delay` jiffies; a no-op if it is pending already (at its own time)
    /// or the workqueue is gone. May be called in atomic context.
    pub(crate) fn queue(&self, delay: usize) {
        let wq = wq();
        if !wq.is_null() {
            // SAFETY: Initialised (type invariant); `wq` lives until module exit, after every
            // device is removed.
            unsafe { bindings::ibcm_glue_queue_delayed_work_jiffies(wq, self.work.get(), delay) };
        }
    }

    /// Queues the work in `delay` jiffies, moving it if it is pending (`mod_delayed_work`).
    /// May be called under a spinlock.
    pub(crate) fn reschedule(&self, delay: usize) {
        let wq = wq();
        if !wq.is_null() {
            // SAFETY: As in `queue`.
            unsafe { bindings::ibcm_glue_mod_delayed_work(wq, self.work.get(), delay) };
        }
    }

    /// Waits for a pending or running work to finish (it runs at once if pending). Sleeps.
    pub(crate) fn flush(&self) {
        // SAFETY: Initialised (type invariant).
        unsafe { bindings::ibcm_glue_flush_delayed_work(self.work.get()) };
    }

    /// Cancels the work and waits for a run in progress. Sleeps.
    pub(crate) fn cancel_sync(&self) {
        // SAFETY: Initialised (type invariant).
        unsafe { bindings::ibcm_glue_cancel_delayed_work_sync(self.work.get()) };
    }
}
