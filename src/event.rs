// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! An id's events and their queue (delivery, one at a time in arrival order, is
//! `conn/deliver.rs`).
//!
//! Stands for the event half of `struct cm_work`, `cm_queue_work_unlock()` and
//! `cm_dequeue_work()` in cm.c. An [`Event`] of a received MAD points into that MAD where the
//! MAD layer put it and holds a reference to it ([`MadRef`]), as cm.c's work item keeps the
//! receive completion until its event is done: a queued event stays valid after the receive
//! work that made it has finished, and no event copies its MAD. An event carries path records
//! only if its message does (REQ: one or two, LAP: one, [`Event::with_paths`]): they follow
//! the event in its allocation. Nothing is allocated for an event under the id's lock: the
//! events of REQ, SIDR_REQ and LAP, and those the CM makes itself, are boxed before it; the
//! other received messages' events are made in place ([`Pending`]) and boxed, before the lock,
//! only if they must wait in the queue; queueing only links them in. A received MAD waits on
//! the CM workqueue in its own small work item (`recv_wc.rs`); the handler that reports it
//! makes the event. The thread that finds the
//! id idle becomes its deliverer (see `CmId::deliver`), calls the handler with no lock held
//! and drains what others queued meanwhile; everyone else only queues. cm.c does the same with
//! `work_count`.

use crate::alloc::CmBox;
use crate::{
    bindings,
    logic::wire::{MAD_HDR_LEN, MAD_LEN},
    recv_wc::{MadRef, RecvWc},
};
use core::{
    mem::{ManuallyDrop, MaybeUninit},
    ptr::NonNull,
};
use kernel::{ffi, prelude::*};

/// Test builds: every event allocation that may fail fails while set (`entry/kunit.rs`).
#[cfg(ibcm_kunit)]
pub(crate) static FAIL_ALLOCS: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// A path record.
type PathRec = bindings::sa_path_rec;

/// One event for a handler.
///
/// # Invariants
///
/// If `mad` is set, the MAD pointers in `ev` point into its MAD (or are NULL); otherwise they
/// are NULL. `paths` points to the event's path records, zeroed, which follow the event in its
/// own allocation and live as long as it (an empty slice, dangling, if it has none).
pub(crate) struct Event {
    /// The next event in its id's queue. Dropped by hand ([`Event`]'s `Drop`): the drop glue
    /// of an owning link is recursive, so the compiler calls it out of line for every event
    /// dropped, about 17 calls per connection that nearly all find no next event.
    next: ManuallyDrop<Option<CmBox<Event>>>,
    /// The event as the handler sees it.
    pub(crate) ev: bindings::ib_cm_event,
    /// The received MAD the event points into.
    mad: Option<MadRef>,
    /// REQ and LAP path records (`primary_path` / `alternate_path` point here).
    paths: NonNull<[PathRec]>,
}

// A `CmBox` takes kmalloc's alignment (`alloc::MIN_ALIGN`), and the path records that follow
// an event need no more than it.
const _: () = assert!(core::mem::align_of::<Event>() <= crate::alloc::MIN_ALIGN);
const _: () = assert!(core::mem::size_of::<Event>() % core::mem::align_of::<PathRec>() == 0);

// What a received MAD's event costs (the test `received_event_sizes` checks the slab classes):
// plain kmalloc-128, REQ or LAP with one path record kmalloc-256, REQ with an alternate path
// kmalloc-512; each less than cm.c's `cm_work` for it (224, 312 and 400 bytes on x86_64).
const _: () = assert!(
    Event::size_with(0) <= 128
        && Event::size_with(1) <= 256
        && Event::size_with(2) <= 512
        && Event::size_with(0) < 224
        && Event::size_with(1) < 312
        && Event::size_with(2) < 400
);

// SAFETY: The raw pointers inside point into the event's own allocation, into the received MAD
// its `MadRef` keeps, or to objects (sgid attributes, listener ids) that the sender keeps alive
// until the event is dropped.
unsafe impl Send for Event {}

/// Mutable accessors of the members of `ib_cm_event.param`, one per member (see `impl Event`).
macro_rules! param {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(&mut self) -> &mut $ty {
            // SAFETY: A member of a union of plain C data, valid for every bit pattern and
            // zeroed with the event (see `impl Event`).
            unsafe { self.ev.param.$name.as_mut() }
        }
    )*};
}

impl Event {
    /// The event of type `kind` about the received MAD `wc`, pointing into it (a MAD shorter
    /// than [`MAD_LEN`] is refused: one that reached a handler is whole, `check_header` checks
    /// its length, so every fixed-size field an event points at lies inside it).
    pub(crate) fn for_wc(kind: bindings::ib_cm_event_type, wc: &RecvWc) -> Result<CmBox<Event>> {
        Self::with_paths(kind, wc, 0)
    }

    /// As [`Event::for_wc`], with `paths` zeroed path records (REQ: one or two, LAP: one).
    pub(crate) fn with_paths(
        kind: bindings::ib_cm_event_type,
        wc: &RecvWc,
        paths: usize,
    ) -> Result<CmBox<Event>> {
        let mad = Self::whole_mad(wc)?;
        let mut e = Self::zeroed(GFP_KERNEL, paths)?;
        // INVARIANT: The MAD pointers are all NULL yet.
        e.mad = Some(mad);
        e.ev.event = kind;
        Ok(e)
    }

    /// As [`Event::for_wc`] with no path records, made in `slot` (the receive work's stack)
    /// instead of an allocation: a [`Pending`] event that is boxed only if it must wait in its
    /// id's queue. `EINVAL` if `slot` is not empty.
    pub(crate) fn pending_for_wc<'a>(
        wc: &RecvWc,
        slot: &'a mut Option<Event>,
    ) -> Result<Pending<'a>> {
        // The slot must be empty (every caller's is): the event is made in it, not made aside
        // and copied in, as `insert` would, which drops the old value between the two and so
        // keeps the compiler from building the new one in place.
        if slot.is_some() {
            return Err(EINVAL);
        }
        let mad = Self::whole_mad(wc)?;
        let e = slot.get_or_insert_with(|| Self::blank(Self::no_paths()));
        // INVARIANT: The MAD pointers are all NULL yet.
        e.mad = Some(mad);
        Ok(Pending::Inline(e))
    }

    /// A reference to the received MAD an event may point into: refused for a MAD shorter
    /// than [`MAD_LEN`] (see [`Event::for_wc`]).
    fn whole_mad(wc: &RecvWc) -> Result<MadRef> {
        if wc.mad().len() != MAD_LEN {
            return Err(EINVAL);
        }
        Ok(wc.mad_ref())
    }

    /// The path records of an event that has none: an empty slice.
    fn no_paths() -> NonNull<[PathRec]> {
        NonNull::slice_from_raw_parts(NonNull::dangling(), 0)
    }

    /// A zeroed event about no MAD.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn empty() -> Result<CmBox<Event>> {
        Self::zeroed(GFP_KERNEL, 0)
    }

    /// An empty event the CM makes itself (REQ_ERROR, REP_ERROR, DREQ_ERROR, SIDR_REQ_ERROR,
    /// TIMEWAIT_EXIT, USER_ESTABLISHED), allocated so that it cannot fail: cm.c delivers these
    /// from memory it already holds, so a failed allocation must not leave the id in a state
    /// no input ends. Sleeps: the send completion, timewait and establish work only.
    pub(crate) fn own() -> CmBox<Event> {
        Self::init(crate::alloc::new_uninit_nofail::<Event>(), Self::no_paths())
    }

    /// The bytes of an event with `paths` path records.
    pub(crate) const fn size_with(paths: usize) -> usize {
        core::mem::size_of::<Event>() + paths * core::mem::size_of::<PathRec>()
    }

    /// An event whose fields are all zero, followed by `paths` zeroed path records.
    fn zeroed(flags: kernel::alloc::Flags, paths: usize) -> Result<CmBox<Event>> {
        #[cfg(ibcm_kunit)]
        if FAIL_ALLOCS.load(core::sync::atomic::Ordering::Relaxed) {
            // The white-box tests fail every allocation that may fail, as failslab would
            // (which leaves `__GFP_NOFAIL` ones alone).
            return Err(ENOMEM);
        }
        if paths > 2 {
            return Err(EINVAL);
        }
        let (e, tail) = crate::alloc::new_uninit_with_tail::<Event>(Self::size_with(paths), flags)?;
        let recs = tail.cast::<PathRec>();
        // SAFETY: `tail` has room for `paths` records, suitably aligned (asserted above).
        // All-zero is a valid path record (plain C data).
        unsafe { core::ptr::write_bytes(recs.as_ptr(), 0, paths) };
        Ok(Self::init(e, NonNull::slice_from_raw_parts(recs, paths)))
    }

    fn init(e: CmBox<MaybeUninit<Event>>, paths: NonNull<[PathRec]>) -> CmBox<Event> {
        e.write(Self::blank(paths))
    }

    /// An event whose fields are all zero, with `paths` as the caller made them.
    fn blank(paths: NonNull<[PathRec]>) -> Event {
        // SAFETY: All-zero is a valid `ib_cm_event` (plain C data whose pointers may be NULL).
        let ev = unsafe { core::mem::zeroed() };
        // INVARIANT: No MAD and NULL MAD pointers; `paths` as the caller made them.
        Event {
            next: ManuallyDrop::new(None),
            ev,
            mad: None,
            paths,
        }
    }

    // The parameters of each event type: the members of `ib_cm_event.param`. Each member is
    // plain C data (integers, raw pointers, C enums as integers), valid for every bit pattern
    // and zeroed with the event, so a mutable view of any member is sound; the CM writes the
    // member of the event's type, the only one its handler reads. One audited accessor
    // (`param!`) serves all of them.
    param!(
        /// The parameters of REQ_RECEIVED.
        req_rcvd: bindings::ib_cm_req_event_param,
        /// The parameters of REP_RECEIVED.
        rep_rcvd: bindings::ib_cm_rep_event_param,
        /// The parameters of REJ_RECEIVED.
        rej_rcvd: bindings::ib_cm_rej_event_param,
        /// The parameters of MRA_RECEIVED.
        mra_rcvd: bindings::ib_cm_mra_event_param,
        /// The parameters of LAP_RECEIVED.
        lap_rcvd: bindings::ib_cm_lap_event_param,
        /// The parameters of APR_RECEIVED.
        apr_rcvd: bindings::ib_cm_apr_event_param,
        /// The parameters of SIDR_REQ_RECEIVED.
        sidr_req_rcvd: bindings::ib_cm_sidr_req_event_param,
        /// The parameters of SIDR_REP_RECEIVED.
        sidr_rep_rcvd: bindings::ib_cm_sidr_rep_event_param,
        /// The parameters of the *_ERROR events.
        send_status: bindings::ib_wc_status,
    );

    /// The event's path records (REQ primary and alternate, LAP alternate): as many as it was
    /// made with.
    pub(crate) fn paths(&mut self) -> &mut [PathRec] {
        // SAFETY: The records of this event, valid and initialised as long as it (type
        // invariant); borrowed through `self`.
        unsafe { self.paths.as_mut() }
    }

    /// A pointer to payload offset `offset` of the MAD (NULL past its end or with no MAD).
    pub(crate) fn payload_ptr(&mut self, offset: usize) -> *mut ffi::c_void {
        let Some(mad) = &self.mad else {
            return core::ptr::null_mut();
        };
        match mad.mad().get(MAD_HDR_LEN + offset..) {
            Some(rest) if !rest.is_empty() => rest.as_ptr().cast_mut().cast(),
            _ => core::ptr::null_mut(),
        }
    }

    /// Points `private_data` at payload offset `offset`.
    pub(crate) fn set_private_data(&mut self, offset: usize) {
        self.ev.private_data = self.payload_ptr(offset);
    }
}

/// An event on its way to its id's handler: where the id has no deliverer, the thread that
/// made it delivers it at once from where it is (a received MAD's event lives in a slot on the
/// receive work's stack: no allocation, as cm.c's event lives in the work item it already
/// has); only an event that must wait in the id's queue is in its own allocation. No event in
/// a slot has path records or points into itself (its pointers go into its received MAD), so
/// moving it into a box keeps it valid.
pub(crate) enum Pending<'a> {
    /// In a slot of the caller's (dropped with the slot).
    Inline(&'a mut Event),
    /// In its own allocation.
    Boxed(CmBox<Event>),
}

impl Pending<'_> {
    /// Whether the event is in its own allocation (so it can be queued).
    pub(crate) fn is_boxed(&self) -> bool {
        matches!(self, Pending::Boxed(_))
    }

    /// The event in its own allocation, moved there if it is not yet, with an allocation that
    /// cannot fail (as [`Event::own`]'s: cm.c's event lives in the work item it already has,
    /// so its queueing cannot fail either). Sleeps: the receive work only, with no lock held.
    /// The slot is left holding an empty event.
    pub(crate) fn boxed_nofail(self) -> CmBox<Event> {
        match self {
            Pending::Boxed(b) => b,
            Pending::Inline(e) => CmBox::write(crate::alloc::new_uninit_nofail(), e.take()),
        }
    }

    /// As [`Pending::boxed_nofail`], without sleeping: the event stays where it is if there
    /// is no memory.
    pub(crate) fn boxed_atomic(self) -> core::result::Result<CmBox<Event>, Self> {
        match self {
            Pending::Boxed(b) => Ok(b),
            Pending::Inline(e) => match CmBox::<Event>::new_uninit(GFP_ATOMIC) {
                Ok(b) => Ok(CmBox::write(b, e.take())),
                Err(_) => Err(Pending::Inline(e)),
            },
        }
    }
}

impl Drop for Event {
    #[inline]
    fn drop(&mut self) {
        if self.next.is_some() {
            // SAFETY: Dropped once, here; the event is not used after its drop.
            unsafe { ManuallyDrop::drop(&mut self.next) };
        }
    }
}

impl Event {
    /// Moves the event out of its slot, leaving an empty one. Only an event without path
    /// records is made in a slot (nothing in it points into itself), so the moved event stays
    /// valid.
    fn take(&mut self) -> Event {
        debug_assert!(self.paths.len() == 0);
        core::mem::replace(self, Self::blank(Self::no_paths()))
    }
}

impl From<CmBox<Event>> for Pending<'_> {
    fn from(b: CmBox<Event>) -> Self {
        Pending::Boxed(b)
    }
}

impl core::ops::Deref for Pending<'_> {
    type Target = Event;

    fn deref(&self) -> &Event {
        match self {
            Pending::Inline(e) => e,
            Pending::Boxed(b) => b,
        }
    }
}

impl core::ops::DerefMut for Pending<'_> {
    fn deref_mut(&mut self) -> &mut Event {
        match self {
            Pending::Inline(e) => e,
            Pending::Boxed(b) => b,
        }
    }
}

/// The events queued on an id while its deliverer runs a handler.
#[derive(Default)]
pub(crate) struct EventQueue {
    head: Option<CmBox<Event>>,
}

impl EventQueue {
    /// Appends `e` (the queue is short: a handful of transitions at most). A queued event may
    /// be delivered and dropped by another thread after the receive work that made it has
    /// finished: its [`MadRef`] keeps the MAD it points into.
    pub(crate) fn push(&mut self, e: CmBox<Event>) {
        let mut slot = &mut self.head;
        while let Some(node) = slot {
            slot = &mut *node.next;
        }
        *slot = Some(e);
    }

    /// Takes the oldest event.
    pub(crate) fn pop(&mut self) -> Option<CmBox<Event>> {
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

/// Sets the bit fields of a REQ_RECEIVED event's parameters (the C compiler lays them out:
/// bindgen misplaces two of them, see `glue.c`).
pub(crate) fn set_req_bits(
    p: &mut bindings::ib_cm_req_event_param,
    local_cm_response_timeout: u8,
    flow_control: u8,
    remote_cm_response_timeout: u8,
    retry_count: u8,
    rnr_retry_count: u8,
    srq: u8,
) {
    // SAFETY: `p` is a valid, exclusive parameter block.
    unsafe {
        bindings::ibcm_glue_req_event_bits(
            p,
            local_cm_response_timeout,
            flow_control,
            remote_cm_response_timeout,
            retry_count,
            rnr_retry_count,
            srq,
        )
    }
}

/// Sets the bit fields of a REP_RECEIVED event's parameters (as [`set_req_bits`]).
pub(crate) fn set_rep_bits(
    p: &mut bindings::ib_cm_rep_event_param,
    target_ack_delay: u8,
    failover_accepted: u8,
    flow_control: u8,
    rnr_retry_count: u8,
    srq: u8,
) {
    // SAFETY: `p` is a valid, exclusive parameter block.
    unsafe {
        bindings::ibcm_glue_rep_event_bits(
            p,
            target_ack_delay,
            failover_accepted,
            flow_control,
            rnr_retry_count,
            srq,
        )
    }
}
