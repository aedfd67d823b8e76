// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Introspection: `/sys/kernel/debug/ib_cm/<device>/listeners`, `.../ids`, `.../conn_ahs` and
//! `.../stats`.
//!
//! cm.c has nothing like it. The files are C (`src/debugfs.c`); their contents come from here.
//! Neither file holds a lock across its output, so reading them never stalls the receive
//! path:
//!
//! - `listeners` copies the device's listeners (an `Arc` and the share count each) under the
//!   device lock into a buffer reserved before, then prints them unlocked. Each line shows the
//!   service ID, the share count, the uses in flight (handler invocations and receive-path
//!   lookups beyond the owner's), the handler (`%ps`) and the context (a hashed pointer).
//! - `ids` walks the comm-ID table one id at a time under RCU (as the receive path looks them
//!   up), keeps a reference to the id it prints and prints it unlocked. Each line shows the
//!   local and remote comm ID, the state, the service ID and the connection address handle
//!   (`-` for none, `held`, or `retired`: waiting for its last send) of every id of the
//!   device that has a comm ID (`ib_cm_insert_listen` listeners have none; `ib_cm_listen`
//!   ones show LISTEN).
//! - `conn_ahs` shows the device's budget of connection address handles (`ah.rs`): how many
//!   its ids hold, the limit (`conn_ahs_per_device`), and how many REQs and REPs went on a
//!   handle of their own because the budget was spent or the handle could not be created.
//!
//! - `stats` shows counters cm.c does not keep: `destroy_waits_over_budget`, the destroys of
//!   the device's ids that waited for callbacks longer than the id's retry budget (see
//!   `logic::timeout::destroy_wait_ms`; each also logged, rate limited).
//!
//! All are snapshots that may be a moment stale, good enough to look at a running system.

use crate::{bindings, cm_id::CmDevice, tunables};
use kernel::{alloc::KVec, c_str, prelude::*};

/// Creates the `ib_cm` directory (module init); without debugfs nothing is created.
pub(crate) fn init() {
    // SAFETY: Module init, once.
    unsafe { bindings::ibcm_glue_debugfs_init() }
}

/// Removes the directory (module exit, after every device is gone).
pub(crate) fn exit() {
    // SAFETY: Module exit, once, after `init`.
    unsafe { bindings::ibcm_glue_debugfs_exit() }
}

/// Creates the device's directory and files; their private data is `dev`, which must outlive
/// them (removal calls [`remove`] first). Returns the directory, or NULL without debugfs.
pub(crate) fn add(dev: &CmDevice) -> *mut bindings::dentry {
    let data = core::ptr::from_ref(dev).cast_mut().cast();
    // SAFETY: The device is live (`add_one`); `data` stays valid until `remove`.
    unsafe { bindings::ibcm_glue_debugfs_add_device(dev.ib_dev(), data) }
}

/// Removes a device's directory; returns once no reader is inside its files.
pub(crate) fn remove(dir: *mut bindings::dentry) {
    if !dir.is_null() {
        // SAFETY: `dir` came from `add` and is removed once.
        unsafe { bindings::ibcm_glue_debugfs_remove(dir) }
    }
}

/// The `listeners` file.
///
/// # Safety
///
/// Called by `debugfs.c` with a live `seq_file` and the `CmDevice` given to [`add`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_debugfs_listeners(
    m: *mut bindings::seq_file,
    dev: *mut kernel::ffi::c_void,
) {
    // SAFETY: The files are removed before the device goes (caller contract).
    let dev = unsafe { &*dev.cast::<CmDevice>() };
    // SAFETY: `m` is live for the call.
    unsafe { bindings::ibcm_glue_seq_listeners_header(m) };
    // Reserve outside the lock, copy under it; retry if the tree grew in between.
    let mut want = dev.inner.lock().listen.len() + 8;
    let mut snap;
    loop {
        let Ok(v) = KVec::with_capacity(want, GFP_KERNEL) else {
            return;
        };
        snap = v;
        let left = dev.inner.lock().listen.snapshot(&mut snap);
        if left == 0 || want > 1 << 20 {
            break;
        }
        want += left + 8;
    }
    for (id, shares) in snap.iter() {
        let handler = id
            .handler()
            .map_or(core::ptr::null(), |h| h as *const kernel::ffi::c_void);
        // SAFETY: `m` is live; the values are plain.
        unsafe {
            bindings::ibcm_glue_seq_listener(
                m,
                id.service_id().get(),
                *shares,
                id.users().saturating_sub(1),
                handler,
                id.context(),
            )
        };
    }
}

/// The `ids` file.
///
/// # Safety
///
/// As [`ibcm_rs_debugfs_listeners`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_debugfs_ids(
    m: *mut bindings::seq_file,
    dev: *mut kernel::ffi::c_void,
) {
    // SAFETY: As in `ibcm_rs_debugfs_listeners`.
    let dev = unsafe { &*dev.cast::<CmDevice>() };
    // SAFETY: `m` is live for the call.
    unsafe { bindings::ibcm_glue_seq_ids_header(m) };
    let mut index = 0u32;
    while let Some((id, at)) = crate::comm_id::next_of_device(index, dev) {
        let state = id.cm_state().name();
        let hs = crate::conn::conn_ah_status(&id);
        // SAFETY: `m` is live; `state` and `hs` are valid for their lengths.
        unsafe {
            bindings::ibcm_glue_seq_id(
                m,
                id.local_id(),
                id.remote_id(),
                state.as_ptr().cast(),
                state.len(),
                id.service_id().get(),
                hs.as_ptr().cast(),
                hs.len(),
            )
        };
        drop(id);
        match at.checked_add(1) {
            Some(i) => index = i,
            None => break,
        }
    }
}

/// The `conn_ahs` file.
///
/// # Safety
///
/// As [`ibcm_rs_debugfs_listeners`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_debugfs_conn_ahs(
    m: *mut bindings::seq_file,
    dev: *mut kernel::ffi::c_void,
) {
    // SAFETY: As in `ibcm_rs_debugfs_listeners`.
    let dev = unsafe { &*dev.cast::<CmDevice>() };
    let s = dev.conn_ahs().stats();
    // SAFETY: `m` is live for the call; the values are plain.
    unsafe { bindings::ibcm_glue_seq_conn_ahs(m, s.held, s.limit, s.over_budget, s.failed) };
}

/// The `stats` file.
///
/// # Safety
///
/// As [`ibcm_rs_debugfs_listeners`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_debugfs_stats(
    m: *mut bindings::seq_file,
    dev: *mut kernel::ffi::c_void,
) {
    // SAFETY: As in `ibcm_rs_debugfs_listeners`.
    let dev = unsafe { &*dev.cast::<CmDevice>() };
    let timewait = dev.inner.lock().timewait.len();
    // SAFETY: `m` is live for the call; the values are plain.
    unsafe { bindings::ibcm_glue_seq_stats(m, dev.slow_destroys(), timewait) };
    for port in dev.ports() {
        let f = port.flow_stats();
        let (recv_queued, recv_dropped) = port.recv_stats();
        // SAFETY: `m` is live for the call; the values are plain.
        unsafe {
            bindings::ibcm_glue_seq_flow(
                m,
                port.port_num(),
                f.limit.unwrap_or(0),
                f.outstanding,
                f.queued,
                f.high_water,
                f.refused,
                recv_queued,
                tunables::recv_queue_limit(),
                recv_dropped,
            )
        };
        for (sent, dir) in [(true, c_str!("rej_sent")), (false, c_str!("rej_rcvd"))] {
            let counts = port.rej_counts(sent);
            // SAFETY: `m` is live for the call; `counts` holds `IBCM_REJ_SLOTS` values and
            // `dir` is a C string, both outliving it.
            unsafe {
                bindings::ibcm_glue_seq_rej(m, port.port_num(), dir.as_char_ptr(), counts.as_ptr())
            };
        }
    }
}
