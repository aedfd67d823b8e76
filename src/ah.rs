// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Address handles the CM owns beyond one send: a connection end's handle and the per-device
//! budget of those handles.
//!
//! A handle made for one send is owned by that send (`send.rs`); a cached reply handle by the
//! device's reply cache (`reply_ah.rs`).

use crate::{bindings, use_count::Places};
use core::sync::atomic::{AtomicU64, Ordering};

/// How many connection handles a device may hold (`conn_ahs_per_device` in
/// `/sys/module/ib_cm/parameters/`): below zero (the default) half the device's `max_ah`, which
/// leaves the other half to per-send handles and to user space (rxe counts both against one
/// limit of 32767); zero turns connection handles off (a handle per send, as cm.c); a positive
/// value is a cap, itself capped at `max_ah`.
fn limit(max_ah: u32) -> u32 {
    match u32::try_from(crate::tunables::conn_ahs_per_device()) {
        Ok(n) => n.min(max_ah),
        Err(_) => max_ah / 2,
    }
}

/// Whether a test asks the creation of connection handles to fail (`fail_conn_ahs`, a module
/// parameter of test builds only).
pub(crate) fn forced_failure() -> bool {
    #[cfg(ibcm_kunit)]
    // SAFETY: Reads a `bool` module parameter.
    return unsafe { bindings::ibcm_glue_fail_conn_ahs() };
    #[cfg(not(ibcm_kunit))]
    false
}

/// A device's connection handles: how many its connection ends hold, and how often one could
/// not have one (the connection then runs on a handle per send).
pub(crate) struct AhBudget {
    /// The device's `attrs.max_ah`.
    max_ah: u32,
    /// Handles held; refused: REQs and REPs sent on a handle of their own because the budget
    /// was spent.
    held: Places,
    /// REQs and REPs sent on a handle of their own because creating the connection's failed.
    failed: AtomicU64,
}

/// What debugfs shows of an [`AhBudget`].
pub(crate) struct AhBudgetStats {
    /// Handles held.
    pub(crate) held: u32,
    /// The current limit.
    pub(crate) limit: u32,
    /// Sends that found the budget spent.
    pub(crate) over_budget: u64,
    /// Sends whose connection handle could not be created.
    pub(crate) failed: u64,
}

impl AhBudget {
    /// The budget of a device with `max_ah` address handles.
    pub(crate) const fn new(max_ah: u32) -> Self {
        Self {
            max_ah,
            held: Places::new(),
            failed: AtomicU64::new(0),
        }
    }

    /// Claims one handle (given back by [`ConnAh::release`] or [`AhBudget::unclaim`]), or
    /// counts a send over budget.
    pub(crate) fn claim(&self) -> bool {
        let limit = limit(self.max_ah);
        self.held.take(|n| n < limit)
    }

    /// Gives back a claim whose handle could not be created, and counts the failure.
    pub(crate) fn unclaim_failed(&self) {
        self.held.give_back();
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// The figures, for debugfs.
    pub(crate) fn stats(&self) -> AhBudgetStats {
        AhBudgetStats {
            held: self.held.taken(),
            limit: limit(self.max_ah),
            over_budget: self.held.refused(),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// The address handle every MAD of one connection end goes on (design A in
/// `Documentation/performance.rst`). cm.c creates and destroys a handle per MAD; here the
/// REQ's send (active side) or the REP's (passive side) creates one from the id's primary
/// address, and the end's later MADs (RTU, MRA, REJ, DREQ, DREP, retransmissions, answers to
/// duplicates) go along the same address on it, until the id is back in IDLE, its address is
/// replaced (LAP) or its device goes away. The wire is cm.c's.
///
/// One pointer, so that the id stays in kmalloc-256: the budget it is counted in is its
/// device's, which every holder can reach and passes to [`ConnAh::release`]. Retired (no send
/// takes it) on LAP and path migration (the primary address changed) and on device removal.
///
/// # Invariants
///
/// When set, the handle is one of the id's MAD agent PD, created from the id's primary
/// address, that no one else destroys, and it holds a claim on its device's [`AhBudget`].
#[derive(Default)]
pub(crate) struct ConnAh(Option<core::ptr::NonNull<bindings::ib_ah>>);

impl ConnAh {
    /// In the id's count of sends on the handle: the handle is out of use (the id left the
    /// connection, or its address or device changed, while sends on it were in flight): no
    /// send takes it any more, the last completion destroys it.
    pub(crate) const RETIRED: u8 = 0x80;

    /// The handle, if there is one.
    pub(crate) fn get(&self) -> Option<core::ptr::NonNull<bindings::ib_ah>> {
        self.0
    }

    /// Installs `ah` as the handle (there was none).
    ///
    /// # Safety
    ///
    /// `ah` must be a handle of the id's MAD agent PD, created from the id's address, that
    /// no one else destroys, and a claim on the device's budget must have been taken for it.
    pub(crate) unsafe fn set(&mut self, ah: core::ptr::NonNull<bindings::ib_ah>) {
        debug_assert!(self.0.is_none());
        // INVARIANT: the caller's contract.
        self.0 = Some(ah);
    }

    /// Whether there is a handle.
    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// Destroys the handle, if any, and gives its claim back to `budget`, its device's. The
    /// caller makes sure that no send uses it any more. Non-sleeping, so it may run under the
    /// id lock, as cm.c's `cm_free_priv_msg` destroys a MAD's handle.
    pub(crate) fn release(&mut self, budget: &AhBudget) {
        if let Some(ah) = self.0.take() {
            // SAFETY: Ours alone (type invariant), no longer used (caller).
            unsafe { bindings::ibcm_glue_destroy_ah(ah.as_ptr()) };
            budget.held.give_back();
        }
    }
}

impl Drop for ConnAh {
    fn drop(&mut self) {
        // Every holder releases the handle through its device's budget before the id can be
        // freed: an id that holds one is published, and destroy (back to IDLE), its last
        // send's completion or device removal's walk releases it. One still set here would be
        // a bug; its PD may already be gone (ib_mad frees it once removal returns), so it is
        // leaked, loudly, rather than destroyed.
        if self.0.take().is_some() {
            kernel::pr_warn!("connection address handle leaked by a freed id\n");
        }
    }
}
