// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The administrator's tunables: module parameters in `/sys/module/ib_cm/parameters/` (kept
//! by `glue.c`, documented in `Documentation/install.rst`), read afresh by every send that
//! needs them, so a change applies to the next message.
//!
//! cm.c has none of these; their defaults are its behaviour.

use crate::{
    bindings,
    logic::timeout::{Bounds, RetryPolicy},
};

/// One parameter's value now: one load of its field of `glue.c`'s `ibcm_params`, no call.
/// Parameters read together may be seen half-way through an administrator's change of two at
/// once (harmless: a cap wins over a floor either way).
macro_rules! tunable {
    ($field:ident) => {
        // SAFETY: `ibcm_params` is a global of `glue.c` (static storage), live while the
        // module is; sysfs writes each field whole, so a volatile load of the aligned field
        // reads one value of its C type (a `bool` only ever holds 0 or 1).
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!(bindings::ibcm_params.$field)) }
    };
}

/// A parameter the range setter keeps in `0..=255`, as a `u8` (out of range cannot happen;
/// it would read as the widest value).
fn small(v: i32) -> u8 {
    u8::try_from(v).unwrap_or(u8::MAX)
}

/// The retry policy (`mra_wait_once`, `retry_backoff_after`).
pub(crate) fn retry_policy() -> RetryPolicy {
    RetryPolicy {
        mra_once: tunable!(mra_wait_once),
        backoff_after: u8::try_from(tunable!(retry_backoff_after)).ok(),
    }
}

/// The bounds on the CM response timeouts and retry counts callers pass
/// (`cm_response_timeout_floor`/`_cap`, `cm_retries_floor`/`_cap`).
pub(crate) fn bounds() -> Bounds {
    Bounds {
        timeout_floor: small(tunable!(cm_response_timeout_floor)),
        timeout_cap: small(tunable!(cm_response_timeout_cap)),
        retries_floor: small(tunable!(cm_retries_floor)),
        retries_cap: small(tunable!(cm_retries_cap)),
    }
}

/// The flow-control parameters (`flow_control_limit`, `flow_control_backlog`).
pub(crate) struct FlowControl {
    /// `-1`: the port's derived limit; `0`: none; `n`: at most `n` outstanding.
    pub(crate) limit: i32,
    /// How many may wait per port.
    pub(crate) backlog: u32,
}

/// The flow-control parameters now.
pub(crate) fn flow_control() -> FlowControl {
    FlowControl {
        limit: tunable!(flow_control_limit),
        backlog: u32::try_from(tunable!(flow_control_backlog)).unwrap_or(0),
    }
}

/// `recv_queue_limit`: how many received MADs a port may have waiting for the CM's work
/// (`0`: no limit), read by every received MAD.
pub(crate) fn recv_queue_limit() -> u32 {
    u32::try_from(tunable!(recv_queue_limit)).unwrap_or(0)
}

/// `conn_ahs_per_device`: below zero half the device's `max_ah`, zero none, else a cap
/// (`ah.rs`).
pub(crate) fn conn_ahs_per_device() -> i32 {
    tunable!(conn_ahs_per_device)
}

/// `send_pool_size`: how many spare send buffers a port keeps (`send_pool.rs`; 0: none).
pub(crate) fn send_pool_size() -> u32 {
    u32::try_from(tunable!(send_pool_size)).unwrap_or(0)
}
