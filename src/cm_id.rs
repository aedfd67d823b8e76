// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The private id object behind every `struct ib_cm_id *` the CM hands out.
//!
//! Stands for `struct cm_id_private`, `cm_alloc_id_priv()`, `cm_deref_id()` and the listener
//! part of `cm_destroy_id()` in cm.c.
//!
//! Memory is owned by `Arc` references: one per handle a C caller holds (a shared listener's
//! pointer is handed out once per share, each with its own reference, as cm.c raises the
//! refcount per share), one held by the device's listener tree, and one per lookup in flight.
//! Separately, `users` is a protocol count of in-flight handler invocations on a listener,
//! which the last `ib_destroy_cm_id()` waits for, as cm.c waits on `cm_id_priv->comp`.

use crate::{
    bindings,
    completion::Completion,
    device::CmDevice,
    listen::{ListenReservation, Released},
    lock::{new_spinlock_irq, SpinLockIrq},
    logic::{
        req_event::{self, SidrReply, REJ_CONSUMER_DEFINED, SIDR_REJECT},
        service_id::ServiceId,
        wire::CmMessage,
    },
    remote::RemoteKey,
    send::{self, Dest},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    alloc::KBox,
    ffi,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

/// What a passive id keeps of the MAD that created it, to answer it (cm.c's `av` of a
/// passive id plus the saved `tid`).
///
/// # Invariants
///
/// `av` was initialised by `ib_init_ah_attr_from_wc` (or copied from such an attribute) and
/// holds its references (the sgid attribute) until `Drop` releases them.
pub(crate) struct ReplyPath {
    port_num: u32,
    pkey_index: u16,
    tid: u64,
    av: Opaque<bindings::rdma_ah_attr>,
    /// The key of the device's duplicate table the id is registered under while the request
    /// is unanswered (kept here, not in every `CmId`, so listeners do not pay for it).
    remote: RemoteKey,
}

impl ReplyPath {
    /// Builds the reply address from a received MAD's work completion and GRH: a copy of the
    /// device's cached address of that sender (`reply_ah.rs`), or resolved here.
    ///
    /// # Safety
    ///
    /// `wc` and `grh` must be valid for the call, which must run in `dev`'s receive work (the
    /// port's MAD agent stays registered until that work is flushed).
    pub(crate) unsafe fn from_wc(
        dev: &CmDevice,
        port_num: u32,
        wc: *const bindings::ib_wc,
        grh: *const bindings::ib_grh,
        tid: u64,
        remote: RemoteKey,
    ) -> Result<KBox<Self>> {
        let agent = dev.port(port_num).map_or(core::ptr::null_mut(), |p| p.agent());
        let cached = if agent.is_null() {
            None
        } else {
            // SAFETY: The agent is registered while receive work runs (caller); `wc` and
            // `grh` are valid (caller).
            unsafe { dev.reply_addr(agent, wc, grh) }?
        };
        let mut av = core::mem::MaybeUninit::<bindings::rdma_ah_attr>::uninit();
        if let Some(cached) = cached {
            // SAFETY: `av` is ours and holds nothing yet.
            unsafe { cached.copy_attr_to(av.as_mut_ptr()) };
        } else {
            // SAFETY: Live device, valid completion and GRH; `av` is ours to initialise.
            let ret = unsafe {
                bindings::ib_init_ah_attr_from_wc(dev.ib_dev(), port_num, wc, grh, av.as_mut_ptr())
            };
            if ret != 0 {
                return Err(Error::from_errno(ret));
            }
        }
        // INVARIANT: `av` is initialised from this completion; an `rdma_ah_attr` holds no
        // pointer to itself, so it may move. If the allocation fails, dropping the value
        // releases it.
        // SAFETY: Initialised just above.
        let av = Opaque::new(unsafe { av.assume_init() });
        // SAFETY: `wc` is valid (caller contract).
        let pkey_index = unsafe { (*wc).pkey_index };
        Ok(KBox::new(Self { port_num, pkey_index, tid, av, remote }, GFP_KERNEL)?)
    }

    /// The address attribute (for address handles and the sgid attribute).
    pub(crate) fn av(&self) -> *mut bindings::rdma_ah_attr {
        self.av.get()
    }
}

impl Drop for ReplyPath {
    fn drop(&mut self) {
        // SAFETY: Initialised by `from_wc` (type invariant); released once.
        unsafe { bindings::rdma_destroy_ah_attr(self.av.get()) };
    }
}

// SAFETY: The attribute is only read after construction, and its references are safe to
// release from any thread.
unsafe impl Send for ReplyPath {}
// SAFETY: See `Send`.
unsafe impl Sync for ReplyPath {}

/// How long `ib_destroy_cm_id()` waits between diagnostics (`CM_DESTROY_ID_WAIT_TIMEOUT`).
const DESTROY_WAIT_MS: u32 = 10_000;

/// A CM id: the C-visible `struct ib_cm_id` plus the CM's private state.
///
/// # Invariants
///
/// - `id` is only written by the CM under `inner`'s lock (the `state` and `service_id`
///   fields) or before the id is published; callers may write `context`, `cm_handler` and
///   `remote_cm_qpn` at any time, so every read of those goes through a volatile read.
/// - `users` is 1 (the listening bias) plus the number of [`CmId::listener_get`] pins not yet
///   released while the id is in a listener tree; `released` is completed when it reaches 0.
#[pin_data]
pub(crate) struct CmId {
    /// The ABI handle. Must stay the object C callers point at; see [`CmId::from_raw`].
    #[pin]
    id: Opaque<bindings::ib_cm_id>,
    /// The device this id belongs to.
    dev: Arc<CmDevice>,
    /// State transitions of this id; taken before the device lock when both are needed.
    #[pin]
    inner: SpinLockIrq<CmIdInner>,
    /// In-flight users of a listener; see the type invariants.
    users: AtomicU32,
    /// Signalled when `users` drops to 0.
    #[pin]
    released: Completion,
    /// For ids created by a received REQ or SIDR_REQ: how to answer it. Fixed at creation.
    reply: Option<KBox<ReplyPath>>,
}

// SAFETY: The raw pointers inside `id` (device, context, handler) are plain values owned by
// the C caller; the CM reads them only as the type invariants allow, and all CM-mutable state
// is behind `inner`'s lock or atomic.
unsafe impl Send for CmId {}
// SAFETY: See `Send`; shared access goes through the lock, atomics or volatile reads.
unsafe impl Sync for CmId {}

/// Mutable private state of a [`CmId`].
pub(crate) struct CmIdInner {
    /// The last share of this listener was destroyed: the id is dead to the listen API.
    destroyed: bool,
}

/// `enum ib_cm_state` as the C ABI spells it.
pub(crate) type CmState = bindings::ib_cm_state;

impl CmId {
    /// Allocates an IDLE id on `dev` (`cm_alloc_id_priv`): `remote_cm_qpn` 1, not yet in any
    /// table.
    pub(crate) fn new(
        dev: Arc<CmDevice>,
        handler: bindings::ib_cm_handler,
        context: *mut ffi::c_void,
    ) -> Result<Arc<Self>> {
        Self::build(dev, handler, context, None)
    }

    /// A passive id for a received REQ or SIDR_REQ (`cm_req_handler`): it inherits the
    /// listener's handler and context, starts in `state` with the request's service ID and
    /// remote comm ID (or SIDR request ID), and keeps `reply` to answer. Nobody else can see
    /// it until it is handed to the handler.
    pub(crate) fn new_passive(
        dev: Arc<CmDevice>,
        listener: &CmId,
        state: CmState,
        service_id: ServiceId,
        remote_id: u32,
        reply: KBox<ReplyPath>,
    ) -> Result<Arc<Self>> {
        // SAFETY: `listener.id` is initialised; volatile reads tolerate caller writes.
        let context = unsafe { core::ptr::addr_of!((*listener.id.get()).context).read_volatile() };
        let id = Self::build(dev, listener.handler(), context, Some(reply))?;
        id.set_state(state);
        id.set_service_id(service_id);
        // SAFETY: The id is not visible to anyone else yet.
        unsafe { core::ptr::addr_of_mut!((*id.id.get()).remote_id).write(remote_id.to_be()) };
        Ok(id)
    }

    fn build(
        dev: Arc<CmDevice>,
        handler: bindings::ib_cm_handler,
        context: *mut ffi::c_void,
        reply: Option<KBox<ReplyPath>>,
    ) -> Result<Arc<Self>> {
        let device = dev.ib_dev();
        Arc::pin_init(
            try_pin_init!(Self {
                id <- Opaque::ffi_init(|slot: *mut bindings::ib_cm_id| {
                    // SAFETY: `slot` is valid for writes while the closure runs.
                    unsafe {
                        slot.write(bindings::ib_cm_id {
                            cm_handler: handler,
                            context,
                            device,
                            service_id: 0,
                            state: bindings::ib_cm_state_IB_CM_IDLE,
                            lap_state: bindings::ib_cm_lap_state_IB_CM_LAP_UNINIT,
                            local_id: 0,
                            remote_id: 0,
                            remote_cm_qpn: 1,
                        })
                    }
                }),
                dev,
                inner <- new_spinlock_irq!(CmIdInner { destroyed: false }, "CmId::inner"),
                users: AtomicU32::new(1),
                released <- Completion::new(),
                reply,
            }),
            GFP_KERNEL,
        )
    }

    /// Turns one `Arc` reference into the `struct ib_cm_id *` a C caller holds.
    pub(crate) fn into_raw(this: Arc<Self>) -> *mut bindings::ib_cm_id {
        let ptr = Arc::into_raw(this);
        // SAFETY: `ptr` points to a live `CmId` (we just leaked a reference to it).
        unsafe { (*ptr).id.get() }
    }

    /// Recovers the `CmId` of a handle, without taking a reference (`container_of`).
    ///
    /// This is the one audited conversion from C handles back to Rust objects.
    ///
    /// # Safety
    ///
    /// `id` must come from [`CmId::into_raw`] and its reference must not have been consumed
    /// by [`CmId::from_raw`]; the borrow must not outlive that reference.
    pub(crate) unsafe fn borrow<'a>(id: *mut bindings::ib_cm_id) -> ArcBorrow<'a, CmId> {
        // SAFETY: `id` points at the `id` field of a `CmId` (caller contract), and `Opaque<T>`
        // has the layout of `T`, so stepping back by the field offset gives the `CmId`.
        let this = unsafe { kernel::container_of!(id, CmId, id) };
        // SAFETY: The caller's reference keeps the `Arc` alive for `'a`.
        unsafe { ArcBorrow::from_raw(this) }
    }

    /// Takes back the reference that [`CmId::into_raw`] handed out.
    ///
    /// # Safety
    ///
    /// As [`CmId::borrow`]; afterwards the handle must not be used by this caller again.
    pub(crate) unsafe fn from_raw(id: *mut bindings::ib_cm_id) -> Arc<CmId> {
        // SAFETY: As in `borrow`.
        let this = unsafe { kernel::container_of!(id, CmId, id) };
        // SAFETY: `this` came from `Arc::into_raw` (caller contract), once per reference.
        unsafe { Arc::from_raw(this) }
    }

    /// The raw C handle of `this`, without handing out a reference.
    pub(crate) fn raw(this: &Arc<Self>) -> *mut bindings::ib_cm_id {
        this.id.get()
    }

    /// How to answer the request that created this id, if any.
    pub(crate) fn reply(&self) -> Option<&ReplyPath> {
        self.reply.as_deref()
    }

    /// The caller's current handler.
    pub(crate) fn handler(&self) -> bindings::ib_cm_handler {
        // SAFETY: `id` is initialised; a volatile read tolerates concurrent caller writes.
        unsafe { core::ptr::addr_of!((*self.id.get()).cm_handler).read_volatile() }
    }

    fn remote_id(&self) -> u32 {
        // SAFETY: `id` is initialised; `remote_id` is written only before publication.
        u32::from_be(unsafe { core::ptr::addr_of!((*self.id.get()).remote_id).read_volatile() })
    }

    fn remote_cm_qpn(&self) -> u32 {
        // SAFETY: As in `handler`; callers may redirect it (ib_srp does).
        unsafe { core::ptr::addr_of!((*self.id.get()).remote_cm_qpn).read_volatile() }
    }

    /// Leaves REQ_RCVD (or MRA_REQ_SENT) for IDLE, as `ib_send_cm_rej` does, and returns
    /// whether it did; other states are not ours to leave yet.
    fn leave_req_rcvd(&self) -> bool {
        self.leave(&[bindings::ib_cm_state_IB_CM_REQ_RCVD, bindings::ib_cm_state_IB_CM_MRA_REQ_SENT])
    }

    /// Moves from one of `from` to IDLE under the id lock and takes the id out of its
    /// device's duplicate table; returns whether it did. The table node (which holds a
    /// reference to `self`) is freed after both locks are released.
    fn leave(&self, from: &[CmState]) -> bool {
        let guard = self.inner.lock();
        if !from.contains(&self.state()) {
            return false;
        }
        self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
        let node = self.unlink_remote();
        drop(guard);
        drop(node);
        true
    }

    /// Removes the id from its device's duplicate table. Called with the id lock held (the
    /// device lock nests inside it); returns what the caller frees after unlocking.
    fn unlink_remote(&self) -> crate::remote::Unlinked {
        let mut out = crate::remote::Unlinked::default();
        let mut dev = self.dev.inner.lock();
        match self.reply.as_ref().map(|r| r.remote) {
            Some(RemoteKey::Req(k, q)) => {
                out.req = dev.remote_reqs.remove(&k, self);
                out.qp = dev.remote_qps.remove(&q, self);
            }
            Some(RemoteKey::Sidr(k)) => out.sidr = dev.remote_sidrs.remove(&k, self),
            None => {}
        }
        out
    }

    /// Sends `msg` along the reply path. The path is immutable once the id exists and lives
    /// as long as `self`, so no lock is needed.
    fn send_reply(&self, msg: &CmMessage, attr_mod: u32, atomic: bool) -> Result {
        let reply = self.reply.as_deref().ok_or(EINVAL)?;
        let dest = Dest::Av {
            attr: reply.av(),
            remote_qpn: self.remote_cm_qpn(),
            pkey_index: reply.pkey_index,
        };
        // SAFETY: `reply.av` lives as long as `self`.
        unsafe { send::send(&self.dev, reply.port_num, dest, msg, reply.tid, attr_mod, atomic) }
    }

    /// `ib_send_cm_rej()` on a passive id that has not answered its REQ yet: REJ with local
    /// comm ID 0 (spec 5.1), message REQ, then IDLE. `-EINVAL` in any other state.
    pub(crate) fn reject(&self, reason: u16, ari: &[u8], private_data: &[u8]) -> Result {
        if !self.leave_req_rcvd() {
            return Err(EINVAL);
        }
        let rej = req_event::rej_of_req(0, self.remote_id(), reason, ari, private_data);
        self.send_reply(&CmMessage::Rej(rej), 0, true)
    }

    /// `ib_send_cm_sidr_rep()`: answers the SIDR_REQ that created this id, then IDLE.
    pub(crate) fn sidr_reply(&self, r: &SidrReply<'_>, attr_mod: u32) -> Result {
        if !self.leave(&[bindings::ib_cm_state_IB_CM_SIDR_REQ_RCVD]) {
            return Err(EINVAL);
        }
        let rep = req_event::sidr_rep(&SidrReply {
            request_id: self.remote_id(),
            service_id: self.service_id().get(),
            ..*r
        });
        self.send_reply(&CmMessage::SidrRep(rep), attr_mod, true)
    }

    /// `cm_destroy_id(id, err)` for one handle: the state's farewell message, then
    /// [`CmId::destroy`]. A REQ refused with `-ENOMEM` is dropped silently so that the peer
    /// retries; any other refusal sends REJ CONSUMER_DEFINED, or SIDR_REP REJECT.
    pub(crate) fn destroy_with(&self, err: i32) -> bool {
        let state = self.state();
        if state == bindings::ib_cm_state_IB_CM_REQ_RCVD || state == bindings::ib_cm_state_IB_CM_MRA_REQ_SENT {
            if err == -(bindings::ENOMEM as i32) {
                self.leave_req_rcvd();
            } else {
                let _ = self.reject(REJ_CONSUMER_DEFINED, &[], &[]);
            }
        } else if state == bindings::ib_cm_state_IB_CM_SIDR_REQ_RCVD {
            let r = SidrReply {
                request_id: 0,
                status: SIDR_REJECT,
                qpn: 0,
                qkey: 0,
                service_id: 0,
                vendor_id: 0,
                info: &[],
                private_data: &[],
            };
            let _ = self.sidr_reply(&r, 0);
        }
        self.destroy()
    }

    /// The id's state as callers read it.
    pub(crate) fn state(&self) -> CmState {
        // SAFETY: `id` is initialised; `state` is written only by the CM under `inner`.
        unsafe { core::ptr::addr_of!((*self.id.get()).state).read_volatile() }
    }

    fn set_state(&self, state: CmState) {
        // SAFETY: `id` is initialised; callers hold `inner` or own the unpublished id.
        unsafe { core::ptr::addr_of_mut!((*self.id.get()).state).write_volatile(state) }
    }

    /// The service ID as stored in the handle.
    pub(crate) fn service_id(&self) -> ServiceId {
        // SAFETY: `id` is initialised; `service_id` is written only by the CM.
        ServiceId::from_be(unsafe {
            core::ptr::addr_of!((*self.id.get()).service_id).read_volatile()
        })
    }

    fn set_service_id(&self, sid: ServiceId) {
        // SAFETY: `id` is initialised; callers hold `inner` or own the unpublished id.
        unsafe { core::ptr::addr_of_mut!((*self.id.get()).service_id).write_volatile(sid.to_be()) }
    }

    /// The address of the caller's current handler (callers may rewrite it at any time).
    pub(crate) fn handler_addr(&self) -> Option<usize> {
        // SAFETY: `id` is initialised; a volatile read tolerates concurrent writes by callers.
        let handler = unsafe { core::ptr::addr_of!((*self.id.get()).cm_handler).read_volatile() };
        // CAST: the sharing rule compares handler addresses, exactly as cm.c compares pointers.
        handler.map(|f| f as usize)
    }

    /// Whether the caller's `context` is NULL (callers may rewrite it at any time).
    pub(crate) fn context_is_null(&self) -> bool {
        // SAFETY: As in `handler_addr`.
        unsafe { core::ptr::addr_of!((*self.id.get()).context).read_volatile() }.is_null()
    }

    /// Pins a listener found in the tree for one handler invocation. Called under the device
    /// lock, while the id is in the tree, so `users` is at least the listening bias.
    // Used by the REQ/SIDR_REQ receive path (not yet built) and the white-box tests.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn listener_get(&self) {
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends a pin taken by [`CmId::listener_get`] (or drops the listening bias).
    pub(crate) fn listener_put(&self) {
        if self.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.released.complete();
        }
    }

    /// Makes `self`, fresh from [`CmId::new`], listen on `requested` (or an assigned ID), or
    /// shares an existing listener when `handler` allows it.
    ///
    /// Returns the listener the caller now holds a reference to: `self` or the shared one.
    pub(crate) fn listen(
        self: &Arc<Self>,
        requested: ServiceId,
        assign: bool,
        handler: Option<usize>,
        reservation: ListenReservation,
    ) -> Result<Arc<CmId>> {
        let guard = self.inner.lock();
        if guard.destroyed || self.state() != bindings::ib_cm_state_IB_CM_IDLE {
            return Err(EINVAL);
        }
        let mut dev = self.dev.inner.lock();
        if dev.going_down {
            return Err(ENODEV);
        }
        // The new id is not yet visible, so its state may be set ahead of the insert; on
        // failure it is put back.
        self.set_state(bindings::ib_cm_state_IB_CM_LISTEN);
        let outcome = dev
            .listen
            .insert(self, requested, assign, handler, reservation);
        match outcome {
            Ok(crate::listen::Inserted::New(sid)) => {
                self.set_service_id(sid);
                Ok(self.clone())
            }
            Ok(crate::listen::Inserted::Shared(existing)) => {
                self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
                Ok(existing)
            }
            Err((e, reservation)) => {
                self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
                drop(dev);
                drop(guard);
                // Freed outside the locks.
                drop(reservation);
                Err(crate::abi::listen_errno(e))
            }
        }
    }

    /// `ib_destroy_cm_id()` for one handle reference of `self`.
    ///
    /// A shared listener loses one share and returns at once. The last share erases the
    /// listener from the tree and then waits, without a lock held, until every in-flight
    /// handler invocation has released its pin, printing a diagnostic every 10 s.
    ///
    /// Returns `false` if the handle was already fully destroyed (the caller then must not
    /// drop the reference it does not own).
    pub(crate) fn destroy(&self) -> bool {
        let mut guard = self.inner.lock();
        if guard.destroyed {
            return false;
        }
        if self.state() != bindings::ib_cm_state_IB_CM_LISTEN {
            guard.destroyed = true;
            self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
            let node = self.unlink_remote();
            drop(guard);
            drop(node);
            return true;
        }
        let mut dev = self.dev.inner.lock();
        let node = match dev.listen.release(self.service_id(), self) {
            Released::StillShared => return true,
            Released::NotListening => {
                drop(dev);
                drop(guard);
                pr_err!("ib_cm: destroy of a listener that is not in its tree\n");
                return false;
            }
            Released::Removed(node) => node,
        };
        guard.destroyed = true;
        self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
        drop(dev);
        drop(guard);
        // The tree's reference goes with the node, freed outside the locks.
        drop(node);
        self.listener_put();
        let mut waited = 0u32;
        while !self.released.wait_timeout_ms(DESTROY_WAIT_MS) {
            waited += DESTROY_WAIT_MS / 1000;
            pr_warn!(
                "ib_cm: destroy of listener {:#018x} still waiting for {} handler(s) after {}s\n",
                self.service_id().get(),
                self.users.load(Ordering::Relaxed),
                waited
            );
        }
        true
    }

    /// Whether the last share of this id has been destroyed.
    // Used by the REQ/SIDR_REQ receive path (not yet built) and the white-box tests.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn is_destroyed(&self) -> bool {
        self.inner.lock().destroyed
    }

    /// In-flight users (the listening bias included), for tests and diagnostics.
    // Used by the REQ/SIDR_REQ receive path (not yet built) and the white-box tests.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn users(&self) -> u32 {
        self.users.load(Ordering::Relaxed)
    }
}
