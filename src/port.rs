// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Per-port CM state: the MAD agent on QP1 and the message counters.
//!
//! Stands for `struct cm_port` and the counter half of cm.c (`cm_show_counter`, the four
//! `cm_*_group`s). The sysfs files themselves are declared in `glue.c`; their `show` reads the
//! counters through `ibcm_rs_counter` (`entry/client.rs`).

use crate::{
    backlog::Flow,
    bindings,
    lock::{new_spinlock_irq, SpinLockIrq, SpinLockIrqGuard},
    logic::{
        flow,
        wire::{AttrId, ATTR_COUNT},
    },
    send_pool::SendPool,
    use_count::Places,
};
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use kernel::prelude::*;

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

/// REJ reasons counted apart: IBTA's 1 to 35 (34 is unassigned), and 0 for any other
/// (`IBCM_REJ_SLOTS` in `ib_cm_glue.h`).
pub(crate) const REJ_REASONS: usize = 36;

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
    /// Received MADs queued for the CM's work and not yet handled (`logic::flow::admit_recv`);
    /// refused: those dropped because too many waited (`cm_rx_dropped/overload`).
    recv: Places,
    /// REJs sent (`[0]`) and received (`[1]`), by reason (`[.][0]`: a reason IBTA does not
    /// define).
    rej: [[AtomicU64; REJ_REASONS]; 2],
    /// Flow control of the controlled MADs sent from this port (`send.rs`). Taken inside an
    /// id's lock, never the other way round.
    flow: Pin<KBox<SpinLockIrq<Flow>>>,
    /// Spare send buffers of the agent (`send_pool.rs`). A leaf lock: nothing is taken
    /// inside it.
    pool: Pin<KBox<SpinLockIrq<SendPool>>>,
}

impl CmPort {
    /// A port with no agent yet, zeroed counters and nothing outstanding.
    pub(crate) fn new(port_num: u32) -> Result<Self> {
        Ok(Self {
            port_num,
            agent: AtomicPtr::new(core::ptr::null_mut()),
            counters: [const { [const { AtomicU64::new(0) }; ATTR_COUNT] }; 5],
            malformed: AtomicU64::new(0),
            recv: Places::new(),
            rej: [const { [const { AtomicU64::new(0) }; REJ_REASONS] }; 2],
            flow: KBox::pin_init(new_spinlock_irq!(Flow::new(), "CmPort::flow"), GFP_KERNEL)?,
            pool: KBox::pin_init(
                new_spinlock_irq!(SendPool::new(), "CmPort::pool"),
                GFP_KERNEL,
            )?,
        })
    }

    /// The port's spare send buffers, locked.
    pub(crate) fn pool(&self) -> SpinLockIrqGuard<'_, SendPool> {
        self.pool.lock()
    }

    /// The port's flow-control state, locked.
    pub(crate) fn flow(&self) -> SpinLockIrqGuard<'_, Flow> {
        self.flow.lock()
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

    /// Counts a REJ sent (`sent`) or received, with its reason.
    pub(crate) fn count_rej(&self, sent: bool, reason: u16) {
        let i = match reason {
            1..=33 | 35 => usize::from(reason),
            _ => 0,
        };
        self.rej[usize::from(!sent)][i].fetch_add(1, Ordering::Relaxed);
    }

    /// The REJs sent (`sent`) or received, by reason slot.
    pub(crate) fn rej_counts(&self, sent: bool) -> [u64; REJ_REASONS] {
        let mut out = [0; REJ_REASONS];
        for (o, c) in out.iter_mut().zip(&self.rej[usize::from(!sent)]) {
            *o = c.load(Ordering::Relaxed);
        }
        out
    }

    /// Counts a MAD dropped as malformed.
    pub(crate) fn count_malformed(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes a place in the port's queue of received MADs for one of `attr`, under `limit`
    /// (`tunables::recv_queue_limit`); false, counted, if it is to be dropped. A place taken
    /// is given back by [`CmPort::recv_done`] when the MAD's work ends.
    pub(crate) fn queue_recv(&self, limit: u32, attr: AttrId) -> bool {
        self.recv.take(|q| flow::admit_recv(q, limit, attr))
    }

    /// Gives back the place of a received MAD whose work ended.
    pub(crate) fn recv_done(&self) {
        self.recv.give_back();
    }

    /// Received MADs waiting for the CM's work now, and those dropped as too many so far.
    pub(crate) fn recv_stats(&self) -> (u32, u64) {
        (self.recv.taken(), self.recv.refused())
    }

    /// Reads counter `index` of sysfs group `group` (`enum ibcm_counter_group`): 0 to 3 are
    /// cm.c's, 4 is our `cm_rx_dropped` (`malformed`, `overload`), 5 our `cm_tx_timeouts` ([`Counter::TxTimeouts`]), 6
    /// our `cm_flow` ([`FlowStats`], in its field order), 7 and 8 our `cm_rej_sent` and
    /// `cm_rej_rcvd` (by reason).
    pub(crate) fn read(&self, group: usize, index: usize) -> u64 {
        let group = match group {
            7 | 8 => {
                return self.rej[group - 7]
                    .get(index)
                    .map_or(0, |c| c.load(Ordering::Relaxed));
            }
            6 => {
                let s = self.flow_stats();
                return match index {
                    0 => s.limit.map_or(0, u64::from),
                    1 => u64::from(s.outstanding),
                    2 => u64::from(s.queued),
                    3 => u64::from(s.high_water),
                    4 => s.refused,
                    _ => 0,
                };
            }
            4 => {
                return match index {
                    0 => self.malformed.load(Ordering::Relaxed),
                    1 => self.recv.refused(),
                    _ => 0,
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

/// A port's flow-control figures, for sysfs (`cm_flow`) and debugfs (`flow`).
pub(crate) struct FlowStats {
    /// The limit in force (`None`: flow control off).
    pub(crate) limit: Option<u32>,
    /// Controlled MADs at the MAD layer.
    pub(crate) outstanding: u32,
    /// Controlled MADs waiting in the backlog.
    pub(crate) queued: u32,
    /// The most that ever waited at once.
    pub(crate) high_water: u32,
    /// Sends refused because the backlog was full.
    pub(crate) refused: u64,
}

impl CmPort {
    /// The port's flow-control figures now.
    pub(crate) fn flow_stats(&self) -> FlowStats {
        let param = crate::tunables::flow_control().limit;
        let f = self.flow();
        FlowStats {
            limit: crate::logic::flow::limit(param, f.derived_limit),
            outstanding: f.outstanding,
            queued: f.queued(),
            high_water: f.high_water,
            refused: f.refused,
        }
    }
}

const _: () = assert!(REJ_REASONS == bindings::IBCM_REJ_SLOTS as usize);
