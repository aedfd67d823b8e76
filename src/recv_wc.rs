// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A received MAD (`struct ib_mad_recv_wc`) and the work item that carries it to the CM
//! workqueue (cm.c's `cm_work` without its event), in one small allocation, counted: the
//! receive work holds it through a [`RecvWork`] and each event that points into the MAD
//! through a [`MadRef`]; the last one frees the MAD (`ib_free_recv_mad`) and the item.
//!
//! Most received MADs wait in the queue and reach their handler as this item alone; an event
//! about one points into the MAD where the MAD layer put it, as cm.c's work item keeps the
//! receive completion until its event is done, so no event copies a MAD.

use crate::{
    alloc::CmBox,
    bindings,
    logic::wire::{AttrId, MAD_LEN},
};
use core::{
    cell::Cell,
    ptr::NonNull,
    sync::atomic::{fence, AtomicU32, Ordering},
};
use kernel::{ffi, prelude::*, types::Opaque};

/// Test builds: how many received MADs were released ([`RecvWc`]'s last reference dropped).
#[cfg(ibcm_kunit)]
pub(crate) static RELEASED: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

/// A received MAD and its work item (`attr` and `refs` fit in what was padding: the item
/// stays in kmalloc-64 without lock debugging).
///
/// A `&RecvWc` is lent only by the [`RecvWork`] of the receive callback and work, so it also
/// says that the MAD's device is live (removal waits for both, receive gate and workqueue
/// flush, before `remove_one` returns); an event's [`MadRef`] gives the MAD's bytes only.
///
/// # Invariants
///
/// `raw` is a receive completion the MAD layer handed to the agent's receive handler, owned by
/// this item: valid, not touched by the MAD layer, and freed once, with the item, when `refs`
/// drops to zero. `refs` counts the [`RecvWork`] and [`MadRef`]s pointing here. `work` is
/// initialised (with the receive work function). `context` and `port_num` are the agent's
/// context and port number the receive callback got. `mad_len` is 0 if `raw`'s MAD pointer
/// is NULL, else `raw`'s `mad_len` capped at [`MAD_LEN`] (set before the item is shared).
pub(crate) struct RecvWc {
    /// The CM workqueue's item.
    work: Opaque<bindings::work_struct>,
    /// The holders of this item.
    refs: AtomicU32,
    /// The receiving port.
    pub(crate) port_num: u32,
    /// The receiving agent's context (its device).
    context: *mut ffi::c_void,
    raw: *mut bindings::ib_mad_recv_wc,
    /// Its attribute, from the header the receive callback checked: set there, before the
    /// item is queued, and read by the receive work.
    attr: Cell<AttrId>,
    /// The MAD's length as [`RecvWc::mad`] gives it (0 without a MAD), worked out once.
    mad_len: u16,
}

// A `CmBox` takes kmalloc's alignment (`alloc::MIN_ALIGN`).
const _: () = assert!(core::mem::align_of::<RecvWc>() <= crate::alloc::MIN_ALIGN);

// A MAD waiting in the CM workqueue costs kmalloc-64 (cm.c's `cm_work`: kmalloc-256 or -512).
// Lock debugging puts a lockdep map into the work item, so this holds only without it.
#[cfg(not(CONFIG_DEBUG_LOCK_ALLOC))]
const _: () = assert!(core::mem::size_of::<RecvWc>() <= 64);

impl RecvWc {
    /// The completion.
    fn recv(&self) -> &bindings::ib_mad_recv_wc {
        // SAFETY: Valid while the item is (type invariant), and not written by anyone.
        unsafe { &*self.raw }
    }

    /// The MAD bytes (at most 256, fewer if the MAD layer says so).
    pub(crate) fn mad(&self) -> &[u8] {
        let len = usize::from(self.mad_len);
        if len == 0 {
            return &[];
        }
        // SAFETY: The union's pointer member is the one the MAD layer sets, not NULL (a NULL
        // one gave `mad_len` 0); its buffer holds at least `mad_len` bytes (the MAD layer's
        // count, capped at an IB MAD buffer's 256), valid and unchanged while the item is.
        unsafe {
            core::slice::from_raw_parts(self.recv().recv_buf.__bindgen_anon_1.mad.cast::<u8>(), len)
        }
    }

    /// The receiving agent's context.
    pub(crate) fn context(&self) -> *mut ffi::c_void {
        self.context
    }

    /// The message's attribute.
    pub(crate) fn attr(&self) -> AttrId {
        self.attr.get()
    }

    /// A reference to the MAD for an event that points into it.
    pub(crate) fn mad_ref(&self) -> MadRef {
        // A holder lent `self`, so the count is not zero; a MAD has a handful of holders.
        self.refs.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: counted just above.
        MadRef(Counted(NonNull::from(self)))
    }

    /// The work completion.
    pub(crate) fn wc(&self) -> *const bindings::ib_wc {
        self.recv().wc
    }

    /// The work completion, borrowed.
    fn wc_ref(&self) -> &bindings::ib_wc {
        // SAFETY: The MAD layer's completion of this MAD, valid with it (type invariant).
        unsafe { &*self.recv().wc }
    }

    /// The completion's source LID.
    pub(crate) fn slid(&self) -> u32 {
        self.wc_ref().slid
    }

    /// The completion's service level.
    pub(crate) fn sl(&self) -> u8 {
        self.wc_ref().sl
    }

    /// The completion's destination LID path bits.
    pub(crate) fn dlid_path_bits(&self) -> u8 {
        self.wc_ref().dlid_path_bits
    }

    /// The completion's P_Key index.
    pub(crate) fn pkey_index(&self) -> u16 {
        self.wc_ref().pkey_index
    }

    /// The GRH.
    pub(crate) fn grh(&self) -> *const bindings::ib_grh {
        self.recv().recv_buf.grh
    }
}

/// One counted reference to a [`RecvWc`]; the last one frees the MAD and the item.
///
/// # Invariants
///
/// `self.0` is a live item, allocated as a `CmBox` by [`RecvWork::new`], of which this value
/// owns one counted reference.
struct Counted(NonNull<RecvWc>);

// SAFETY: The receive buffers belong to us once handed to the receive callback; the MAD layer
// does not touch them again until `ib_free_recv_mad`. The count is atomic, and the last holder,
// on whatever thread, frees the item; `attr` is written only before the item is shared.
unsafe impl Send for Counted {}

impl Counted {
    fn get(&self) -> &RecvWc {
        // SAFETY: Live while this reference is (type invariant).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if self.get().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other holder's use of the item happened before its decrement.
        fence(Ordering::Acquire);
        // SAFETY: The last reference: nobody else reads the item; allocated as a `CmBox` (type
        // invariant) and taken back once.
        let item = unsafe { CmBox::from_raw(self.0.as_ptr()) };
        #[cfg(ibcm_kunit)]
        if item.context.is_null() {
            // A test's stand-in completion (`RecvWork::stand_in`): a plain box.
            RELEASED.fetch_add(1, Ordering::Relaxed);
            // SAFETY: Boxed by the test, owned by the item, freed once.
            drop(unsafe { CmBox::from_raw(item.raw.cast::<StandIn>()) });
            return;
        }
        // SAFETY: We own the completion (type invariant); this is its one release.
        unsafe { bindings::ib_free_recv_mad(item.raw) };
    }
}

/// The receive callback's and the receive work's reference to a received MAD: the only one
/// that lends a [`RecvWc`].
pub(crate) struct RecvWork(Counted);

impl RecvWork {
    /// The attribute ID in the header of a received MAD not yet taken over, or `None` if the
    /// MAD is shorter than a MAD header: what the receive callback counts before it allocates
    /// anything (cm.c counts a received MAD before its work allocation).
    ///
    /// # Safety
    ///
    /// As for [`RecvWork::new`]; the completion is only read.
    pub(crate) unsafe fn peek_attr(raw: *const bindings::ib_mad_recv_wc) -> Option<u16> {
        // SAFETY: `raw` is a live completion (caller); the union's pointer member is the one
        // the MAD layer sets, and its buffer holds `mad_len` bytes.
        unsafe {
            let mad = (*raw).recv_buf.__bindgen_anon_1.mad;
            if mad.is_null() || usize::try_from((*raw).mad_len).unwrap_or(0) < MAD_LEN {
                return None;
            }
            let b = mad.cast::<u8>();
            Some(u16::from_be_bytes([*b.add(16), *b.add(17)]))
        }
    }

    /// Takes ownership of a received MAD, with the work item that will carry it; on failure
    /// the MAD is freed.
    ///
    /// # Safety
    ///
    /// `raw` must be a completion the MAD layer passed to our receive handler, not freed or
    /// owned by anything else, and `context` and `port_num` what that handler got with it.
    pub(crate) unsafe fn new(
        raw: *mut bindings::ib_mad_recv_wc,
        context: *mut ffi::c_void,
        port_num: u32,
    ) -> Result<RecvWork> {
        let item = CmBox::new(
            RecvWc {
                work: Opaque::uninit(),
                refs: AtomicU32::new(1),
                port_num,
                context,
                raw,
                attr: Cell::new(AttrId::Req),
                mad_len: 0,
            },
            GFP_KERNEL,
        );
        let Ok(mut item) = item else {
            // SAFETY: We own the completion (caller); this is its one release.
            unsafe { bindings::ib_free_recv_mad(raw) };
            return Err(ENOMEM);
        };
        // SAFETY: The work item is ours and does not move (it stays in its box); the glue
        // initialises it in place. `raw` is a live completion (caller); the union's pointer
        // member is the one the MAD layer sets.
        let (mad, len) = unsafe {
            bindings::ibcm_glue_init_recv_work(item.work.get());
            ((*raw).recv_buf.__bindgen_anon_1.mad, (*raw).mad_len)
        };
        // What `mad` gives, worked out once: the MAD layer's length, capped at an IB MAD
        // buffer's; none without a MAD.
        item.mad_len = if mad.is_null() {
            0
        } else {
            // At most MAD_LEN (256), so it fits.
            u16::try_from(usize::try_from(len).unwrap_or(0).min(MAD_LEN)).unwrap_or(0)
        };
        // INVARIANT: The item holds `raw` (handed over by the caller), its work is initialised,
        // and its one reference is this value's.
        Ok(RecvWork(Counted(NonNull::from(CmBox::leak(item)))))
    }

    /// Gives this reference to the workqueue, for a message of attribute `attr`: the work
    /// item, for queueing.
    pub(crate) fn into_work(self, attr: AttrId) -> *mut bindings::work_struct {
        // Before the item is queued: only this thread uses it.
        self.attr.set(attr);
        core::mem::ManuallyDrop::new(self).work.get()
    }

    /// Takes the reference back from its work item.
    ///
    /// # Safety
    ///
    /// `work` must come from [`RecvWork::into_work`] and be taken back once.
    pub(crate) unsafe fn from_work(work: *mut bindings::work_struct) -> RecvWork {
        let work = work.cast::<Opaque<bindings::work_struct>>();
        // SAFETY: `work` is the `work` field of a live item whose reference `into_work` gave
        // up (caller), so `container_of!` gives that item, not NULL.
        // INVARIANT: The reference `into_work` gave up, taken back once (caller).
        unsafe {
            let wc = kernel::container_of!(work, RecvWc, work);
            RecvWork(Counted(NonNull::new_unchecked(wc.cast_mut())))
        }
    }
}

impl core::ops::Deref for RecvWork {
    type Target = RecvWc;

    fn deref(&self) -> &RecvWc {
        self.0.get()
    }
}

/// Test builds: a received MAD the MAD layer never saw. `repr(C)`: the completion comes first,
/// so a pointer to it is a pointer to the whole, which its last reference frees.
#[cfg(ibcm_kunit)]
#[derive(Default)]
#[repr(C)]
struct StandIn {
    recv_wc: bindings::ib_mad_recv_wc,
    wc: bindings::ib_wc,
    mad: MadBuf,
}

/// Test builds: a stand-in's MAD buffer.
#[cfg(ibcm_kunit)]
struct MadBuf([u8; MAD_LEN]);

#[cfg(ibcm_kunit)]
impl Default for MadBuf {
    fn default() -> Self {
        MadBuf([0; MAD_LEN])
    }
}

#[cfg(ibcm_kunit)]
impl RecvWork {
    /// A received MAD holding a copy of `mad` (at most [`MAD_LEN`] bytes), boxed; the last
    /// reference frees it and counts it in [`RELEASED`] (its context is NULL).
    pub(crate) fn stand_in(mad: &[u8]) -> Result<RecvWork> {
        let len = mad.len().min(MAD_LEN);
        let mut b = CmBox::new(StandIn::default(), GFP_KERNEL)?;
        b.mad.0[..len].copy_from_slice(&mad[..len]);
        // The completion points at its own work completion and MAD, as the MAD layer's do.
        b.recv_wc.wc = &mut b.wc;
        b.recv_wc.recv_buf.__bindgen_anon_1.mad = b.mad.0.as_mut_ptr().cast();
        b.recv_wc.mad_len = ffi::c_int::try_from(len)?;
        let raw = CmBox::into_raw(b);
        // SAFETY: The completion is ours; with a NULL context the last reference frees it as
        // the box it is.
        unsafe { RecvWork::new(raw.cast(), core::ptr::null_mut(), 1) }
    }
}

/// An event's reference to the received MAD it points into: keeps the MAD where the MAD layer
/// put it until the event is dropped. It gives the MAD's bytes, never the [`RecvWc`].
pub(crate) struct MadRef(Counted);

impl MadRef {
    /// The MAD bytes (as [`RecvWc::mad`]).
    pub(crate) fn mad(&self) -> &[u8] {
        self.0.get().mad()
    }
}
