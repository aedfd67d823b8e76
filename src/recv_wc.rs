// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A received MAD (`struct ib_mad_recv_wc`), owned from the agent's receive handler until
//! it is freed.

use crate::{bindings, logic::wire::MAD_LEN};

/// A received MAD, owned until dropped (`ib_free_recv_mad`).
///
/// # Invariants
///
/// `raw` is a receive completion the MAD layer handed to the agent's receive handler, owned by
/// this value: valid, not touched by the MAD layer, and freed once, by `drop`.
pub(crate) struct RecvWc {
    raw: *mut bindings::ib_mad_recv_wc,
}

// SAFETY: The receive buffers belong to us once handed to the receive callback; the MAD layer
// does not touch them again until `ib_free_recv_mad`.
unsafe impl Send for RecvWc {}

impl RecvWc {
    /// Takes ownership of a received MAD.
    ///
    /// # Safety
    ///
    /// `raw` must be a completion the MAD layer passed to our receive handler, not freed or
    /// owned by anything else.
    pub(crate) unsafe fn new(raw: *mut bindings::ib_mad_recv_wc) -> Self {
        // INVARIANT: handed over by the caller.
        Self { raw }
    }

    /// The MAD bytes (at most 256, fewer if the MAD layer says so).
    pub(crate) fn mad(&self) -> &[u8] {
        // SAFETY: `self.raw` is a valid receive completion whose `mad` buffer holds `mad_len`
        // bytes (an IB MAD buffer is 256 bytes); the slice lives as long as `self`.
        unsafe {
            let len = usize::try_from((*self.raw).mad_len)
                .unwrap_or(0)
                .min(MAD_LEN);
            let mad = (*self.raw).recv_buf.__bindgen_anon_1.mad;
            if mad.is_null() {
                return &[];
            }
            core::slice::from_raw_parts(mad.cast::<u8>(), len)
        }
    }

    /// The work completion.
    pub(crate) fn wc(&self) -> *const bindings::ib_wc {
        // SAFETY: `self.raw` is valid.
        unsafe { (*self.raw).wc }
    }

    /// The completion's source LID.
    pub(crate) fn slid(&self) -> u32 {
        // SAFETY: `self.raw` and its completion are valid (type invariant).
        unsafe { (*(*self.raw).wc).slid }
    }

    /// The completion's service level.
    pub(crate) fn sl(&self) -> u8 {
        // SAFETY: As in `slid`.
        unsafe { (*(*self.raw).wc).sl }
    }

    /// The completion's destination LID path bits.
    pub(crate) fn dlid_path_bits(&self) -> u8 {
        // SAFETY: As in `slid`.
        unsafe { (*(*self.raw).wc).dlid_path_bits }
    }

    /// The completion's P_Key index.
    pub(crate) fn pkey_index(&self) -> u16 {
        // SAFETY: As in `slid`.
        unsafe { (*(*self.raw).wc).pkey_index }
    }

    /// The GRH.
    pub(crate) fn grh(&self) -> *const bindings::ib_grh {
        // SAFETY: `self.raw` is valid.
        unsafe { (*self.raw).recv_buf.grh }
    }
}

impl Drop for RecvWc {
    fn drop(&mut self) {
        // SAFETY: We own the completion; this is its one release.
        unsafe { bindings::ib_free_recv_mad(self.raw) };
    }
}
