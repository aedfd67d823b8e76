// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The ib_client "cm" (`cm_add_one()`, `cm_remove_one()` in cm.c), the reply-cache sweep
//! work and the sysfs counter files: what ib_core, sysfs and the workqueue call for a device.
//! The device object (`device.rs`) exposes its parts; teardown, which crosses the receive
//! work, timewait and the ids' connection handles, is ordered here.

use crate::{
    bindings,
    cm_id::CmDevice,
    comm_id, conn,
    entry::debugfs,
    error,
    port::CmPort,
    timewait,
    wq::{self, DevWork},
};
use kernel::{alloc::KVec, ffi, prelude::*, sync::Arc};

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
    let mut ports = KVec::new();
    for port in first..=last {
        // SAFETY: As above; `port` is in the device's valid range.
        if unsafe { bindings::ibcm_glue_cap_ib_cm(ib_dev, port) } {
            if let Err(e) = CmPort::new(port).and_then(|p| Ok(ports.push(p, GFP_KERNEL)?)) {
                return e.to_errno();
            }
        }
    }
    if ports.is_empty() {
        // As cm.c: the core then keeps no client data and never calls remove.
        return error::eopnotsupp().to_errno();
    }
    let dev = match CmDevice::new(ib_dev, ports) {
        Ok(dev) => dev,
        Err(e) => return e.to_errno(),
    };
    if let Err((e, registered)) = dev.register_ports() {
        // The ports registered before the failure may have queued receive work (which may
        // send, and arm the reply cache's sweep): shut them down as removal does.
        dev.mark_going_down();
        shut_down(&dev, registered);
        return e.to_errno();
    }
    dev.set_debugfs(debugfs::add(&dev));
    // SAFETY: `ib_dev` is live; the slot takes over the reference from `into_raw`.
    unsafe { bindings::ibcm_glue_set_client_data(ib_dev, Arc::into_raw(dev) as *mut _) };
    0
}

/// `ib_client.remove`: stops all traffic, tears the ports down in cm.c's order and releases
/// the device's CM state.
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
    // 0. Its debugfs files go first (this waits for their readers).
    debugfs::remove(dev.take_debugfs());
    // 1. No new work is queued, no new send starts, no new listener is accepted.
    dev.mark_going_down();
    // Ids left in the remote tables are not counted here: the tables are the CM's, and a walk
    // of all of them under their lock for a diagnostic is not worth it (an id left at module
    // exit is reported when the tables go).
    let leftover = dev.inner.lock().listen.len();
    if leftover != 0 {
        pr_warn!("device removed with {leftover} listener(s) not destroyed\n");
    }
    // 2. Receive callbacks already past their gate finish queueing, sends already past theirs
    //    finish posting; queued receive work runs (and sends nothing, the device is going
    //    down); cached reply handles go before their agents' protection domain (sends still
    //    using one hold it until unregistering the agent completes them); 3. the agents go
    //    (waiting for their callbacks), then the sysfs groups.
    shut_down(&dev, dev.port_count());
    // SAFETY: `ib_dev` is live during remove; clearing the slot stops new lookups, and the
    // grace period lets lookups already inside their RCU section take their reference first.
    unsafe {
        bindings::ibcm_glue_set_client_data(ib_dev, core::ptr::null_mut());
        bindings::synchronize_rcu();
    }
    // Comm-table references of destroyed ids are dropped by RCU callbacks; let those run
    // before the device's state goes.
    comm_id::barrier();
    drop(dev);
}

/// Tears down the first `registered` ports of a device marked `going_down`, in cm.c's order
/// (`cm_remove_one`): CM support off, receive callbacks past the receive gate done queueing,
/// sends past the send gate drained, queued receive work run, the timewaits still queued
/// ended, the ids' connection address handles given up and the reply cache closed (and its
/// sweep stopped), then the agents (waiting for their callbacks, which destroy the handles
/// still in use) and the sysfs groups. Every handle made on the port's MAD protection domain
/// is gone when this returns: ib_mad frees that domain after.
fn shut_down(dev: &CmDevice, registered: usize) {
    dev.quiesce(registered);
    wq::flush();
    timewait::end_all(dev);
    // No send starts any more (nor queues the flow-control kick): what still waits in the
    // flow-control backlogs never goes out.
    dev.stop_flow_kick();
    super::mad_agent::flush_backlogs(dev);
    // No send starts any more: the ids' connection address handles go now if idle, else
    // with the completions that the agents' unregistration below flushes.
    conn::retire_conn_ahs(dev);
    dev.unregister_ports(registered);
}

/// The reply-cache sweep of a device ([`CmDevice::sweep_reply_ahs`]).
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for the `sweep` work of a live [`CmDevice`]:
/// removal cancels the work before it drops the device's last reference from ib_core.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_reply_sweep(dw: *mut bindings::delayed_work) {
    // SAFETY: `dw` is the `sweep` field of a live `CmDevice` (caller contract).
    let dev = unsafe { CmDevice::from_work(dw, DevWork::Sweep) };
    dev.sweep_reply_ahs();
}

/// `show` of every counter file in sysfs.
///
/// # Safety
///
/// Called by sysfs (through `glue.c`) with a registered device and one of its port numbers.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_counter(
    ib_dev: *mut bindings::ib_device,
    port_num: u32,
    group: ffi::c_uint,
    index: ffi::c_uint,
) -> i64 {
    // SAFETY: The device is live while its sysfs files exist; the groups are removed before
    // the client data is cleared, so the slot holds our reference here.
    let Ok(dev) = (unsafe { CmDevice::get_any(ib_dev) }) else {
        return 0;
    };
    // Ours: the device's ids in timewait and destroys that waited past their budget, shown
    // on each of its ports (both are the device's, as its timewait queue is).
    if group == bindings::ibcm_counter_group_IBCM_IDS {
        let value = match index {
            0 => u64::from(dev.inner.lock().timewait.len()),
            1 => dev.slow_destroys(),
            _ => 0,
        };
        return i64::try_from(value).unwrap_or(i64::MAX);
    }
    let value = dev.port(port_num).map_or(0, |p| {
        p.read(
            usize::try_from(group).unwrap_or(usize::MAX),
            usize::try_from(index).unwrap_or(usize::MAX),
        )
    });
    i64::try_from(value).unwrap_or(i64::MAX)
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
