// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! [`Slot`]: an `Option` whose drop costs one test when it is empty.
//!
//! The drop glue of an `Option<T>` whose `T` has a destructor is an out-of-line function that
//! the compiler calls at every scope exit, also for `None`. The table nodes an input unlinks
//! (`remote::Unlinked`) are nearly always none: an exact instruction profile (`make bench-conn
//! TBPROF=1`) once counted 64 calls per connection of one such box's drop glue, most of them
//! for nothing. A `Slot` keeps its value in a `ManuallyDrop` (no drop glue) and drops it
//! itself, after an inlined test, only when there is one.

use core::mem::ManuallyDrop;

/// An optional `T`, dropped with it (as an `Option<T>` is), cheaply when empty.
pub(crate) struct Slot<T>(ManuallyDrop<Option<T>>);

impl<T> Slot<T> {
    /// An empty slot.
    pub(crate) const fn none() -> Self {
        Self(ManuallyDrop::new(None))
    }

    /// A slot holding `v` if there is one.
    pub(crate) const fn from_option(v: Option<T>) -> Self {
        Self(ManuallyDrop::new(v))
    }

    /// Takes the value out, leaving the slot empty.
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take()
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self::none()
    }
}

impl<T> Drop for Slot<T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_value(self.0.take());
        }
    }
}

/// The out-of-line part of [`Slot`]'s drop, for a slot that holds something.
#[inline(never)]
fn drop_value<T>(v: Option<T>) {
    drop(v);
}
