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

/// The parameters, each read once; an administrator changing two at the same moment may be
/// seen half-way (harmless: a cap wins over a floor either way).
fn read() -> bindings::ibcm_tunables {
    let mut t = bindings::ibcm_tunables {
        mra_wait_once: false,
        retry_backoff_after: -1,
        cm_response_timeout_floor: 0,
        cm_response_timeout_cap: 31,
        cm_retries_floor: 0,
        cm_retries_cap: 15,
        flow_control_limit: -1,
        flow_control_backlog: 16384,
    };
    // SAFETY: Fills the struct `t` points at from the module parameters.
    unsafe { bindings::ibcm_glue_tunables(&mut t) };
    t
}

/// The retry policy (`mra_wait_once`, `retry_backoff_after`).
pub(crate) fn retry_policy() -> RetryPolicy {
    let t = read();
    RetryPolicy {
        mra_once: t.mra_wait_once,
        backoff_after: u8::try_from(t.retry_backoff_after).ok(),
    }
}

/// The bounds on the CM response timeouts and retry counts callers pass
/// (`cm_response_timeout_floor`/`_cap`, `cm_retries_floor`/`_cap`).
pub(crate) fn bounds() -> Bounds {
    let t = read();
    Bounds {
        timeout_floor: t.cm_response_timeout_floor,
        timeout_cap: t.cm_response_timeout_cap,
        retries_floor: t.cm_retries_floor,
        retries_cap: t.cm_retries_cap,
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
    let t = read();
    FlowControl {
        limit: t.flow_control_limit,
        backlog: u32::try_from(t.flow_control_backlog).unwrap_or(0),
    }
}

/// `recv_queue_limit`: how many received MADs a port may have waiting for the CM's work
/// (`0`: no limit), read by every received MAD.
pub(crate) fn recv_queue_limit() -> u32 {
    // SAFETY: Reads one module parameter.
    unsafe { bindings::ibcm_glue_recv_queue_limit() }
}
