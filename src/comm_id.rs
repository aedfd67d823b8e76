// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Local communication IDs: allocation at id creation and the lock-free lookup of the receive
//! path.
//!
//! Stands for cm.c's `local_id_table` (`cm_alloc_id_priv()`, `cm_finalize_id()`,
//! `cm_local_id()`, `cm_acquire_id()` and the `xa_erase()` of `cm_destroy_id()`). The table is
//! a C xarray in `glue.c`, allocated cyclically over 32 bits; the wire value of an id is its
//! index XOR a random operand chosen at module load, so a comm ID is not handed out again soon
//! after release and is not guessable from the previous one.
//!
//! A published id is one `Arc` reference held by the table. Lookups run under RCU and clone
//! that reference; erasing gives it back through `call_rcu()`, so a lookup that loaded the
//! pointer before the erase still finds live memory. No lock is taken on the receive path.

use crate::{
    bindings,
    cm_id::{CmDevice, CmId},
    comm_index::CommId,
    lock::RcuGuard,
};
use kernel::{sync::Arc, sync::ArcBorrow};

/// Chooses the random operand (module init).
pub(crate) fn init() {
    // SAFETY: A random number; no other effect.
    crate::comm_index::set_operand(unsafe { bindings::ibcm_glue_comm_init() });
}

/// Waits until every deferred table reference is dropped (module exit).
pub(crate) fn barrier() {
    // SAFETY: Sleeps until pending RCU callbacks ran.
    unsafe { bindings::ibcm_glue_rcu_barrier() }
}

/// Whether no comm ID is allocated (module exit: cm.c warns if the table is not empty).
pub(crate) fn empty() -> bool {
    // SAFETY: Reads the table's emptiness.
    unsafe { bindings::ibcm_glue_comm_empty() }
}

impl CommId {
    /// Makes `id` reachable by lookups (`cm_finalize_id`); the table takes one reference.
    pub(crate) fn publish(self, id: &Arc<CmId>) {
        let raw = Arc::into_raw(id.clone());
        // SAFETY: The slot was reserved by `alloc` and is replaced without allocating; the
        // table now owns the reference `raw` carries, given back by `unpublish`.
        unsafe { bindings::ibcm_glue_comm_publish(self.index(), raw.cast_mut().cast()) };
    }

    /// Frees the index. If `id` was published, the table's reference is dropped after an RCU
    /// grace period (`call_rcu`), so concurrent lookups stay safe.
    pub(crate) fn release(self, id: &CmId, published: bool) {
        // SAFETY: The index is ours; erasing an unpublished reserved slot frees it too.
        unsafe { bindings::ibcm_glue_comm_erase(self.index()) };
        if published {
            // SAFETY: The head is the id's, used once: only the table's reference is given
            // back through it, after which the id is never published again.
            unsafe { bindings::ibcm_glue_call_rcu(id.rcu_head()) };
        }
    }
}

impl CmId {
    /// Makes the id reachable by its comm ID (`cm_finalize_id`).
    ///
    /// Called before anyone else holds the id (`ib_create_cm_id`, a passive id about to be
    /// handed to its handler), so no destroy can run in between; the xarray store happens
    /// outside the id lock, which `ib_cm_notify` takes in hard-IRQ context while `xa_lock`
    /// is not IRQ-safe.
    pub(crate) fn publish(self: &Arc<Self>) {
        let first = {
            let mut g = self.inner.lock();
            !core::mem::replace(&mut g.published, true)
        };
        if first {
            self.comm_id().publish(self);
        }
    }
}

/// The live id a wire comm ID names, with `remote_id` as it must match (`cm_acquire_id`):
/// `None` if there is none, if its remote ID differs, or if it is being destroyed. The caller
/// holds one in-flight use ([`CmId::put_user`] when done).
pub(crate) fn acquire(local_wire: u32, remote_wire: u32) -> Option<Arc<CmId>> {
    let index = CommId::from_wire(local_wire);
    let found = {
        let _rcu = RcuGuard::new();
        // SAFETY: Inside the RCU section.
        let raw = unsafe { bindings::ibcm_glue_comm_load(index.index()) };
        if raw.is_null() {
            None
        } else {
            // SAFETY: A published entry is a pointer from `Arc::into_raw` whose reference is
            // given back only after a grace period following its erase; we are inside the
            // section.
            let id = unsafe { ArcBorrow::<CmId>::from_raw(raw.cast()) };
            Some(Arc::from(id))
        }
    };
    let id = found?;
    if id.remote_id() != remote_wire || !id.get_user() {
        return None;
    }
    Some(id)
}

/// The first published id of `dev` at comm-table index `from` or above, with its index. Ids
/// of other devices are skipped under RCU, without taking a reference: the walk never holds
/// (nor drops the last reference of) another device's id.
pub(crate) fn next_of_device(from: u32, dev: &CmDevice) -> Option<(Arc<CmId>, u32)> {
    let mut index = from;
    let _rcu = RcuGuard::new();
    loop {
        // SAFETY: Inside the section; `index` is a valid in/out argument.
        let raw = unsafe { bindings::ibcm_glue_comm_find(&mut index) };
        if raw.is_null() {
            break None;
        }
        // SAFETY: As in `comm_id::acquire`: a published entry carries the table's reference,
        // given back only after a grace period that this section delays.
        let id = unsafe { ArcBorrow::<CmId>::from_raw(raw.cast()) };
        if core::ptr::eq::<CmDevice>(&*id.dev, dev) {
            break Some((Arc::from(id), index));
        }
        match index.checked_add(1) {
            Some(i) => index = i,
            None => break None,
        }
    }
}
