// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A reserved local comm ID: an index of the comm-ID xarray (`glue.c`) and its wire value.
//!
//! The table itself (publishing an id, the RCU lookups, the release) is `comm_id.rs`.

use crate::bindings;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// The random operand a comm ID's index is XORed with on the wire, chosen once at module load
/// ([`set_operand`]), before any id exists; a plain load on the receive path.
static OPERAND: AtomicU32 = AtomicU32::new(0);

/// Sets the wire operand (module init, before any comm ID is reserved).
pub(crate) fn set_operand(operand: u32) {
    OPERAND.store(operand, Ordering::Relaxed);
}

/// A reserved local comm ID (the xarray index; the wire value is [`CommId::wire`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct CommId(u32);

impl CommId {
    /// Reserves the next free index (`xa_alloc_cyclic`); may sleep.
    pub(crate) fn alloc() -> Result<CommId> {
        let mut index = 0u32;
        // SAFETY: `index` is a valid output; process context (GFP_KERNEL).
        kernel::error::to_result(unsafe { bindings::ibcm_glue_comm_alloc(&mut index) })?;
        Ok(CommId(index))
    }

    /// The xarray index.
    pub(crate) fn index(self) -> u32 {
        self.0
    }

    /// The comm ID as the wire and `ib_cm_id.local_id` carry it (host order).
    pub(crate) fn wire(self) -> u32 {
        self.0 ^ OPERAND.load(Ordering::Relaxed)
    }

    /// The index of a wire comm ID.
    pub(crate) fn from_wire(wire: u32) -> CommId {
        CommId(wire ^ OPERAND.load(Ordering::Relaxed))
    }

    /// Frees a reserved index that was never published (a failed construction).
    pub(crate) fn release_unused(self) {
        // SAFETY: The index is ours and unpublished.
        unsafe { bindings::ibcm_glue_comm_erase(self.index()) };
    }
}
