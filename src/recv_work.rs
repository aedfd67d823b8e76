// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The work item that carries a received MAD from the agent's receive handler to the CM
//! workqueue (cm.c's `cm_work`, without the event: the handler that reports the MAD allocates
//! its event, and most received MADs wait in the queue as this small item).

use crate::{alloc::CmBox, bindings, device::CmDevice, logic::wire::AttrId, recv_wc::RecvWc};
use kernel::{prelude::*, sync::Arc, types::Opaque};

/// A received MAD queued for the receive work (`attr` fits in what was padding: the item
/// stays in kmalloc-64 without lock debugging).
///
/// # Invariants
///
/// `work` is initialised (with the receive work function) by [`RecvWork::new`].
pub(crate) struct RecvWork {
    /// The CM workqueue's item.
    work: Opaque<bindings::work_struct>,
    /// The device it came in through.
    pub(crate) dev: Arc<CmDevice>,
    /// Its port.
    pub(crate) port_num: u32,
    /// Its attribute, from the header the receive callback checked.
    pub(crate) attr: AttrId,
    /// The MAD.
    pub(crate) wc: RecvWc,
}

// A `CmBox` takes kmalloc's alignment (`alloc::MIN_ALIGN`).
const _: () = assert!(core::mem::align_of::<RecvWork>() <= crate::alloc::MIN_ALIGN);

impl RecvWork {
    /// A work item for `wc`, received on port `port_num` of `dev`.
    pub(crate) fn new(
        dev: Arc<CmDevice>,
        port_num: u32,
        attr: AttrId,
        wc: RecvWc,
    ) -> Result<CmBox<RecvWork>> {
        let w = CmBox::new(
            RecvWork {
                work: Opaque::uninit(),
                dev,
                port_num,
                attr,
                wc,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: The work item is ours and does not move (it stays in its box); the glue
        // initialises it in place.
        // INVARIANT: initialised here.
        unsafe { bindings::ibcm_glue_init_recv_work(w.work.get()) };
        Ok(w)
    }

    /// Gives up the box to the workqueue: its work item, for queueing.
    pub(crate) fn into_work(w: CmBox<RecvWork>) -> *mut bindings::work_struct {
        let raw = CmBox::into_raw(w);
        // SAFETY: `raw` is live (just leaked); the field's address does not move.
        unsafe { (*raw).work.get() }
    }

    /// Takes the box back from its work item.
    ///
    /// # Safety
    ///
    /// `work` must come from [`RecvWork::into_work`] and be taken back once.
    pub(crate) unsafe fn from_work(work: *mut bindings::work_struct) -> CmBox<RecvWork> {
        // SAFETY: `work` is the `work` field of an item leaked by `into_work` (caller).
        let w = unsafe {
            kernel::container_of!(work.cast::<Opaque<bindings::work_struct>>(), RecvWork, work)
        };
        // SAFETY: Leaked with `CmBox::into_raw`, taken back once (caller).
        unsafe { CmBox::from_raw(w.cast_mut()) }
    }
}
