// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A `struct completion`: the last-reference wait of `ib_destroy_cm_id()`.
//!
//! `init_completion()` is inline, so it goes through `glue.c`; `complete()` and
//! `wait_for_completion_timeout()` are exported kernel functions.

use crate::bindings;
use kernel::{prelude::*, types::Opaque};

/// A one-shot completion.
#[pin_data]
pub(crate) struct Completion {
    #[pin]
    inner: Opaque<bindings::completion>,
}

// SAFETY: A `struct completion` is designed to be signalled and waited on from any thread.
unsafe impl Send for Completion {}
// SAFETY: See above; all access goes through the kernel's own synchronised functions.
unsafe impl Sync for Completion {}

impl Completion {
    /// An initialiser for a not-yet-completed completion.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid for writes while the closure runs.
            inner <- Opaque::ffi_init(|slot| unsafe { bindings::ibcm_glue_init_completion(slot) }),
        })
    }

    /// Wakes the waiter.
    pub(crate) fn complete(&self) {
        // SAFETY: `inner` was initialised by `new` and is pinned.
        unsafe { bindings::complete(self.inner.get()) }
    }

    /// Waits up to `ms` milliseconds; returns whether the completion was signalled.
    pub(crate) fn wait_timeout_ms(&self, ms: u32) -> bool {
        // SAFETY: Plain conversion function without preconditions.
        let jiffies = unsafe { bindings::__msecs_to_jiffies(ms) };
        // SAFETY: `inner` was initialised by `new` and is pinned.
        unsafe { bindings::wait_for_completion_timeout(self.inner.get(), jiffies) != 0 }
    }
}
