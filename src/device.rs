// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Per-device CM state and the ib_client "cm".
//!
//! Stands for `cm_add_one()` / `cm_remove_one()` and `struct cm_device` in cm.c. Unlike cm.c,
//! which keys one global listen tree on the device pointer under one global lock, each device
//! owns its listener tree behind its own lock (see `listen.rs` and `Documentation/locking.rst`).
//!
//! The device's [`CmDevice`] is reached from a `struct ib_device *` through the ib_client data
//! slot. [`CmDevice::get`] reads the slot under RCU and takes an `Arc` reference; removal clears
//! the slot and waits for an RCU grace period before dropping the slot's reference, so a lookup
//! never sees freed memory. The MAD agents' context is the same object: it stays alive until
//! after the agents are unregistered.

use crate::{
    bindings, debugfs,
    listen::ListenTable,
    lock::{new_spinlock_irq, SpinLockIrq},
    port::CmPort,
    recv,
    reply_ah::{self, ReplyAh, ReplyAhCache},
    timewait::{self, TimewaitQueue},
    use_count,
};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use kernel::{
    alloc::KVec,
    error::code::ENODEV,
    ffi,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

/// CM state of one RDMA device with at least one CM-capable port.
///
/// # Invariants
///
/// `ib_dev` is the device this state was created for in [`ibcm_rs_add_one`]; ib_core keeps it
/// alive at least until [`ibcm_rs_remove_one`] returns, and nothing dereferences it after that.
#[pin_data]
pub(crate) struct CmDevice {
    ib_dev: *mut bindings::ib_device,
    /// The CM-capable ports; fixed after creation.
    ports: KVec<CmPort>,
    /// Mutable state; the lock is taken after a `CmId`'s lock when both are needed.
    #[pin]
    pub(crate) inner: SpinLockIrq<DeviceInner>,
    /// Sends in flight, and whether removal closed the gate to new ones.
    sends: Gate,
    /// Receive callbacks queueing a received MAD's work item.
    recvs: Gate,
    /// Recent requesters' addresses and reply handles (`reply_ah.rs`); a leaf lock.
    #[pin]
    reply_ahs: SpinLockIrq<ReplyAhCache>,
    /// Evicts expired reply handles when no traffic does ([`ibcm_rs_reply_sweep`]); queued
    /// only under `reply_ahs`'s lock while the cache is open, cancelled by removal.
    #[pin]
    sweep: Opaque<bindings::delayed_work>,
    /// Ends the due timewaits of the device's ids (`timewait.rs`); queued only under `inner`'s
    /// lock while the device is not going down, run a last time by removal.
    #[pin]
    pub(crate) timewait: Opaque<bindings::delayed_work>,
    /// The device's debugfs directory (`debugfs.rs`), NULL without one; removed first by
    /// removal.
    debugfs: AtomicPtr<bindings::dentry>,
}

/// The mutable part of [`CmDevice`].
pub(crate) struct DeviceInner {
    /// Set once removal starts: no listener is accepted, no work is queued, no MAD is sent.
    pub(crate) going_down: bool,
    /// Listeners of this device, keyed by service ID.
    pub(crate) listen: ListenTable,
    /// Ids in timewait, by deadline.
    pub(crate) timewait: TimewaitQueue,
}

// SAFETY: `ib_dev` is only used as an identity and for ib_core calls that are thread-safe; all
// mutable state is behind `inner`'s lock or atomics.
unsafe impl Send for CmDevice {}
// SAFETY: See `Send`.
unsafe impl Sync for CmDevice {}

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

    fn enter(&self) -> Option<GateGuard<'_>> {
        // A cheap early look, so callers that bounce off a closed gate do not keep the count
        // above zero under steady traffic; the look after counting in decides.
        if self.closed.load(Ordering::Relaxed) {
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

impl CmDevice {
    /// Allocates CM state for `ib_dev` with the given CM-capable ports.
    pub(crate) fn new(ib_dev: *mut bindings::ib_device, ports: KVec<CmPort>) -> Result<Arc<Self>> {
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
                    // SAFETY: A pure conversion.
                    ReplyAhCache::new(unsafe { bindings::__msecs_to_jiffies(reply_ah::TTL_MS) }),
                    "CmDevice::reply_ahs"
                ),
                sweep <- Opaque::ffi_init(|dw: *mut bindings::delayed_work| {
                    // SAFETY: `dw` is this field's memory; the work is only queued later.
                    unsafe { bindings::ibcm_glue_init_sweep_work(dw) }
                }),
                timewait <- Opaque::ffi_init(|dw: *mut bindings::delayed_work| {
                    // SAFETY: `dw` is this field's memory; the work is only queued later.
                    unsafe { bindings::ibcm_glue_init_delayed_work(dw) }
                }),
                debugfs: AtomicPtr::new(core::ptr::null_mut()),
            }),
            GFP_KERNEL,
        )
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
    fn mark_going_down(&self) {
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
        let wq = recv::wq();
        if !wq.is_null() {
            // SAFETY: The work was initialised with the device; `wq` lives until module exit,
            // after every device is removed, and removal cancels the work first.
            unsafe { bindings::ibcm_glue_queue_delayed_work_jiffies(wq, self.sweep.get(), delay) };
        }
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
        // SAFETY: Initialised with the device; the cache is closed, so nothing queues it again.
        unsafe { bindings::ibcm_glue_cancel_delayed_work_sync(self.sweep.get()) };
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
        dev.ok_or(ENODEV)
    }

    /// Registers sysfs counters and the MAD agent of every port (`cm_add_one`), in order; on
    /// failure returns the error and how many ports were registered (the caller tears those
    /// down with [`CmDevice::shut_down`]: receive work they queued may still run and must
    /// finish before their agents go).
    fn register_ports(&self) -> core::result::Result<(), (Error, usize)> {
        for (done, port) in self.ports.iter().enumerate() {
            if let Err(e) = self.register_port(port) {
                return Err((e, done));
            }
        }
        Ok(())
    }

    /// Tears down the first `registered` ports of a device marked `going_down`, in cm.c's order
    /// (`cm_remove_one`): CM support off, receive callbacks past the receive gate done queueing,
    /// sends past the send gate drained, queued receive work run, the timewaits still queued
    /// ended, the ids' handshake address handles given up and the reply cache closed (and its
    /// sweep stopped), then the agents (waiting for their callbacks, which destroy the handles
    /// still in use) and the sysfs groups. Every handle made on the port's MAD protection domain
    /// is gone when this returns: ib_mad frees that domain after.
    fn shut_down(&self, registered: usize) {
        debug_assert!(self.sends.closed.load(Ordering::Relaxed));
        debug_assert!(self.recvs.closed.load(Ordering::Relaxed));
        for port in self.ports.iter().take(registered) {
            // SAFETY: `ib_dev` is live during add and remove.
            unsafe { bindings::ibcm_glue_clear_cm_sup(self.ib_dev, port.port_num()) };
        }
        self.recvs.drain();
        self.sends.drain();
        recv::flush();
        timewait::end_all(self);
        // No send starts any more: the ids' handshake address handles go now if idle, else
        // with the completions that the agents' unregistration below flushes.
        crate::conn::retire_handshake_ahs(self);
        self.close_reply_ahs();
        for port in self.ports.iter().take(registered) {
            self.unregister_port(port);
        }
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
        port.set_agent(agent);
        Ok(())
    }

    /// Unregisters a port's agent and counters (the tail of `cm_remove_one`).
    fn unregister_port(&self, port: &CmPort) {
        let agent = port.agent();
        port.set_agent(core::ptr::null_mut());
        if !agent.is_null() {
            // SAFETY: `agent` was registered by `register_port` and is unregistered once; this
            // waits for its callbacks to return.
            unsafe { bindings::ib_unregister_mad_agent(agent) };
        }
        // SAFETY: Registered by `register_port`.
        unsafe { bindings::ibcm_glue_unregister_counters(self.ib_dev, port.port_num()) };
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
    let mut ports = KVec::new();
    for port in first..=last {
        // SAFETY: As above; `port` is in the device's valid range.
        if unsafe { bindings::ibcm_glue_cap_ib_cm(ib_dev, port) } {
            if let Err(e) = ports.push(CmPort::new(port), GFP_KERNEL) {
                return Error::from(e).to_errno();
            }
        }
    }
    if ports.is_empty() {
        // As cm.c: the core then keeps no client data and never calls remove.
        return crate::error::eopnotsupp().to_errno();
    }
    let dev = match CmDevice::new(ib_dev, ports) {
        Ok(dev) => dev,
        Err(e) => return e.to_errno(),
    };
    if let Err((e, registered)) = dev.register_ports() {
        // The ports registered before the failure may have queued receive work (which may
        // send, and arm the reply cache's sweep): shut them down as removal does.
        dev.mark_going_down();
        dev.shut_down(registered);
        return e.to_errno();
    }
    dev.debugfs.store(debugfs::add(&dev), Ordering::Release);
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
    debugfs::remove(dev.debugfs.swap(core::ptr::null_mut(), Ordering::AcqRel));
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
    dev.shut_down(dev.ports.len());
    // SAFETY: `ib_dev` is live during remove; clearing the slot stops new lookups, and the
    // grace period lets lookups already inside their RCU section take their reference first.
    unsafe {
        bindings::ibcm_glue_set_client_data(ib_dev, core::ptr::null_mut());
        bindings::ibcm_glue_synchronize_rcu();
    }
    // Comm-table references of destroyed ids are dropped by RCU callbacks; let those run
    // before the device's state goes.
    crate::comm_id::barrier();
    drop(dev);
}

/// The reply-cache sweep of a device: evicts the expired handles and comes back when the next
/// one expires; an empty cache stops it until the next insert.
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for the `sweep` work of a live [`CmDevice`]:
/// removal cancels the work before it drops the device's last reference from ib_core.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_reply_sweep(dw: *mut bindings::delayed_work) {
    // SAFETY: `dw` is the `sweep` field of a live `CmDevice` (caller contract); `Opaque<T>` has
    // `T`'s layout.
    let dev = unsafe {
        &*kernel::container_of!(dw.cast::<Opaque<bindings::delayed_work>>(), CmDevice, sweep)
    };
    let evicted = {
        let mut cache = dev.reply_ahs.lock();
        let (evicted, next) = cache.next_sweep(jiffies());
        if let Some(delay) = next.filter(|_| cache.is_open()) {
            dev.arm_sweep(delay);
        }
        evicted
    };
    drop(evicted);
}

/// The tick counter (`jiffies`).
pub(crate) fn jiffies() -> usize {
    // SAFETY: Reads the tick counter.
    unsafe { bindings::ibcm_glue_jiffies() }
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
