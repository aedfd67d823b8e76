// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A reserved local comm ID: an index of the comm-ID xarray (`glue.c`) and its wire value.
//!
//! The table itself (publishing an id, the RCU lookups, the release) is `comm_id.rs`.

use crate::bindings;
use kernel::prelude::*;

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
        // SAFETY: Reads a value fixed at module init.
        self.0 ^ unsafe { bindings::ibcm_glue_comm_operand() }
    }

    /// The index of a wire comm ID.
    pub(crate) fn from_wire(wire: u32) -> CommId {
        // SAFETY: As in `wire`.
        CommId(wire ^ unsafe { bindings::ibcm_glue_comm_operand() })
    }

    /// Frees a reserved index that was never published (a failed construction).
    pub(crate) fn release_unused(self) {
        // SAFETY: The index is ours and unpublished.
        unsafe { bindings::ibcm_glue_comm_erase(self.index()) };
    }
}
