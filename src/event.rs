// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! An id's events and their queue (delivery, one at a time in arrival order, is
//! `conn/deliver.rs`).
//!
//! Stands for the event half of `struct cm_work`, `cm_queue_work_unlock()` and
//! `cm_dequeue_work()` in cm.c. An [`Event`] of a received MAD points into that MAD where the
//! MAD layer put it (cm.c's work item keeps the receive completion until the event is done):
//! the receive work that made it either delivers it itself while the MAD is still alive, or
//! queues it, and queueing ([`EventQueue::push`]) first copies the MAD into the event and moves
//! its pointers there, so a queued event owns everything it points to. The copy is the
//! exception: an id's events queue only while one of its handlers is running. Events are
//! allocated before the id's lock is taken; queueing only links them in. A received MAD waits
//! on the CM workqueue in its own small work item (`recv_work.rs`); the handler that reports
//! it allocates the event. The thread that finds
//! the id idle becomes its deliverer (see `CmId::deliver`), calls the handler with no lock held
//! and drains what others queued meanwhile; everyone else only queues. cm.c does the same with
//! `work_count`.

use crate::alloc::CmBox;
use crate::{
    bindings,
    logic::wire::{MAD_HDR_LEN, MAD_LEN},
    recv_wc::RecvWc,
};
use core::mem::MaybeUninit;
use kernel::{ffi, prelude::*};

/// Test builds: every event allocation that may fail fails while set (`entry/kunit.rs`).
#[cfg(ibcm_kunit)]
pub(crate) static FAIL_ALLOCS: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// One event for a handler.
///
/// # Invariants
///
/// `paths` is initialised if `paths_init`.
/// `src_len` is 0 (no MAD) or [`MAD_LEN`]. If `src` is not NULL, it points to the `src_len`
/// bytes of a received MAD that stay valid while the event lives outside an [`EventQueue`];
/// the MAD pointers in `ev` point into it. Otherwise the first `src_len` bytes of `mad` are
/// initialised and the MAD pointers point there (or are NULL).
pub(crate) struct Event {
    next: Option<CmBox<Event>>,
    /// The event as the handler sees it.
    pub(crate) ev: bindings::ib_cm_event,
    /// REQ and LAP paths (`primary_path` / `alternate_path` point here), zeroed by the first
    /// [`Event::paths`]: most events carry none, and zeroing 176 bytes per MAD is not free.
    paths: MaybeUninit<[bindings::sa_path_rec; 2]>,
    /// `paths` is initialised.
    paths_init: bool,
    src: *const u8,
    src_len: usize,
    /// The MAD's copy once queued.
    mad: MaybeUninit<[u8; MAD_LEN]>,
}

// A `CmBox` takes kmalloc's alignment (`alloc::MIN_ALIGN`).
const _: () = assert!(core::mem::align_of::<Event>() <= crate::alloc::MIN_ALIGN);

// SAFETY: The raw pointers inside point into the event itself, into a received MAD owned by
// the receive work that holds the event (the event leaves that thread only through a queue,
// which copies the MAD first), or to objects (sgid attributes, listener ids) that the sender
// keeps alive until the event is dropped.
unsafe impl Send for Event {}

impl Event {
    /// The event of type `kind` about the received MAD `wc`, pointing into it.
    ///
    /// # Safety
    ///
    /// As [`Event::for_mad`], for `wc`'s MAD.
    pub(crate) unsafe fn for_wc(
        kind: bindings::ib_cm_event_type,
        wc: &RecvWc,
    ) -> Result<CmBox<Event>> {
        let e = Self::zeroed(GFP_KERNEL)?;
        // SAFETY: The caller's contract.
        unsafe { Self::attach(e, kind, wc.mad()) }
    }

    /// Points the unused event `e` at the whole MAD `mad` (a shorter one is refused).
    ///
    /// # Safety
    ///
    /// As [`Event::for_mad`].
    unsafe fn attach(
        mut e: CmBox<Event>,
        kind: bindings::ib_cm_event_type,
        mad: &[u8],
    ) -> Result<CmBox<Event>> {
        let mad: &[u8; MAD_LEN] = mad.try_into().map_err(|_| EINVAL)?;
        // INVARIANT: The caller keeps `mad` alive while the event is not queued.
        e.src = mad.as_ptr();
        e.src_len = MAD_LEN;
        e.ev.event = kind;
        Ok(e)
    }

    /// A zeroed event of type `kind` about the received MAD `mad`, pointing into it. A
    /// received MAD that reached a handler is whole (`check_header` checks its length), so
    /// every fixed-size field an event points at lies inside it; a shorter one is refused.
    ///
    /// # Safety
    ///
    /// `mad` must stay valid until the event is dropped or pushed on an [`EventQueue`].
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) unsafe fn for_mad(
        kind: bindings::ib_cm_event_type,
        mad: &[u8],
    ) -> Result<CmBox<Event>> {
        let e = Self::zeroed(GFP_KERNEL)?;
        // SAFETY: The caller's contract.
        unsafe { Self::attach(e, kind, mad) }
    }

    /// A zeroed event about no MAD.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn empty() -> Result<CmBox<Event>> {
        Self::zeroed(GFP_KERNEL)
    }

    /// An empty event allocated without sleeping (`GFP_ATOMIC`), for a timer or completion
    /// whose preallocation failed.
    pub(crate) fn new_atomic() -> Result<CmBox<Event>> {
        Self::zeroed(GFP_ATOMIC)
    }

    /// An empty event the CM makes itself (REQ_ERROR, REP_ERROR, DREQ_ERROR, SIDR_REQ_ERROR,
    /// TIMEWAIT_EXIT, USER_ESTABLISHED), allocated so that it cannot fail: cm.c delivers these
    /// from memory it already holds, so a failed allocation must not leave the id in a state
    /// no input ends. Sleeps: the send completion, timewait and establish work only.
    pub(crate) fn own() -> CmBox<Event> {
        Self::init(crate::alloc::new_uninit_nofail::<Event>())
    }

    /// An event whose fields are all zero but for the MAD buffer and the path records, which
    /// stay uninitialised until a queue copies into the former and [`Event::paths`] zeroes
    /// the latter.
    fn zeroed(flags: kernel::alloc::Flags) -> Result<CmBox<Event>> {
        #[cfg(ibcm_kunit)]
        if FAIL_ALLOCS.load(core::sync::atomic::Ordering::Relaxed) {
            // The white-box tests fail every allocation that may fail, as failslab would
            // (which leaves `__GFP_NOFAIL` ones alone).
            return Err(ENOMEM);
        }
        Ok(Self::init(CmBox::<Event>::new_uninit(flags)?))
    }

    fn init(mut e: CmBox<MaybeUninit<Event>>) -> CmBox<Event> {
        let p = e.as_mut_ptr();
        // SAFETY: `p` is valid for writes of an `Event`. All-zero is a valid value of every
        // field written: `next` is `None` (a box is a non-null pointer, so `None` is the null
        // niche), `ev` is plain C data whose pointers may be NULL, `src` is NULL and `src_len`
        // 0; `paths` and `mad` (both `MaybeUninit`) need nothing.
        // INVARIANT: `paths_init` is false, so `paths` need not be initialised.
        unsafe {
            core::ptr::addr_of_mut!((*p).next).write(None);
            core::ptr::addr_of_mut!((*p).ev).write(core::mem::zeroed());
            core::ptr::addr_of_mut!((*p).paths_init).write(false);
            core::ptr::addr_of_mut!((*p).src).write(core::ptr::null());
            core::ptr::addr_of_mut!((*p).src_len).write(0);
            e.assume_init()
        }
    }

    // The parameters of each event type: the members of `ib_cm_event.param`. Each member is
    // plain C data (integers, raw pointers, C enums as integers), valid for every bit pattern
    // and zeroed with the event, so a mutable view of any member is sound; the CM writes the
    // member of the event's type, the only one its handler reads.

    /// The parameters of REQ_RECEIVED.
    pub(crate) fn req_rcvd(&mut self) -> &mut bindings::ib_cm_req_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.req_rcvd.as_mut() }
    }

    /// The parameters of REP_RECEIVED.
    pub(crate) fn rep_rcvd(&mut self) -> &mut bindings::ib_cm_rep_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.rep_rcvd.as_mut() }
    }

    /// The parameters of REJ_RECEIVED.
    pub(crate) fn rej_rcvd(&mut self) -> &mut bindings::ib_cm_rej_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.rej_rcvd.as_mut() }
    }

    /// The parameters of MRA_RECEIVED.
    pub(crate) fn mra_rcvd(&mut self) -> &mut bindings::ib_cm_mra_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.mra_rcvd.as_mut() }
    }

    /// The parameters of LAP_RECEIVED.
    pub(crate) fn lap_rcvd(&mut self) -> &mut bindings::ib_cm_lap_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.lap_rcvd.as_mut() }
    }

    /// The parameters of APR_RECEIVED.
    pub(crate) fn apr_rcvd(&mut self) -> &mut bindings::ib_cm_apr_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.apr_rcvd.as_mut() }
    }

    /// The parameters of SIDR_REQ_RECEIVED.
    pub(crate) fn sidr_req_rcvd(&mut self) -> &mut bindings::ib_cm_sidr_req_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.sidr_req_rcvd.as_mut() }
    }

    /// The parameters of SIDR_REP_RECEIVED.
    pub(crate) fn sidr_rep_rcvd(&mut self) -> &mut bindings::ib_cm_sidr_rep_event_param {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.sidr_rep_rcvd.as_mut() }
    }

    /// The parameters of the *_ERROR events.
    pub(crate) fn send_status(&mut self) -> &mut bindings::ib_wc_status {
        // SAFETY: A member of a union of plain C data (see above).
        unsafe { self.ev.param.send_status.as_mut() }
    }

    /// The event's two path records (REQ primary and alternate, LAP alternate), zeroed on
    /// first use.
    pub(crate) fn paths(&mut self) -> &mut [bindings::sa_path_rec; 2] {
        if !self.paths_init {
            // SAFETY: All-zero is a valid path record (plain C data).
            self.paths.write(unsafe { core::mem::zeroed() });
            // INVARIANT: initialised just above.
            self.paths_init = true;
        }
        // SAFETY: Initialised (type invariant, `paths_init`).
        unsafe { self.paths.assume_init_mut() }
    }

    /// The MAD the event points into, and its length.
    fn base(&mut self) -> (*mut u8, usize) {
        if self.src.is_null() {
            (self.mad.as_mut_ptr().cast(), self.src_len)
        } else {
            (self.src.cast_mut(), self.src_len)
        }
    }

    /// A pointer to payload offset `offset` of the MAD (NULL past its end).
    pub(crate) fn payload_ptr(&mut self, offset: usize) -> *mut ffi::c_void {
        let (base, len) = self.base();
        let at = MAD_HDR_LEN + offset;
        if at >= len {
            return core::ptr::null_mut();
        }
        // SAFETY: `at` is inside the `len` bytes at `base` (type invariant).
        unsafe { base.add(at).cast() }
    }

    /// Points `private_data` at payload offset `offset`.
    pub(crate) fn set_private_data(&mut self, offset: usize) {
        self.ev.private_data = self.payload_ptr(offset);
    }

    /// Copies the MAD the event points into into the event itself and moves the pointers
    /// there: `private_data`, and by event type the REJ's ARI, the APR's and the SIDR_REP's
    /// additional information (the path pointers already point into the event).
    fn own_mad(&mut self) {
        if self.src.is_null() {
            return;
        }
        let (src, len) = (self.src, self.src_len);
        let dst: *mut u8 = self.mad.as_mut_ptr().cast();
        // SAFETY: `src` holds `len` valid bytes (type invariant), `dst` has room for
        // `MAD_LEN >= len`, and they do not overlap (one is inside this event, the other is
        // the MAD layer's buffer).
        unsafe { core::ptr::copy_nonoverlapping(src, dst, len) };
        let moved = |p: *mut ffi::c_void| -> *mut ffi::c_void {
            // CAST: addresses compared as integers, only to find whether `p` is in the MAD.
            let at = (p as usize).wrapping_sub(src as usize);
            if p.is_null() || at >= len {
                p
            } else {
                // SAFETY: `at < len <= MAD_LEN`: inside the copy.
                unsafe { dst.add(at).cast() }
            }
        };
        self.ev.private_data = moved(self.ev.private_data);
        // SAFETY: Each member is read and written only for the event type that uses it.
        unsafe {
            match self.ev.event {
                bindings::ib_cm_event_type_IB_CM_REJ_RECEIVED => {
                    let p = self.ev.param.rej_rcvd.as_mut();
                    p.ari = moved(p.ari);
                }
                bindings::ib_cm_event_type_IB_CM_APR_RECEIVED => {
                    let p = self.ev.param.apr_rcvd.as_mut();
                    p.apr_info = moved(p.apr_info);
                }
                bindings::ib_cm_event_type_IB_CM_SIDR_REP_RECEIVED => {
                    let p = self.ev.param.sidr_rep_rcvd.as_mut();
                    p.info = moved(p.info);
                }
                _ => {}
            }
        }
        // INVARIANT: The pointers now point into `mad`, initialised for `len` (`src_len`)
        // bytes.
        self.src = core::ptr::null();
    }
}

/// The events queued on an id while its deliverer runs a handler.
#[derive(Default)]
pub(crate) struct EventQueue {
    head: Option<CmBox<Event>>,
}

impl EventQueue {
    /// Appends `e` (the queue is short: a handful of transitions at most). A queued event may
    /// be delivered and dropped by another thread after the received MAD it was made from is
    /// gone, so it takes a copy of that MAD first.
    pub(crate) fn push(&mut self, mut e: CmBox<Event>) {
        e.own_mad();
        let mut slot = &mut self.head;
        while let Some(node) = slot {
            slot = &mut node.next;
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
