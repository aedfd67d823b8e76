// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The CM workqueue (cm.c's `cm.wq`): created at module init, destroyed at module exit after
//! every device is gone. Receive work, the timewait timers, the reply-cache sweeps and the
//! USER_ESTABLISHED work run on it.

use crate::bindings;
use crate::lock::{new_spinlock_irq, SpinLockIrq};
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

/// Which of a device's delayed works (and so which function it runs, `ibcm_rs_*` through the
/// glue).
#[derive(Clone, Copy)]
pub(crate) enum DevWork {
    /// `timewait`: ends due timewaits (`ibcm_rs_timewait`).
    Timewait,
    /// `sweep`: evicts expired reply handles (`ibcm_rs_reply_sweep`).
    Sweep,
    /// `flow_kick`: lets waiting MADs out (`ibcm_rs_flow_kick`).
    FlowKick,
}

/// A delayed work item on the CM workqueue, embedded in a device (its timewait timer, its
/// reply-cache sweep, its flow-control kick); the function it runs finds the device with
/// [`crate::device::DeviceOf::from_work`].
///
/// # Invariants
///
/// `work` is initialised (by [`DelayedWork::new`]) before any method runs. It is queued only
/// under `retired`'s lock with `retired` false; [`DelayedWork::retire`] sets it for good and
/// then cancels the work and waits for a run in progress, so after `retire` the work is
/// neither pending nor running and never will be. Its owner retires it before the memory
/// goes (device removal does, for the three works of a device). `repr(C)` with `work` first:
/// the address of the `delayed_work` the work function gets is the `DelayedWork`'s.
#[repr(C)]
#[pin_data]
pub(crate) struct DelayedWork {
    #[pin]
    work: Opaque<bindings::delayed_work>,
    /// Set for good by [`DelayedWork::retire`]; a leaf lock.
    #[pin]
    retired: SpinLockIrq<bool>,
}

impl DelayedWork {
    /// Initialises the work with the function of `which`.
    pub(crate) fn new(which: DevWork) -> impl PinInit<Self> {
        pin_init!(Self {
            work <- Opaque::ffi_init(move |dw: *mut bindings::delayed_work| {
                // SAFETY: `dw` is this work's memory, which each glue initialiser initialises
                // with its function; nothing queues the work before.
                unsafe {
                    match which {
                        DevWork::Timewait => bindings::ibcm_glue_init_delayed_work(dw),
                        DevWork::Sweep => bindings::ibcm_glue_init_sweep_work(dw),
                        DevWork::FlowKick => bindings::ibcm_glue_init_flow_work(dw),
                    }
                }
            }),
            retired <- new_spinlock_irq!(false, "DelayedWork::retired"),
        })
    }

    /// Queues the work in `delay` jiffies (`move`: moving it if it is pending, as
    /// `mod_delayed_work`; else a no-op if it is pending); nothing once retired or without the
    /// workqueue. May be called in atomic context.
    fn enqueue(&self, delay: usize, move_: bool) {
        let retired = self.retired.lock();
        let wq = wq();
        if *retired || wq.is_null() {
            return;
        }
        // SAFETY: Initialised, and not retired with the lock held, so `retire` has not
        // cancelled it yet and will cancel what this queues (type invariants); `wq` lives
        // until module exit, after every device is removed.
        unsafe {
            if move_ {
                bindings::ibcm_glue_mod_delayed_work(wq, self.work.get(), delay);
            } else {
                bindings::ibcm_glue_queue_delayed_work_jiffies(wq, self.work.get(), delay);
            }
        }
    }

    /// Queues the work in `delay` jiffies; a no-op if it is pending already (at its own time),
    /// retired, or the workqueue is gone. May be called in atomic context.
    pub(crate) fn queue(&self, delay: usize) {
        self.enqueue(delay, false);
    }

    /// Queues the work in `delay` jiffies, moving it if it is pending (`mod_delayed_work`);
    /// nothing once retired. May be called under a spinlock.
    pub(crate) fn reschedule(&self, delay: usize) {
        self.enqueue(delay, true);
    }

    /// Waits for a pending or running work to finish (it runs at once if pending). Sleeps.
    pub(crate) fn flush(&self) {
        // SAFETY: Initialised (type invariant); `&self` keeps the memory live.
        unsafe { bindings::ibcm_glue_flush_delayed_work(self.work.get()) };
    }

    /// Stops the work for good: no later queueing takes effect, a pending one is cancelled
    /// and a running one waited for. Sleeps.
    pub(crate) fn retire(&self) {
        *self.retired.lock() = true;
        // SAFETY: Initialised (type invariant); `&self` keeps the memory live.
        unsafe { bindings::ibcm_glue_cancel_delayed_work_sync(self.work.get()) };
    }
}
