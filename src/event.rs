// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Events of one id, delivered one at a time, in arrival order, in process context.
//!
//! Stands for `struct cm_work`, `cm_queue_work_unlock()`, `cm_process_work()` and
//! `cm_dequeue_work()` in cm.c. An [`Event`] owns a copy of the MAD it reports, so the
//! pointers in its `struct ib_cm_event` (private data, ARI, paths) stay valid while it waits
//! and while the handler runs. It is allocated before the id's lock is taken; queueing it only
//! links it in. The thread that finds the id idle becomes its deliverer (see
//! `CmId::deliver`), calls the handler with no lock held and drains what others queued
//! meanwhile; everyone else only queues. cm.c does the same with `work_count`.

use crate::{
    bindings,
    logic::wire::{MAD_HDR_LEN, MAD_LEN},
};
use kernel::{
    alloc::{flags::__GFP_ZERO, KBox},
    ffi,
    prelude::*,
};

/// One event for a handler.
pub(crate) struct Event {
    next: Option<KBox<Event>>,
    /// The event as the handler sees it.
    pub(crate) ev: bindings::ib_cm_event,
    /// REQ paths (`primary_path` / `alternate_path` point here).
    pub(crate) paths: [bindings::sa_path_rec; 2],
    mad: [u8; MAD_LEN],
}

// SAFETY: The raw pointers inside point into the event itself or to objects (sgid attributes,
// listener ids) that the sender keeps alive until the event is dropped.
unsafe impl Send for Event {}

impl Event {
    /// A zeroed event of type `kind`, carrying a copy of `mad` (may be empty).
    pub(crate) fn new(kind: bindings::ib_cm_event_type, mad: &[u8]) -> Result<KBox<Event>> {
        let mut e = Self::zeroed(GFP_KERNEL)?;
        let n = mad.len().min(MAD_LEN);
        e.mad[..n].copy_from_slice(&mad[..n]);
        e.ev.event = kind;
        Ok(e)
    }

    /// An empty event allocated without sleeping (`GFP_ATOMIC`), for a timer or completion
    /// whose preallocation failed.
    pub(crate) fn new_atomic() -> Result<KBox<Event>> {
        Self::zeroed(GFP_ATOMIC)
    }

    /// An all-zero event, zeroed by the allocator in place (no copy of the ~900-byte object
    /// through the stack).
    fn zeroed(flags: kernel::alloc::Flags) -> Result<KBox<Event>> {
        let e = KBox::<Event>::new_uninit(flags | __GFP_ZERO)?;
        // SAFETY: The memory is zeroed, and all-zero is a valid `Event`: `next` is `None` (a
        // box is a non-null pointer, so `None` is the null niche), `ev` and `paths` are plain C
        // data whose pointers may be NULL, and `mad` is bytes.
        Ok(unsafe { e.assume_init() })
    }

    /// A pointer to payload offset `offset` of the copied MAD.
    pub(crate) fn payload_ptr(&mut self, offset: usize) -> *mut ffi::c_void {
        match self.mad.get_mut(MAD_HDR_LEN + offset..) {
            Some(rest) if !rest.is_empty() => rest.as_mut_ptr().cast(),
            _ => core::ptr::null_mut(),
        }
    }

    /// Points `private_data` at payload offset `offset`.
    pub(crate) fn set_private_data(&mut self, offset: usize) {
        self.ev.private_data = self.payload_ptr(offset);
    }
}

/// The events queued on an id while its deliverer runs a handler.
#[derive(Default)]
pub(crate) struct EventQueue {
    head: Option<KBox<Event>>,
}

impl EventQueue {
    /// Appends `e` (the queue is short: a handful of transitions at most).
    pub(crate) fn push(&mut self, e: KBox<Event>) {
        let mut slot = &mut self.head;
        while let Some(node) = slot {
            slot = &mut node.next;
        }
        *slot = Some(e);
    }

    /// Takes the oldest event.
    pub(crate) fn pop(&mut self) -> Option<KBox<Event>> {
        let mut e = self.head.take()?;
        self.head = e.next.take();
        Some(e)
    }

    /// Takes everything (to be dropped outside the lock).
    pub(crate) fn take(&mut self) -> EventQueue {
        EventQueue {
            head: self.head.take(),
        }
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        // Iteratively, so a long queue cannot overflow the stack.
        while self.pop().is_some() {}
    }
}
