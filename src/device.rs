// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Per-device CM state: ports, gates, reply cache and the device's id containers.
//!
//! Stands for `struct cm_device` in cm.c; the ib_client callbacks (`cm_add_one()`,
//! `cm_remove_one()`) are in `entry/client.rs`. Unlike cm.c,
//! which keys one global listen tree on the device pointer under one global lock, each device
//! owns its listener tree behind its own lock (see `listen.rs` and `Documentation/locking.rst`).
//!
//! The device's [`CmDevice`] is reached from a `struct ib_device *` through the ib_client data
//! slot. [`CmDevice::get`] reads the slot under RCU and takes an `Arc` reference; removal clears
//! the slot and waits for an RCU grace period before dropping the slot's reference, so a lookup
//! never sees freed memory. The MAD agents' context is the same object: it stays alive until
//! after the agents are unregistered.

use crate::alloc::CmBox;
use crate::{
    ah::AhBudget,
    av::{Av, SgidAttr},
    bindings,
    listen::ListenTable,
    lock::{new_spinlock_irq, RcuGuard, SpinLockIrq},
    logic::timeout,
    port::CmPort,
    recv_wc::RecvWc,
    reply_ah::{self, ReplyAh, ReplyAhCache},
    tw_queue::TimewaitQueue,
    use_count,
    wq::{DelayedWork, DevWork},
};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use kernel::{
    alloc::KVec,
    error::code::ENODEV,
    ffi,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// CM state of one RDMA device with at least one CM-capable port, whose ids are of type `I`
/// (`CmId`: the id holds its device, so the device is generic over the id type to keep this
/// file from naming it; `cm_id::CmDevice` is the one instance).
///
/// # Invariants
///
/// `ib_dev` is the device this state was created for in `ibcm_rs_add_one` (`entry/client.rs`); ib_core keeps it
/// alive at least until `ibcm_rs_remove_one` returns, and nothing dereferences it after that.
#[pin_data]
pub(crate) struct DeviceOf<I> {
    ib_dev: *mut bindings::ib_device,
    /// The CM-capable ports; fixed after creation.
    ports: KVec<CmPort>,
    /// Mutable state; the lock is taken after a `CmId`'s lock when both are needed.
    #[pin]
    pub(crate) inner: SpinLockIrq<DeviceInner<I>>,
    /// Sends in flight, and whether removal closed the gate to new ones.
    sends: Gate,
    /// Receive callbacks queueing a received MAD's work item.
    recvs: Gate,
    /// Recent requesters' addresses and reply handles (`reply_ah.rs`); a leaf lock.
    #[pin]
    reply_ahs: SpinLockIrq<ReplyAhCache>,
    /// Evicts expired reply handles when no traffic does (`ibcm_rs_reply_sweep`, [`CmDevice::sweep_reply_ahs`]); queued
    /// only under `reply_ahs`'s lock while the cache is open, retired by removal.
    #[pin]
    sweep: DelayedWork,
    /// Lets waiting MADs out when slots are free without a completion to do it (a raised
    /// `flow_control_limit`): `ibcm_rs_flow_kick`; queued only inside the send gate, retired
    /// by removal.
    #[pin]
    flow_kick: DelayedWork,
    /// Ends the due timewaits of the device's ids (`timewait.rs`); queued only under `inner`'s
    /// lock while the device is not going down, run a last time by removal.
    #[pin]
    pub(crate) timewait: DelayedWork,
    /// The device's debugfs directory (`entry/debugfs.rs`), NULL without one; removed first by
    /// removal.
    debugfs: AtomicPtr<bindings::dentry>,
    /// The connection address handles its ids hold (`ah.rs`).
    conn_ahs: AhBudget,
    /// Destroys of its ids that waited for callbacks longer than the id's budget
    /// (`logic::timeout::destroy_wait_ms`).
    slow_destroys: AtomicU64,
    /// The `ib_device` attributes the protocol reads, fixed at registration, so read once
    /// here (each read through the live device cost a pass of the send gate).
    attrs: DevAttrs,
}

/// The fixed attributes of an `ib_device` that the CM's messages and QP attributes carry.
#[derive(Default)]
struct DevAttrs {
    /// `node_guid`, as stored (big-endian).
    node_guid: u64,
    /// `attrs.local_ca_ack_delay`.
    ack_delay: u8,
    /// Whether `attrs.device_cap_flags` has the FLUSH capabilities.
    flush: bool,
}

/// The mutable part of [`DeviceOf`].
pub(crate) struct DeviceInner<I> {
    /// Set once removal starts: no listener is accepted, no work is queued, no MAD is sent.
    pub(crate) going_down: bool,
    /// Listeners of this device, keyed by service ID.
    pub(crate) listen: ListenTable<I>,
    /// Ids in timewait, by deadline.
    pub(crate) timewait: TimewaitQueue<I>,
}

// SAFETY: `ib_dev` is only used as an identity and for ib_core calls that are thread-safe; all
// mutable state is behind `inner`'s lock or atomics; the ids the containers hold are shared
// between threads (`I: Send + Sync`).
unsafe impl<I: Send + Sync> Send for DeviceOf<I> {}
// SAFETY: See `Send`.
unsafe impl<I: Send + Sync> Sync for DeviceOf<I> {}

/// A gate of a device, without a lock: the callers between entering it and dropping their
/// [`GateGuard`], and whether removal has closed it. The device has two: one for sends (from
/// [`CmDevice::enter_send`] to the end of their post) and one for the receive callback (from
/// [`CmDevice::enter_recv`] until the received MAD's work item is queued).
///
/// A caller counts itself in, then looks at the gate; removal closes the gate, then (after a full
/// fence) looks at the count. Both sides order their write before their read, so at least one of
/// them sees the other's write: the caller backs out, or removal waits for it (on the count's
/// hashed wait queue, woken by the caller that brings the count to zero once the gate is closed).
struct Gate {
    inflight: AtomicU32,
    closed: AtomicBool,
    /// What passes it, for removal's warning.
    what: &'static str,
}

impl Gate {
    const fn new(what: &'static str) -> Self {
        Self {
            inflight: AtomicU32::new(0),
            closed: AtomicBool::new(false),
            what,
        }
    }

    /// A look at the gate, without passing it: whether removal has not closed it yet (it may
    /// right after).
    fn is_open(&self) -> bool {
        !self.closed.load(Ordering::Relaxed)
    }

    fn enter(&self) -> Option<GateGuard<'_>> {
        // A cheap early look, so callers that bounce off a closed gate do not keep the count
        // above zero under steady traffic; the look after counting in decides.
        if !self.is_open() {
            return None;
        }
        self.inflight.fetch_add(1, Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            self.leave();
            return None;
        }
        Some(GateGuard { gate: self })
    }

    /// The gate itself (`self`, inside the device) is still read after the count drops, when
    /// removal may already be past its drain: the device outlives every caller all the same.
    /// A receive callback runs inside a MAD agent callback, and removal unregisters the agents
    /// (which waits for their callbacks) before it lets the device go; a sender holds an id,
    /// which holds a reference to the device.
    fn leave(&self) {
        if self.inflight.fetch_sub(1, Ordering::SeqCst) == 1 && self.closed.load(Ordering::SeqCst) {
            use_count::wake_zero_waiter(&self.inflight);
        }
    }

    /// Closes the gate: nobody passes it from now on.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // The drain's first look at the count is a plain load (in C): without a full barrier
        // it could pass this store on a weakly ordered CPU and miss a caller that saw the gate
        // open.
        core::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Waits until the callers that passed the gate before it closed have left.
    fn drain(&self) {
        while !use_count::wait_zero_ms(&self.inflight, 10_000) {
            pr_warn!("device removal waiting for in-flight {}\n", self.what);
        }
    }
}

/// Proof that the device is not going down; keeps removal from unregistering the MAD agents
/// (and, for the receive gate, from flushing the CM workqueue) until it is dropped.
pub(crate) struct GateGuard<'a> {
    gate: &'a Gate,
}

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        self.gate.leave();
    }
}

impl<I> DeviceOf<I> {
    /// Allocates CM state for `ib_dev` with the given CM-capable ports.
    pub(crate) fn new(ib_dev: *mut bindings::ib_device, ports: KVec<CmPort>) -> Result<Arc<Self>> {
        let (max_ah, attrs) = if ib_dev.is_null() {
            // The white-box tests' devices have no ib_core device (and send nothing).
            (0, DevAttrs::default())
        } else {
            // SAFETY: `ib_dev` is live (`add_one`); these attributes are fixed from its
            // registration on.
            unsafe {
                (
                    (*ib_dev).attrs.max_ah,
                    DevAttrs {
                        node_guid: (*ib_dev).node_guid,
                        ack_delay: (*ib_dev).attrs.local_ca_ack_delay,
                        flush: bindings::ibcm_glue_flush_capable(ib_dev),
                    },
                )
            }
        };
        let conn_ahs = AhBudget::new(u32::try_from(max_ah).unwrap_or(0));
        Arc::pin_init(
            pin_init!(Self {
                ib_dev,
                ports,
                inner <- new_spinlock_irq!(
                    DeviceInner {
                        going_down: false,
                        listen: ListenTable::new(),
                        timewait: TimewaitQueue::new(),
                    },
                    "CmDevice::inner"
                ),
                sends: Gate::new("sends"),
                recvs: Gate::new("receive callbacks"),
                reply_ahs <- new_spinlock_irq!(
                    ReplyAhCache::new(kernel::time::msecs_to_jiffies(reply_ah::TTL_MS)),
                    "CmDevice::reply_ahs"
                ),
                flow_kick <- DelayedWork::new(DevWork::FlowKick),
                sweep <- DelayedWork::new(DevWork::Sweep),
                timewait <- DelayedWork::new(DevWork::Timewait),
                debugfs: AtomicPtr::new(core::ptr::null_mut()),
                conn_ahs,
                slow_destroys: AtomicU64::new(0),
                attrs,
            }),
            GFP_KERNEL,
        )
    }

    /// The device whose delayed work `which` is `dw`.
    ///
    /// # Safety
    ///
    /// `dw` must be the `which` field of a live `CmDevice`, which outlives the borrow.
    pub(crate) unsafe fn from_work<'a>(
        dw: *mut bindings::delayed_work,
        which: DevWork,
    ) -> &'a Self {
        let dw = dw.cast::<DelayedWork>();
        // SAFETY: `dw` is the `delayed_work` of field `which` of a live `CmDevice` (caller
        // contract), at the address of its `DelayedWork` (`repr(C)`, the work first).
        unsafe {
            &*match which {
                DevWork::Timewait => kernel::container_of!(dw, Self, timewait),
                DevWork::Sweep => kernel::container_of!(dw, Self, sweep),
                DevWork::FlowKick => kernel::container_of!(dw, Self, flow_kick),
            }
        }
    }

    /// Queues the flow-control kick (no-op if queued already). Called inside the send gate:
    /// removal cancels the work after the send gate closed, so nothing queues it again.
    pub(crate) fn kick_flow(&self) {
        self.flow_kick.queue(0);
    }

    /// Cancels the flow-control kick and waits for a run in progress (removal, after the send
    /// gate closed).
    pub(crate) fn stop_flow_kick(&self) {
        self.flow_kick.retire();
    }

    /// Counts a destroy of one of its ids that waited longer than the id's budget.
    pub(crate) fn count_slow_destroy(&self) {
        self.slow_destroys.fetch_add(1, Ordering::Relaxed);
    }

    /// Destroys of its ids that waited longer than the id's budget.
    pub(crate) fn slow_destroys(&self) -> u64 {
        self.slow_destroys.load(Ordering::Relaxed)
    }

    /// The budget of its ids' connection address handles.
    pub(crate) fn conn_ahs(&self) -> &AhBudget {
        &self.conn_ahs
    }

    /// The ib_core device.
    pub(crate) fn ib_dev(&self) -> *mut bindings::ib_device {
        self.ib_dev
    }

    /// The CM state of port `port_num`, if it is CM-capable.
    pub(crate) fn port(&self, port_num: u32) -> Option<&CmPort> {
        self.ports.iter().find(|p| p.port_num() == port_num)
    }

    /// Marks the device going down (no listener is accepted, no work queued) and closes the
    /// send and receive gates.
    pub(crate) fn mark_going_down(&self) {
        self.inner.lock().going_down = true;
        self.recvs.close();
        self.sends.close();
    }

    /// Allows one send unless the device is going down.
    pub(crate) fn enter_send(&self) -> Option<GateGuard<'_>> {
        self.sends.enter()
    }

    /// Allows the receive callback to queue one received MAD unless the device is going down.
    pub(crate) fn enter_recv(&self) -> Option<GateGuard<'_>> {
        self.recvs.enter()
    }

    /// The address of the sender of the MAD received with `wc` and `grh` on the port of
    /// `agent` (its handle for a reply is made on first use, [`ReplyAh::ah`]): the cached one
    /// if the same sender's address was resolved less than [`reply_ah::TTL_MS`] ago, for an
    /// answer or a dispatched request, else a new one, cached. `None` if the completion does
    /// not say enough to key the cache (the caller resolves it itself).
    ///
    /// # Safety
    ///
    /// `agent` must be this device's registered agent and stay so for the call (the caller
    /// holds a [`GateGuard`] of [`CmDevice::enter_send`] or runs in the device's receive work);
    /// `wc` and `grh` must be valid. May sleep.
    pub(crate) unsafe fn reply_addr(
        &self,
        agent: *mut bindings::ib_mad_agent,
        wc: *const bindings::ib_wc,
        grh: *const bindings::ib_grh,
    ) -> Result<Option<Arc<ReplyAh>>> {
        // SAFETY: The caller guarantees `agent` is registered.
        let port_num = u32::from(unsafe { (*agent).port_num });
        // SAFETY: All-zero is a valid key; the helper fills it.
        let mut key: reply_ah::Key = unsafe { core::mem::zeroed() };
        // SAFETY: Valid agent, completion and header (caller); `key` is a valid output.
        if unsafe { bindings::ibcm_glue_reply_ah_key(agent, wc, grh, &mut key) } != 0 {
            return Ok(None);
        }
        // The tick count is read under the lock: receive work runs on several CPUs, and an
        // entry must never look born after the `now` it is compared with.
        let hit = self.reply_ahs.lock().get(port_num, &key, jiffies());
        if let Some(ah) = hit {
            return Ok(Some(ah));
        }
        // SAFETY: As above; no lock is held.
        let ah = Arc::new(unsafe { ReplyAh::resolve(agent, wc, grh) }?, GFP_KERNEL)?;
        let replaced = {
            let mut cache = self.reply_ahs.lock();
            let replaced = cache.insert(port_num, key, jiffies(), ah.clone());
            if cache.is_open() {
                self.arm_sweep(cache.ttl());
            }
            replaced
        };
        drop(replaced);
        Ok(Some(ah))
    }

    /// Queues the sweep in `delay` jiffies unless it is already pending (which is sooner).
    /// Called with the cache lock held and the cache open, so that removal's cancel is final.
    fn arm_sweep(&self, delay: usize) {
        // Removal closes the cache, then cancels the work: nothing queues it after that.
        self.sweep.queue(delay);
    }

    /// Drops every cached reply address handle (sends still using one keep it until they
    /// complete), for the white-box tests.
    #[cfg(ibcm_kunit)]
    pub(crate) fn clear_reply_ahs(&self) {
        let cached = self.reply_ahs.lock().take_all(false);
        drop(cached);
    }

    /// Device removal: empties the cache for good and stops its sweep.
    fn close_reply_ahs(&self) {
        let cached = self.reply_ahs.lock().take_all(true);
        drop(cached);
        self.sweep.retire();
    }

    /// The cached reply handles' addresses, for the white-box tests.
    #[cfg(ibcm_kunit)]
    pub(crate) fn reply_ah_addresses(&self) -> [usize; reply_ah::SLOTS] {
        self.reply_ahs.lock().addresses()
    }

    /// How many cached reply addresses have made their handle, for the white-box tests.
    #[cfg(ibcm_kunit)]
    pub(crate) fn reply_ah_handles(&self) -> usize {
        self.reply_ahs.lock().handles()
    }

    /// Runs `f` on the ib_core device inside the send gate: `None` once removal closed it.
    /// Ids outlive `remove_one`, after which the `ib_device` may be freed; removal closes the
    /// gate and waits for the callers inside it before it returns.
    fn with_live<R>(&self, f: impl FnOnce(*mut bindings::ib_device) -> R) -> Option<R> {
        let _gate = self.enter_send()?;
        Some(f(self.ib_dev))
    }

    /// Whether removal has not begun yet (the send gate is open): a look, which removal may
    /// overtake right after (what the caller then sends fails at the gate).
    fn up(&self) -> bool {
        self.sends.is_open()
    }

    /// The device's node GUID as it is stored (big-endian), or `None` once removal began.
    pub(crate) fn node_guid(&self) -> Option<u64> {
        self.up().then_some(self.attrs.node_guid)
    }

    /// The device's local CA ACK delay, or `None` once removal began.
    pub(crate) fn ack_delay(&self) -> Option<u8> {
        self.up().then_some(self.attrs.ack_delay)
    }

    /// Whether the device supports the FLUSH access flags; false once removal began.
    pub(crate) fn flush_capable(&self) -> bool {
        self.up() && self.attrs.flush
    }

    /// Whether port `port_num` runs RoCE. `_in_recv`: a received MAD is lent as a `RecvWc`
    /// only between the agent's receive handler and the end of its receive work (an event's
    /// `MadRef` gives its bytes only), which removal waits for (receive gate, workqueue flush)
    /// before `remove_one` returns, so the device is live.
    pub(crate) fn port_is_roce(&self, port_num: u32, _in_recv: &RecvWc) -> bool {
        // SAFETY: Live device (see above).
        unsafe { bindings::ibcm_glue_protocol_roce(self.ib_dev, port_num) }
    }

    /// Whether port `port_num` makes OPA address handles (`rdma_cap_opa_ah`); as
    /// [`CmDevice::port_is_roce`].
    pub(crate) fn port_opa_ah(&self, port_num: u32, _in_recv: &RecvWc) -> bool {
        // SAFETY: Live device (see `port_is_roce`).
        unsafe { bindings::ibcm_glue_cap_opa_ah(self.ib_dev, port_num) }
    }

    /// GID 0 of port `port_num`; as [`CmDevice::port_is_roce`].
    pub(crate) fn port_gid0(&self, port_num: u32, _in_recv: &RecvWc) -> Option<bindings::ib_gid> {
        // SAFETY: All-zero is a valid GID (plain bytes).
        let mut gid: bindings::ib_gid = unsafe { core::mem::zeroed() };
        // SAFETY: Live device (see `port_is_roce`); `gid` is a valid output.
        let ret = unsafe { bindings::rdma_query_gid(self.ib_dev, port_num, 0, &mut gid) };
        (ret == 0).then_some(gid)
    }

    /// The cached P_Key at `index` of port `port_num`; as [`CmDevice::port_is_roce`].
    pub(crate) fn cached_pkey(&self, port_num: u32, index: u16, _in_recv: &RecvWc) -> Option<u16> {
        let mut pkey = 0u16;
        // SAFETY: Live device (see `port_is_roce`); `pkey` is a valid output.
        let ret = unsafe {
            bindings::ib_get_cached_pkey(self.ib_dev, port_num, i32::from(index), &mut pkey)
        };
        (ret == 0).then_some(pkey)
    }

    /// Logs a dropped malformed MAD of port `port_num` (rate-limited); as
    /// [`CmDevice::port_is_roce`].
    pub(crate) fn warn_malformed(&self, port_num: u32, what: &'static CStr, _in_recv: &RecvWc) {
        // SAFETY: Live device (see `port_is_roce`); `what` is a C string.
        unsafe { bindings::ibcm_glue_warn_malformed(self.ib_dev, port_num, what.as_char_ptr()) };
    }

    /// The CM state of `ib_dev`, or `ENODEV` if the CM does not manage that device (no
    /// CM-capable port, not registered, or being removed).
    ///
    /// # Safety
    ///
    /// `ib_dev` must point to a live `struct ib_device` (the caller holds it, as every ib_cm
    /// caller does).
    pub(crate) unsafe fn get(ib_dev: *mut bindings::ib_device) -> Result<Arc<Self>> {
        // SAFETY: Same contract.
        let dev = unsafe { Self::get_any(ib_dev) }?;
        if dev.inner.lock().going_down {
            return Err(ENODEV);
        }
        Ok(dev)
    }

    /// Like [`CmDevice::get`], but also while the device is going down.
    ///
    /// # Safety
    ///
    /// As [`CmDevice::get`].
    pub(crate) unsafe fn get_any(ib_dev: *mut bindings::ib_device) -> Result<Arc<Self>> {
        let _rcu = RcuGuard::new();
        // SAFETY: The caller guarantees `ib_dev` is live; the client data slot is read under
        // RCU as ib_core allows.
        let data = unsafe { bindings::ibcm_glue_get_client_data(ib_dev) };
        if data.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: A non-NULL slot holds a pointer from `Arc::into_raw` in `add_one`, whose
        // reference is dropped only after the slot is cleared and an RCU grace period has
        // elapsed; we are inside the read-side critical section, so it is still held.
        let borrowed = unsafe { ArcBorrow::<Self>::from_raw(data.cast()) };
        Ok(Arc::from(borrowed))
    }

    /// Registers sysfs counters and the MAD agent of every port (`cm_add_one`), in order; on
    /// failure returns the error and how many ports were registered (the caller tears those
    /// down as removal does: receive work they queued may still run and must
    /// finish before their agents go).
    pub(crate) fn register_ports(&self) -> core::result::Result<(), (Error, usize)> {
        for (done, port) in self.ports.iter().enumerate() {
            if let Err(e) = self.register_port(port) {
                return Err((e, done));
            }
        }
        Ok(())
    }

    /// The first half of tearing down the first `registered` ports of a device marked
    /// `going_down` (`cm_remove_one`): CM support off, receive callbacks past the receive gate
    /// done queueing, sends past the send gate drained. The caller (the ib_client's removal, or
    /// a failed add) then runs the queued receive work and the protocol's part before
    /// [`CmDevice::unregister_ports`].
    pub(crate) fn quiesce(&self, registered: usize) {
        debug_assert!(self.sends.closed.load(Ordering::Relaxed));
        debug_assert!(self.recvs.closed.load(Ordering::Relaxed));
        for port in self.ports.iter().take(registered) {
            // SAFETY: `ib_dev` is live during add and remove.
            unsafe { bindings::ibcm_glue_clear_cm_sup(self.ib_dev, port.port_num()) };
        }
        self.recvs.drain();
        self.sends.drain();
    }

    /// The last half: the reply cache closed (and its sweep stopped), then the agents
    /// (waiting for their callbacks, which destroy the handles still in use) and the sysfs
    /// groups of the first `registered` ports. Every handle made on a port's MAD protection
    /// domain is gone when this returns: ib_mad frees that domain after.
    pub(crate) fn unregister_ports(&self, registered: usize) {
        self.close_reply_ahs();
        for port in self.ports.iter().take(registered) {
            self.unregister_port(port);
        }
    }

    /// Its CM-capable ports.
    pub(crate) fn ports(&self) -> &[CmPort] {
        &self.ports
    }

    /// How many CM-capable ports the device has.
    pub(crate) fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// Publishes the device's debugfs directory (NULL for none).
    pub(crate) fn set_debugfs(&self, dir: *mut bindings::dentry) {
        self.debugfs.store(dir, Ordering::Release);
    }

    /// Takes the device's debugfs directory back, for its removal.
    pub(crate) fn take_debugfs(&self) -> *mut bindings::dentry {
        self.debugfs.swap(core::ptr::null_mut(), Ordering::AcqRel)
    }

    /// The reply-cache sweep: evicts the expired handles and re-arms for the next expiry;
    /// an empty cache stops it until the next insert.
    pub(crate) fn sweep_reply_ahs(&self) {
        let evicted = {
            let mut cache = self.reply_ahs.lock();
            let (evicted, next) = cache.next_sweep(jiffies());
            if let Some(delay) = next.filter(|_| cache.is_open()) {
                self.arm_sweep(delay);
            }
            evicted
        };
        drop(evicted);
    }

    fn register_port(&self, port: &CmPort) -> Result {
        let n = port.port_num();
        // SAFETY: `ib_dev` is live during `add`; `n` is one of its ports.
        kernel::error::to_result(unsafe { bindings::ibcm_glue_register_counters(self.ib_dev, n) })?;
        // SAFETY: As above. The context is this object, which outlives the agent: it is
        // unregistered in `unregister_port` before the last reference goes.
        let agent = unsafe {
            bindings::ibcm_glue_register_agent(
                self.ib_dev,
                n,
                (self as *const Self).cast_mut().cast(),
            )
        };
        if let Some(e) = crate::error::ptr_error(agent, EINVAL) {
            // SAFETY: Registered just above.
            unsafe { bindings::ibcm_glue_unregister_counters(self.ib_dev, n) };
            return Err(e);
        }
        // SAFETY: Registered just above; add runs in process context (the query may sleep).
        let recv_queue = unsafe { bindings::ibcm_glue_mad_recv_queue_size(agent) };
        port.flow().derived_limit = crate::logic::flow::derived_limit(recv_queue);
        port.set_agent(agent);
        Ok(())
    }

    /// Unregisters a port's agent and counters (the tail of `cm_remove_one`).
    fn unregister_port(&self, port: &CmPort) {
        let agent = port.agent();
        port.set_agent(core::ptr::null_mut());
        if !agent.is_null() {
            // The spare send buffers hold references to the agent, which its unregistration
            // waits for: they are freed first (outside the pool's lock), and completions from
            // now on free theirs.
            let spare = port.pool().close();
            drop(spare);
            // SAFETY: `agent` was registered by `register_port` and is unregistered once; this
            // waits for its callbacks to return.
            unsafe { bindings::ib_unregister_mad_agent(agent) };
        }
        // SAFETY: Registered by `register_port`.
        unsafe { bindings::ibcm_glue_unregister_counters(self.ib_dev, port.port_num()) };
    }
}

/// The tick counter (`jiffies`).
pub(crate) fn jiffies() -> usize {
    // SAFETY: `jiffies` is the kernel's exported tick counter, always mapped; a volatile
    // read of a machine word (as the C macro's `volatile` declaration does).
    let j = unsafe { core::ptr::read_volatile(core::ptr::addr_of!(bindings::jiffies)) };
    // CAST: `unsigned long` is a machine word.
    j as usize
}

/// The `CmDevice` behind a MAD agent's context pointer.
///
/// # Safety
///
/// `context` must be the context the agent was registered with (a `CmDevice` kept alive by
/// its owner, `ibcm_rs_add_one`'s reference and then the client data's, until after the agent
/// is unregistered), and the borrow must not outlive the agent callback, or the receive work
/// of a MAD that callback queued (removal flushes the CM workqueue before it unregisters the
/// agents).
pub(crate) unsafe fn device_of_agent<'a, I>(
    context: *mut ffi::c_void,
) -> ArcBorrow<'a, DeviceOf<I>> {
    // SAFETY: See the function's safety contract.
    unsafe { ArcBorrow::from_raw(context.cast::<DeviceOf<I>>()) }
}

/// The addresses a device resolves (see `av.rs`).
impl Av {
    /// The address the path record `path` describes (see [`Av::from_path`]), or `EINVAL` once
    /// the device is being removed (as cm.c, which finds no port for it then).
    pub(crate) fn from_path_rec<I>(
        dev: &DeviceOf<I>,
        path: &bindings::sa_path_rec,
        sgid: SgidAttr<'_>,
    ) -> Result<CmBox<Self>> {
        dev.with_live(|_| {
            // SAFETY: A valid record, which the glue and `ib_init_ah_attr_from_path()` only
            // read; `sgid` is NULL or live (its invariant), an attribute of this device or
            // refused by the glue's check; the device is live inside the gate.
            unsafe { Self::from_path(dev, core::ptr::from_ref(path).cast_mut(), sgid.as_ptr()) }
        })
        .ok_or(EINVAL)?
    }

    /// The sender of the received MAD `wc` (see [`Av::from_wc`]).
    pub(crate) fn from_recv<I>(dev: &DeviceOf<I>, port_num: u32, wc: &RecvWc) -> Result<Self> {
        // SAFETY: `wc` owns a valid completion and GRH, and is lent only in `dev`'s receive
        // path (see `CmDevice::port_is_roce`).
        unsafe { Self::from_wc(dev, port_num, wc.wc(), wc.grh()) }
    }

    /// The sender of a received MAD (`cm_init_av_for_response`): a copy of the device's cached
    /// address of that sender (`reply_ah.rs`), or resolved here. May sleep. Returned by value:
    /// a REQ's sender address lives only while the passive id's own address is built (cm.c
    /// builds both in the id's embedded `cm_av`); [`Av::boxed`] keeps one.
    ///
    /// # Safety
    ///
    /// `wc` and `grh` must be valid for the call, which must run in `dev`'s receive work.
    pub(crate) unsafe fn from_wc<I>(
        dev: &DeviceOf<I>,
        port_num: u32,
        wc: *const bindings::ib_wc,
        grh: *const bindings::ib_grh,
    ) -> Result<Self> {
        let agent = dev
            .port(port_num)
            .map_or(core::ptr::null_mut(), |p| p.agent());
        let cached = if agent.is_null() {
            None
        } else {
            // SAFETY: The agent is registered while receive work runs (caller).
            unsafe { dev.reply_addr(agent, wc, grh) }?
        };
        let mut attr = core::mem::MaybeUninit::<bindings::rdma_ah_attr>::uninit();
        if let Some(cached) = cached {
            // SAFETY: `attr` is ours and holds nothing yet.
            unsafe { cached.copy_attr_to(attr.as_mut_ptr()) };
        } else {
            // SAFETY: Live device, valid completion and GRH; `attr` is ours to initialise.
            let ret = unsafe {
                bindings::ib_init_ah_attr_from_wc(
                    dev.ib_dev(),
                    port_num,
                    wc,
                    grh,
                    attr.as_mut_ptr(),
                )
            };
            if ret != 0 {
                return Err(Error::from_errno(ret));
            }
        }
        // SAFETY: `wc` is valid (caller contract).
        let pkey_index = unsafe { (*wc).pkey_index };
        // INVARIANT: initialised just above; an `rdma_ah_attr` holds no pointer to itself.
        // SAFETY: Initialised above.
        let attr = unsafe { attr.assume_init() };
        Ok(Self::new(port_num, pkey_index, 0, attr))
    }

    /// The address a path record describes (`cm_init_av_by_path`): the port of `sgid_attr`
    /// (or of the path's source GID), the P_Key's index, `packet_life_time + 1`. May sleep.
    ///
    /// # Safety
    ///
    /// `path` must be valid; `sgid_attr` NULL or a live attribute of `dev`'s device.
    pub(crate) unsafe fn from_path<I>(
        dev: &DeviceOf<I>,
        path: *mut bindings::sa_path_rec,
        sgid_attr: *const bindings::ib_gid_attr,
    ) -> Result<CmBox<Self>> {
        let mut attr = core::mem::MaybeUninit::<bindings::rdma_ah_attr>::uninit();
        let (mut port_num, mut pkey_index) = (0u32, 0u16);
        // SAFETY: Valid device, path and attribute (caller); outputs are ours.
        let ret = unsafe {
            bindings::ibcm_glue_av_by_path(
                dev.ib_dev(),
                path,
                sgid_attr,
                attr.as_mut_ptr(),
                &mut port_num,
                &mut pkey_index,
            )
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        if dev.port(port_num).is_none() {
            // SAFETY: Initialised above; released once.
            unsafe { bindings::rdma_destroy_ah_attr(attr.as_mut_ptr()) };
            return Err(EINVAL);
        }
        // SAFETY: `path` is valid (caller).
        let life = unsafe { (*path).packet_life_time };
        // SAFETY: Initialised above.
        Self::new(port_num, pkey_index, timeout::av_timeout(life), unsafe {
            attr.assume_init()
        })
        .boxed()
    }
}
