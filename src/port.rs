// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Per-port CM state: the MAD agent on QP1 and the message counters.
//!
//! Stands for `struct cm_port` and the counter half of cm.c (`cm_show_counter`, the four
//! `cm_*_group`s). The sysfs files themselves are declared in `glue.c`; their `show` reads the
//! counters through `ibcm_rs_counter` (`entry/client.rs`).

use crate::{bindings, logic::wire::ATTR_COUNT};
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Counter groups, in the order of `enum ibcm_counter_group` (`include/ib_cm_glue.h`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Counter {
    /// `cm_tx_msgs`: sent, retries included.
    TxMsgs = 0,
    /// `cm_tx_retries`.
    TxRetries = 1,
    /// `cm_rx_msgs`: every recognised MAD received.
    RxMsgs = 2,
    /// `cm_rx_duplicates`.
    RxDuplicates = 3,
    /// Ours: `cm_tx_timeouts`, tracked messages whose retries ran out (sysfs group 5).
    TxTimeouts = 4,
}

/// One CM-capable port.
///
/// # Invariants
///
/// `agent` is NULL or a MAD agent registered on this port; it is set before the device is
/// published and cleared only by device removal after no more work can run.
pub(crate) struct CmPort {
    port_num: u32,
    agent: AtomicPtr<bindings::ib_mad_agent>,
    counters: [[AtomicU64; ATTR_COUNT]; 5],
    malformed: AtomicU64,
}

impl CmPort {
    /// A port with no agent yet and zeroed counters.
    pub(crate) fn new(port_num: u32) -> Self {
        Self {
            port_num,
            agent: AtomicPtr::new(core::ptr::null_mut()),
            counters: [const { [const { AtomicU64::new(0) }; ATTR_COUNT] }; 5],
            malformed: AtomicU64::new(0),
        }
    }

    /// The port number.
    pub(crate) fn port_num(&self) -> u32 {
        self.port_num
    }

    /// The MAD agent, or NULL before registration / after removal.
    pub(crate) fn agent(&self) -> *mut bindings::ib_mad_agent {
        self.agent.load(Ordering::Acquire)
    }

    pub(crate) fn set_agent(&self, agent: *mut bindings::ib_mad_agent) {
        self.agent.store(agent, Ordering::Release);
    }

    /// Adds `n` to counter `group` of attribute `index` (`attr_id - 0x10`).
    pub(crate) fn count(&self, group: Counter, index: usize, n: u64) {
        // CAST: the discriminant of a fieldless enum, 0..=4.
        if let Some(c) = self.counters.get(group as usize).and_then(|g| g.get(index)) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts a MAD dropped as malformed.
    pub(crate) fn count_malformed(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads counter `index` of sysfs group `group` (`enum ibcm_counter_group`): 0 to 3 are
    /// cm.c's, 4 is our `cm_rx_dropped`, 5 our `cm_tx_timeouts` ([`Counter::TxTimeouts`]).
    pub(crate) fn read(&self, group: usize, index: usize) -> u64 {
        let group = match group {
            4 => {
                return if index == 0 {
                    self.malformed.load(Ordering::Relaxed)
                } else {
                    0
                };
            }
            // CAST: the discriminant of a fieldless enum.
            5 => Counter::TxTimeouts as usize,
            g => g,
        };
        self.counters
            .get(group)
            .and_then(|g| g.get(index))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}
