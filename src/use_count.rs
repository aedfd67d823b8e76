// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! An id's uses in flight and the wait for the last one (cm.c's `refcount` and `comp` of
//! `cm_id_private`).
//!
//! The count is the owner's bias plus every use in flight. `ib_destroy_cm_id()` drops the bias
//! and sleeps until the count is zero. The sleeper waits on the kernel's hashed wait queues
//! keyed by the counter's address (`wait_var_event`), so an id carries 4 bytes for this instead
//! of a `struct completion`: waits are rare (only a destroy that races a use in flight sleeps),
//! and the hashed queue is shared with the rest of the kernel.
//!
//! Beside it, [`Places`]: a bounded count of places with a count of refusals.

use crate::bindings;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The use count; see the module documentation.
pub(crate) struct UseCount(AtomicU32);

impl UseCount {
    /// One use: the owner's bias.
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(1))
    }

    /// Takes one use unless the count already reached zero (`refcount_inc_not_zero`).
    pub(crate) fn get(&self) -> bool {
        let mut n = self.0.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return false;
            }
            match self
                .0
                .compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(cur) => n = cur,
            }
        }
    }

    /// Takes one more use for a holder that knows the count is not zero (it holds a use or
    /// the bias is still there).
    pub(crate) fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends a use; the last one wakes the destroyer. The caller holds memory (an `Arc`) to the
    /// object the count is in, so the address stays valid through the wake.
    pub(crate) fn put(&self) {
        if self.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            wake_zero_waiter(&self.0);
        }
    }

    /// Sleeps up to `ms` milliseconds for the count to reach zero; whether it did.
    pub(crate) fn wait_zero_ms(&self, ms: u32) -> bool {
        wait_zero_ms(&self.0, ms)
    }

    /// The current count, for diagnostics and tests.
    pub(crate) fn load(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Wakes whoever waits in [`wait_zero_ms`] on `counter` (its caller just brought it to zero).
pub(crate) fn wake_zero_waiter(counter: &AtomicU32) {
    // SAFETY: Only the address is used, as the wait queue's key.
    unsafe { bindings::ibcm_glue_wake_var(counter.as_ptr().cast()) };
}

/// Sleeps up to `ms` milliseconds for `counter` to reach zero (woken by
/// [`wake_zero_waiter`]); whether it did.
pub(crate) fn wait_zero_ms(counter: &AtomicU32, ms: u32) -> bool {
    // SAFETY: The counter is live for the call; the glue only reads it (an acquire load) and
    // uses its address as the wait key, as `wake_zero_waiter` does.
    unsafe { bindings::ibcm_glue_wait_var_zero(counter.as_ptr(), ms) }
}

/// Places taken under a bound the taker names, and the takes refused: a device's connection
/// address handles (`ah.rs`), a port's received MADs waiting for the CM (`port.rs`).
pub(crate) struct Places {
    taken: AtomicU32,
    refused: AtomicU64,
}

impl Places {
    /// None taken, none refused.
    pub(crate) const fn new() -> Self {
        Self {
            taken: AtomicU32::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Takes a place if `admit` allows one more with its argument taken already; otherwise
    /// counts a refusal.
    pub(crate) fn take(&self, admit: impl Fn(u32) -> bool) -> bool {
        let taken = self
            .taken
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                admit(n).then_some(n + 1)
            })
            .is_ok();
        if !taken {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Gives back a place [`Places::take`] gave.
    pub(crate) fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::Relaxed);
    }

    /// The places taken now.
    pub(crate) fn taken(&self) -> u32 {
        self.taken.load(Ordering::Relaxed)
    }

    /// The takes refused so far.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}
