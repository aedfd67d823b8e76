// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! An IRQ-saving spinlock for `kernel::sync::Lock`.
//!
//! 6.12's `SpinLock` disables neither interrupts nor saves their state, but the CM's locks are
//! taken from hard-IRQ context (`ib_cm_notify()` from QP event handlers, spec section 3.1) and
//! nest inside each other, so every CM spinlock saves and restores the IRQ state, like cm.c's
//! `spin_lock_irqsave()`. That macro expands to `_raw_spin_lock_irqsave()` on the lock's
//! `raw_spinlock_t`, an exported function the kernel crate's bindings carry, which the lock
//! and unlock halves call directly (no C wrapper per lock); only the initialisation, which
//! needs the lock class, is a `glue.c` helper. PREEMPT_RT (a sleeping `spinlock_t`) is not
//! supported by this backend.

// Where the RCU calls are compiler barriers (below), their blocks have nothing to check.
#![cfg_attr(
    not(any(
        CONFIG_DEBUG_LOCK_ALLOC,
        CONFIG_PREEMPT_RCU,
        CONFIG_PREEMPT_COUNT,
        CONFIG_RCU_STRICT_GRACE_PERIOD
    )),
    allow(unused_unsafe)
)]

use crate::bindings;
use kernel::{ffi, sync::lock::Backend, sync::lock::Lock};

/// A spinlock that disables local interrupts while held, saving and restoring their state.
pub(crate) type SpinLockIrq<T> = Lock<T, IrqSaveSpinLockBackend>;

/// The guard of a [`SpinLockIrq`].
pub(crate) type SpinLockIrqGuard<'a, T> = kernel::sync::lock::Guard<'a, T, IrqSaveSpinLockBackend>;

/// Creates a [`SpinLockIrq`] initialiser with a static lock class named `$name`.
macro_rules! new_spinlock_irq {
    ($inner:expr, $name:literal) => {
        $crate::lock::SpinLockIrq::new(
            $inner,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_spinlock_irq;

// A `spinlock_t` is its `raw_spinlock_t` (the first member of its union), and the raw lock
// functions are what `spin_lock_irqsave()` calls, only without PREEMPT_RT.
#[cfg(CONFIG_PREEMPT_RT)]
compile_error!("ib_cm-rs's IRQ-saving spinlock needs a kernel without PREEMPT_RT");

/// [`Backend`] over `spin_lock_irqsave()` / `spin_unlock_irqrestore()`.
pub(crate) struct IrqSaveSpinLockBackend;

// SAFETY: `lock` takes the spinlock and `unlock` releases it, so at most one guard exists at a
// time; the saved IRQ flags travel in the guard state from `lock` to `unlock`.
unsafe impl Backend for IrqSaveSpinLockBackend {
    type State = bindings::spinlock_t;
    type GuardState = ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The caller guarantees `ptr` is valid for writes and that `name` and `key`
        // live forever, which is what `__spin_lock_init` needs.
        unsafe { bindings::ibcm_glue_spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees the lock was initialised by `init`; its
        // `raw_spinlock_t` is at offset 0 (`spinlock_check()`).
        unsafe { bindings::_raw_spin_lock_irqsave(ptr.cast::<bindings::raw_spinlock_t>()) }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock; `guard_state` holds the flags `lock` saved.
        unsafe {
            bindings::_raw_spin_unlock_irqrestore(
                ptr.cast::<bindings::raw_spinlock_t>(),
                *guard_state,
            )
        }
    }
}

// `rcu_read_lock()` and `rcu_read_unlock()` are static inlines, so bindgen gives none; 6.12's
// kernel crate has no RCU guard. What they expand to depends on the configuration, and each
// case is called here as directly as it can be:
// - with lockdep's RCU map (`DEBUG_LOCK_ALLOC`) they also acquire and release that map, so the
//   `glue.c` wrappers are called;
// - otherwise, with preemptible RCU (Debian's kernels: `PREEMPT_DYNAMIC`), they are the
//   exported `__rcu_read_lock()` and `__rcu_read_unlock()`, called directly;
// - otherwise they are `preempt_disable()` and `preempt_enable()`, which without a preempt
//   count (`PREEMPT_COUNT` off, and no `RCU_STRICT_GRACE_PERIOD` check) are compiler barriers;
// - with a preempt count, the `glue.c` wrappers again.
#[cfg(all(not(CONFIG_DEBUG_LOCK_ALLOC), CONFIG_PREEMPT_RCU))]
use bindings::{__rcu_read_lock as rcu_read_lock, __rcu_read_unlock as rcu_read_unlock};
#[cfg(any(
    CONFIG_DEBUG_LOCK_ALLOC,
    all(
        not(CONFIG_PREEMPT_RCU),
        any(CONFIG_PREEMPT_COUNT, CONFIG_RCU_STRICT_GRACE_PERIOD)
    )
))]
use bindings::{
    ibcm_glue_rcu_read_lock as rcu_read_lock, ibcm_glue_rcu_read_unlock as rcu_read_unlock,
};

#[cfg(not(any(
    CONFIG_DEBUG_LOCK_ALLOC,
    CONFIG_PREEMPT_RCU,
    CONFIG_PREEMPT_COUNT,
    CONFIG_RCU_STRICT_GRACE_PERIOD
)))]
mod barrier_rcu {
    use core::sync::atomic::{compiler_fence, Ordering};

    /// `rcu_read_lock()` here: `preempt_disable()` without a preempt count, `barrier()`.
    #[inline(always)]
    pub(super) fn rcu_read_lock() {
        compiler_fence(Ordering::SeqCst);
    }

    /// `rcu_read_unlock()` here: `barrier()`, as [`rcu_read_lock`].
    #[inline(always)]
    pub(super) fn rcu_read_unlock() {
        compiler_fence(Ordering::SeqCst);
    }
}
#[cfg(not(any(
    CONFIG_DEBUG_LOCK_ALLOC,
    CONFIG_PREEMPT_RCU,
    CONFIG_PREEMPT_COUNT,
    CONFIG_RCU_STRICT_GRACE_PERIOD
)))]
use barrier_rcu::{rcu_read_lock, rcu_read_unlock};

/// An RCU read-side critical section (`rcu_read_lock()`), ended when dropped. Not `Send`: the
/// section belongs to its thread.
pub(crate) struct RcuGuard(core::marker::PhantomData<*mut ()>);

impl RcuGuard {
    /// Enters a read-side critical section.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        // SAFETY: Plain RCU read lock, released by `drop` on the same thread. (A safe call
        // where it is a compiler barrier.)
        unsafe { rcu_read_lock() };
        Self(core::marker::PhantomData)
    }
}

impl Drop for RcuGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: Ends the section `new` began.
        unsafe { rcu_read_unlock() };
    }
}
