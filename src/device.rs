// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Per-device CM state and the ib_client "cm".
//!
//! Stands for `cm_add_one()` / `cm_remove_one()` and the device half of `struct cm_device` in
//! cm.c. Unlike cm.c, which keys one global listen tree on the device pointer under one global
//! lock, each device owns its listener tree behind its own lock (see `listen.rs` and
//! `Documentation/locking.rst`).
//!
//! The device's [`CmDevice`] is reached from a `struct ib_device *` through the ib_client data
//! slot. [`CmDevice::get`] reads the slot under RCU and takes an `Arc` reference; removal clears
//! the slot and waits for an RCU grace period before dropping the slot's reference, so a lookup
//! never sees freed memory.

use crate::{
    bindings,
    listen::ListenTable,
    lock::{new_spinlock_irq, SpinLockIrq},
};
use kernel::{
    error::code::ENODEV,
    ffi,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// `-EOPNOTSUPP`, which 6.12's `kernel::error::code` does not name.
pub(crate) fn eopnotsupp() -> Error {
    // CAST: errno constants are small positive integers.
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// CM state of one RDMA device with at least one CM-capable port.
///
/// # Invariants
///
/// `ib_dev` is the device this state was created for in [`ibcm_rs_add_one`]; ib_core keeps it
/// alive at least until [`ibcm_rs_remove_one`] returns, and nothing dereferences it after that.
#[pin_data]
pub(crate) struct CmDevice {
    ib_dev: *mut bindings::ib_device,
    /// Mutable state; the lock is taken after a `CmId`'s lock when both are needed.
    #[pin]
    pub(crate) inner: SpinLockIrq<DeviceInner>,
}

/// The mutable part of [`CmDevice`].
pub(crate) struct DeviceInner {
    /// Set once removal starts; no new listener is accepted afterwards.
    pub(crate) going_down: bool,
    /// Listeners of this device, keyed by service ID.
    pub(crate) listen: ListenTable,
}

// SAFETY: `ib_dev` is only used as an identity and for ib_core calls that are thread-safe; all
// mutable state is behind `inner`'s lock.
unsafe impl Send for CmDevice {}
// SAFETY: See `Send`.
unsafe impl Sync for CmDevice {}

impl CmDevice {
    /// Allocates CM state for `ib_dev`.
    pub(crate) fn new(ib_dev: *mut bindings::ib_device) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                ib_dev,
                inner <- new_spinlock_irq!(
                    DeviceInner { going_down: false, listen: ListenTable::new() },
                    "CmDevice::inner"
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// The ib_core device.
    pub(crate) fn ib_dev(&self) -> *mut bindings::ib_device {
        self.ib_dev
    }

    /// The CM state of `ib_dev`, or `ENODEV` if the CM does not manage that device (no
    /// CM-capable port, not registered, or being removed).
    ///
    /// # Safety
    ///
    /// `ib_dev` must point to a live `struct ib_device` (the caller holds it, as every ib_cm
    /// caller does).
    pub(crate) unsafe fn get(ib_dev: *mut bindings::ib_device) -> Result<Arc<Self>> {
        // SAFETY: Plain RCU read-side critical section, closed below on every path.
        unsafe { bindings::ibcm_glue_rcu_read_lock() };
        // SAFETY: The caller guarantees `ib_dev` is live; the client data slot is read under
        // RCU as ib_core allows.
        let data = unsafe { bindings::ibcm_glue_get_client_data(ib_dev) };
        let dev = if data.is_null() {
            None
        } else {
            // SAFETY: A non-NULL slot holds a pointer from `Arc::into_raw` in `add_one`, whose
            // reference is dropped only after the slot is cleared and an RCU grace period has
            // elapsed; we are inside the read-side critical section, so it is still held.
            let borrowed = unsafe { ArcBorrow::<CmDevice>::from_raw(data.cast()) };
            Some(Arc::from(borrowed))
        };
        // SAFETY: Closes the critical section opened above.
        unsafe { bindings::ibcm_glue_rcu_read_unlock() };
        match dev {
            Some(dev) if !dev.inner.lock().going_down => Ok(dev),
            _ => Err(ENODEV),
        }
    }
}

/// `ib_client.add`: creates CM state for a device with at least one CM-capable port.
///
/// # Safety
///
/// Called by ib_core with a registered device.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_add_one(ib_dev: *mut bindings::ib_device) -> ffi::c_int {
    // SAFETY: ib_core passes a live, registered device.
    let (first, last) = unsafe {
        (
            bindings::ibcm_glue_start_port(ib_dev),
            bindings::ibcm_glue_end_port(ib_dev),
        )
    };
    // SAFETY: As above; every port number is in the device's valid range.
    let capable = (first..=last).any(|port| unsafe { bindings::ibcm_glue_cap_ib_cm(ib_dev, port) });
    if !capable {
        // As cm.c: the core then keeps no client data and never calls remove.
        return eopnotsupp().to_errno();
    }
    match CmDevice::new(ib_dev) {
        Ok(dev) => {
            // SAFETY: `ib_dev` is live; the slot takes over the reference from `into_raw`.
            unsafe { bindings::ibcm_glue_set_client_data(ib_dev, Arc::into_raw(dev) as *mut _) };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `ib_client.remove`: stops accepting listeners and releases the device's CM state.
///
/// Listeners still in the tree keep the state alive (each `CmId` holds an `Arc`) until their
/// owners destroy them, so a forgotten listener is a reported leak, never a dangling pointer.
///
/// # Safety
///
/// Called by ib_core with the device and the client data set by [`ibcm_rs_add_one`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_remove_one(
    ib_dev: *mut bindings::ib_device,
    client_data: *mut ffi::c_void,
) {
    if client_data.is_null() {
        return;
    }
    // SAFETY: `client_data` came from `Arc::into_raw` in `ibcm_rs_add_one`; this is the one
    // place that takes that reference back.
    let dev = unsafe { Arc::<CmDevice>::from_raw(client_data.cast()) };
    let leftover = {
        let mut inner = dev.inner.lock();
        inner.going_down = true;
        inner.listen.len()
    };
    if leftover != 0 {
        pr_warn!("ib_cm: device removed with {leftover} listener(s) not destroyed\n");
    }
    // SAFETY: `ib_dev` is live during remove; clearing the slot stops new lookups, and the
    // grace period lets lookups already inside their RCU section take their reference first.
    unsafe {
        bindings::ibcm_glue_set_client_data(ib_dev, core::ptr::null_mut());
        bindings::ibcm_glue_synchronize_rcu();
    }
    drop(dev);
}

/// Registers the ib_client "cm"; ib_core calls `add` for every existing device.
pub(crate) fn register_client() -> Result {
    // SAFETY: Called once from module init; the client struct lives in glue.c.
    kernel::error::to_result(unsafe { bindings::ibcm_glue_register_client() })
}

/// Unregisters the ib_client; ib_core calls `remove` for every device first.
pub(crate) fn unregister_client() {
    // SAFETY: Called once from module exit, after a successful `register_client`.
    unsafe { bindings::ibcm_glue_unregister_client() }
}
