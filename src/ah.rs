// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Address handles the CM owns beyond one send: an active id's handshake handle.
//!
//! A handle made for one send is owned by that send (`send.rs`); a cached reply handle by the
//! device's reply cache (`reply_ah.rs`).

use crate::bindings;

/// The address handle an active id's handshake sends share. cm.c creates a handle per MAD;
/// the REQ's serves the RTU (and an MRA or REJ before it) too, since they go along the same
/// address, which saves creating and destroying one per connection. The handle lives while
/// the id is in a handshake state or a send on it is in flight, and no longer: an established
/// connection holds no handle (the memory per connection stays what it was).
///
/// # Invariants
///
/// `ah` is NULL or a handle of the id's MAD agent PD, created from the id's `av`, that no
/// one else destroys.
#[derive(Default)]
pub(crate) struct HandshakeAh(Option<core::ptr::NonNull<bindings::ib_ah>>);

// SAFETY: An address handle may be used and destroyed from any thread.
unsafe impl Send for HandshakeAh {}
// SAFETY: Shared access only reads the pointer.
unsafe impl Sync for HandshakeAh {}

impl HandshakeAh {
    /// In the id's count of sends on the handle: the handle is out of use (the id left the
    /// handshake while sends on it were in flight): no send takes it any more, the last
    /// completion destroys it.
    pub(crate) const RETIRED: u8 = 0x80;

    /// Takes the handle out, leaving none.
    pub(crate) fn take(&mut self) -> Self {
        Self(self.0.take())
    }

    /// The handle, if there is one.
    pub(crate) fn get(&self) -> Option<core::ptr::NonNull<bindings::ib_ah>> {
        self.0
    }

    /// Installs `ah` as the handle (there was none).
    ///
    /// # Safety
    ///
    /// `ah` must be a handle of the id's MAD agent PD, created from the id's address, that
    /// no one else destroys.
    pub(crate) unsafe fn set(&mut self, ah: core::ptr::NonNull<bindings::ib_ah>) {
        debug_assert!(self.0.is_none());
        // INVARIANT: the caller's contract.
        self.0 = Some(ah);
    }

    /// Whether there is a handle.
    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for HandshakeAh {
    fn drop(&mut self) {
        if let Some(ah) = self.0.take() {
            // SAFETY: Ours alone (type invariant), and no send uses it any more: the holder
            // drops it only with no handshake send in flight (or as the id is freed, after
            // every buffer gave its reference back). Non-sleeping, so it may run under the id
            // lock, as cm.c's `cm_free_priv_msg`.
            unsafe { bindings::ibcm_glue_destroy_ah(ah.as_ptr()) };
        }
    }
}
