// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The private id object behind every `struct ib_cm_id *` the CM hands out.
//!
//! Stands for `struct cm_id_private`, `cm_alloc_id_priv()`, `cm_deref_id()`,
//! `cm_process_work()` and `cm_destroy_id()` in cm.c.
//!
//! Memory is owned by `Arc` references: one per handle a C caller holds (a shared listener's
//! pointer is handed out once per share), one held by the listener tree or the remote tables, one
//! by the comm-ID table while the id is published, one per MAD in flight and per queued work, one
//! by its device's timewait queue while it is queued there. Separately, `users` is cm.c's refcount
//! as a protocol count: the owner's bias plus every use in flight (a handler being called, a lookup
//! from the receive path). `ib_destroy_cm_id()` drops the bias and sleeps until `users` is zero,
//! so after it returns no callback on the id runs or will run. A MAD in flight holds a reference,
//! not a use: destroy does not wait for its completion (cm.c's does), and the completion delivers
//! nothing once destroy dropped the bias.

use crate::alloc::CmBox;
use crate::{
    ah::ConnAh,
    av::Av,
    backlog::{Flow, Unposted},
    bindings,
    comm_index::CommId,
    device::DeviceOf,
    event::{Event, EventQueue},
    listen::{listen_errno, Inserted, ListenReservation, Listener},
    lock::{new_spinlock_irq, SpinLockIrq},
    logic::{
        remote::SidrKey,
        service_id::ServiceId,
        state::{Lap, State},
    },
    tw_queue::{Queued, TwLink},
    use_count::UseCount,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    ffi,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

/// Connection parameters of an id (the scalar fields of cm.c's `cm_id_private`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Conn {
    /// The TID of the exchange replies belong to (REQ, DREQ, SIDR_REQ).
    pub(crate) tid: u64,
    /// Our QPN (24 bits).
    pub(crate) local_qpn: u32,
    /// The peer's QPN.
    pub(crate) remote_qpn: u32,
    /// `enum ib_qp_type` (RC, UC, UD or XRC: one byte; see [`Conn::qp_type`]).
    pub(crate) qp_type: u8,
    /// Send queue PSN (the peer's starting PSN).
    pub(crate) sq_psn: u32,
    /// Receive queue PSN (ours).
    pub(crate) rq_psn: u32,
    /// The wait of the tracked MAD before each retry.
    pub(crate) timeout_ms: u32,
    /// `enum ib_mtu` (1 to 5).
    pub(crate) path_mtu: u8,
    /// The P_Key (host order).
    pub(crate) pkey: u16,
    /// Retries of tracked MADs.
    pub(crate) max_cm_retries: u8,
    /// Responder resources.
    pub(crate) responder_resources: u8,
    /// Initiator depth.
    pub(crate) initiator_depth: u8,
    /// Transport retry count.
    pub(crate) retry_count: u8,
    /// RNR retry count.
    pub(crate) rnr_retry_count: u8,
    /// The service timeout of the last MRA we sent (or will send, delayed).
    pub(crate) service_timeout: u8,
    /// The peer's target ACK delay (REP).
    pub(crate) target_ack_delay: u8,
}

impl Conn {
    /// The QP type (`enum ib_qp_type`).
    pub(crate) fn qp_type(&self) -> u32 {
        self.qp_type.into()
    }

    /// Sets the QP type. The CM's types (RC 2, UC 3, UD 4, XRC 9 and 10) fit a byte, which
    /// keeps the id within its slab; anything larger is stored as 0xFF, a type the CM never
    /// matches (`IB_QPT_DRIVER`).
    pub(crate) fn set_qp_type(&mut self, qp_type: u32) {
        self.qp_type = u8::try_from(qp_type).unwrap_or(u8::MAX);
    }
}

/// Private data kept for retransmissions (`cm_set_private_data`).
pub(crate) struct StoredPd {
    /// Length in bytes.
    pub(crate) len: usize,
    /// The bytes.
    pub(crate) data: [u8; 224],
}

impl StoredPd {
    /// No bytes.
    pub(crate) const EMPTY: Self = Self {
        len: 0,
        data: [0; 224],
    };

    /// A copy of `pd`, or `None` for no private data. May sleep (`GFP_KERNEL`, as cm.c's
    /// `kmemdup`).
    pub(crate) fn copy(pd: &[u8]) -> Result<Option<CmBox<StoredPd>>> {
        if pd.is_empty() {
            return Ok(None);
        }
        let mut s = CmBox::new(Self::EMPTY, GFP_KERNEL)?;
        s.set(pd);
        Ok(Some(s))
    }

    /// Holds `pd` (at most 224 bytes of it) from now on.
    pub(crate) fn set(&mut self, pd: &[u8]) {
        let n = pd.len().min(self.data.len());
        self.data[..n].copy_from_slice(&pd[..n]);
        self.len = n;
    }

    /// The bytes held.
    pub(crate) fn as_slice(&self) -> &[u8] {
        self.data.get(..self.len).unwrap_or(&[])
    }

    /// The bytes of an optional copy.
    pub(crate) fn bytes(s: &Option<CmBox<StoredPd>>) -> &[u8] {
        s.as_deref().map_or(&[], StoredPd::as_slice)
    }
}

/// Mutable private state of a [`CmId`], behind its lock.
///
/// # Invariants
///
/// `msg` is NULL or a buffer the id posted (`send::send_for_id`), at the MAD layer or waiting
/// in its port's flow-control backlog, whose completion has not yet run: the completion clears
/// it under this lock ([`CmIdInner::untrack`]) before the buffer is freed, and so does taking
/// it out of the backlog ([`CmIdInner::cancel_tracked`]). Only [`CmIdInner::track`] sets it,
/// from a [`PostedMad`].
pub(crate) struct CmIdInner {
    /// `ib_destroy_cm_id()` has started: nothing is delivered any more.
    pub(crate) destroyed: bool,
    /// The id is in the comm-ID table (the table holds a reference).
    pub(crate) published: bool,
    /// Events waiting for the deliverer (counted in [`CmId`]'s `work` too).
    pub(crate) events: EventQueue,
    /// The tracked MAD (REQ, REP, DREQ or SIDR_REQ being retransmitted), or NULL.
    msg: *mut bindings::ib_mad_send_buf,
    /// The state the tracked MAD was sent in (cm.c's `msg->context[1]`).
    msg_state: State,
    /// Retries of the tracked MAD left for the CM to make itself, by posting it again once the
    /// MAD layer's ran out (`timeout::RetryPolicy::reposts`); 0 once it is cancelled. One byte:
    /// the id must stay in kmalloc-256.
    msg_reposts: u8,
    /// The tracked MAD had to wait in its port's flow-control backlog when it was sent: only
    /// then may it still be there (a drain moves it out without this lock, so `true` may be
    /// stale; a MAD posted at once, or posted again by the CM, never waits there).
    msg_queued: bool,
    /// The primary address.
    pub(crate) av: Option<CmBox<Av>>,
    /// The alternate address.
    pub(crate) alt_av: Option<CmBox<Av>>,
    /// Connection parameters.
    pub(crate) conn: Conn,
    /// Where the id is filed in the remote tables.
    pub(crate) remote: Option<Filed>,
    /// Private data of the last MRA, RTU or DREP, for retransmissions.
    pub(crate) stored_pd: Option<CmBox<StoredPd>>,
    /// The id is in timewait and its timewait has not ended (`timewait.rs`; while queued, the
    /// device's timewait queue holds a reference).
    pub(crate) timewait_armed: bool,
    /// Which of its device's timewait lists the id was queued on (its timeout exponent).
    pub(crate) timewait_class: u8,
    /// The address handle every MAD of the connection goes on (`ah.rs`), made by the REQ's
    /// or the REP's send (`send.rs`).
    pub(crate) conn_ah: ConnAh,
    /// Sends in flight that use `conn_ah` (low 7 bits), and [`ConnAh::RETIRED`] once no
    /// send may take the handle any more; it is destroyed, under the lock, once no send uses it
    /// and the id is back in IDLE ([`crate::logic::state::keeps_conn_ah`]), its address was
    /// replaced (LAP) or its device is going away.
    pub(crate) ah_sends: u8,
}

/// A CM id: the C-visible `struct ib_cm_id` plus the CM's private state.
///
/// # Invariants
///
/// - `id` is only written by the CM under `inner`'s lock (`state`, `lap_state`, `service_id`,
///   `remote_id`) or before the id is visible; callers may write `context`, `cm_handler` and
///   `remote_cm_qpn` at any time, so every read of those is volatile.
/// - `users` is 1 (the owner's bias, until destroy) plus the uses in flight; once it reaches 0
///   it never rises again.
/// - `work` is 1 while a thread delivers the id's events plus the events queued in
///   `inner.events` for it (and any that could not be queued, until the deliverer finds the
///   queue empty), except once destroy or a refused event took the queue. It rises only under
///   `inner`'s lock, with the push of the event it counts; only the deliverer lowers it; it is
///   reset to 0 only under `inner`'s lock.
#[pin_data]
pub(crate) struct CmId {
    /// The ABI handle. Must stay the object C callers point at; see [`CmId::from_raw`].
    #[pin]
    id: Opaque<bindings::ib_cm_id>,
    /// The device this id belongs to.
    pub(crate) dev: Arc<CmDevice>,
    /// The local comm ID (reserved for the id's whole life).
    comm: CommSlot,
    /// State and connection data; taken before the device lock when both are needed.
    #[pin]
    pub(crate) inner: SpinLockIrq<CmIdInner>,
    /// Uses in flight; see the type invariants.
    users: UseCount,
    /// The deliverer and the events waiting for it (cm.c's `work_count` plus one); see
    /// [`CmId::claim_delivery`].
    work: AtomicU32,
    /// Gives the comm table's reference back after a grace period.
    #[pin]
    rcu: Opaque<bindings::callback_head>,
    /// The id's place in its device's timewait queue (`timewait.rs`).
    timewait: TwLink<CmId>,
}

/// The CM state of a device, holding ids of this type (`device.rs` is generic over the id type
/// so that it does not name it).
pub(crate) type CmDevice = DeviceOf<CmId>;

// SAFETY: The raw pointers inside `id` (device, context, handler) are plain values owned by
// the C caller; the CM reads them only as the type invariants allow, and all CM-mutable state
// is behind `inner`'s lock or atomic, except `timewait`, which is behind the lock of the id's
// device (`TwLink`'s invariant). `inner.msg` is only used under the lock.
unsafe impl Send for CmId {}
// SAFETY: See `Send`.
unsafe impl Sync for CmId {}
// SAFETY: See `Send`; the connection address handle (`conn_ah`) may be used and destroyed
// from any thread, and the remote-table link (`remote`) is only followed under the tables'
// lock.
unsafe impl Send for CmIdInner {}

/// A MAD just posted for an id (or queued in its port's flow-control backlog), under the id's
/// lock, whose completion therefore has not run yet: what [`CmIdInner::track`] may record,
/// with what the CM retries of it itself.
///
/// # Invariants
///
/// The buffer was posted or queued for the id whose lock the holder of this value holds, and
/// that lock has not been dropped since.
pub(crate) struct PostedMad(*mut bindings::ib_mad_send_buf, u8, bool);

impl PostedMad {
    /// # Safety
    ///
    /// `buf` was just posted for an id whose lock the caller holds, and the value is consumed
    /// before that lock is dropped.
    /// `reposts` is how many retries the CM makes itself once the MAD layer's ran out;
    /// `queued`, whether the buffer waits in its port's backlog instead of being posted.
    pub(crate) unsafe fn new(
        buf: *mut bindings::ib_mad_send_buf,
        reposts: u8,
        queued: bool,
    ) -> Self {
        // INVARIANT: the caller's contract.
        Self(buf, reposts, queued)
    }
}

impl CmIdInner {
    /// Records `mad`, sent in `state`, as the tracked MAD.
    pub(crate) fn track(&mut self, mad: PostedMad, state: State) {
        // INVARIANT: `mad` was posted under this lock, so its completion, which clears `msg`
        // under this lock before the buffer is freed, has not run.
        self.msg = mad.0;
        self.msg_state = state;
        self.msg_reposts = mad.1;
        self.msg_queued = mad.2;
    }

    /// Whether `buf`, whose wait for an answer ran out, is the tracked MAD, sent in `state`
    /// (the id's state now), not cancelled, and has a retry left for the CM to make: if so,
    /// takes that retry. The caller posts the buffer again under this lock.
    pub(crate) fn take_repost(
        &mut self,
        buf: *mut bindings::ib_mad_send_buf,
        state: State,
    ) -> bool {
        if buf.is_null() || self.msg != buf || self.msg_state != state || self.msg_reposts == 0 {
            return false;
        }
        self.msg_reposts -= 1;
        true
    }

    /// The completion of `buf`: if it is the tracked MAD, forgets it and returns the state it
    /// was sent in (`cm_process_send_error`'s check).
    pub(crate) fn untrack(&mut self, buf: *mut bindings::ib_mad_send_buf) -> Option<State> {
        if buf.is_null() || self.msg != buf {
            return None;
        }
        // INVARIANT: cleared before the completion frees the buffer.
        self.msg = core::ptr::null_mut();
        Some(self.msg_state)
    }

    /// After an MRA re-armed the tracked MAD: the state it now counts as sent in.
    pub(crate) fn retag_tracked(&mut self, state: State) {
        self.msg_state = state;
    }

    /// Cancels the tracked MAD, if any (`ib_cancel_mad`): its completion reports a flush. One
    /// still waiting in its port's flow-control backlog (`dev`'s) is taken out, forgotten and
    /// given back, never posted; the caller completes it.
    pub(crate) fn cancel_tracked(&mut self, dev: &CmDevice) -> Option<Unposted> {
        self.stop_tracked(dev, |flow, msg| {
            // SAFETY: `stop_tracked` passes the id's live tracked buffer with its port's flow.
            unsafe { flow.remove(msg) }
        })
    }

    /// Stops the tracked MAD's retries: a posted one is cancelled (`ib_cancel_mad`), one still
    /// waiting in its port's backlog will go out once, unretried, and is forgotten. For
    /// destroy's DREQ: cm.c's goes out once before destroy cancels it, and the peer must hear
    /// of the disconnect.
    pub(crate) fn cancel_tracked_retries(&mut self, dev: &CmDevice) {
        self.stop_tracked(dev, |flow, msg| {
            // SAFETY: As in `cancel_tracked`.
            unsafe { flow.send_once(msg) }.then_some(())
        });
    }

    /// Stops the tracked MAD, if any, with no retries left for the CM. If it still waits in its
    /// port's backlog, `waiting` handles it under the port's flow lock; a `Some` answer means
    /// the id forgets it and returns that answer. Otherwise it is cancelled at the MAD layer
    /// (`ib_cancel_mad`), its completion reporting a flush.
    fn stop_tracked<R>(
        &mut self,
        dev: &CmDevice,
        waiting: impl FnOnce(&mut Flow, *mut bindings::ib_mad_send_buf) -> Option<R>,
    ) -> Option<R> {
        if self.msg.is_null() {
            return None;
        }
        self.msg_reposts = 0;
        let msg = self.msg;
        // One posted when it was sent was never in the backlog: no look there.
        let in_backlog = || {
            // SAFETY: A live buffer the id built (type invariant): its agent stays registered
            // until every such buffer has completed.
            let port_num = u32::from(unsafe { (*(*msg).mad_agent).port_num });
            dev.port(port_num).and_then(|p| waiting(&mut p.flow(), msg))
        };
        if let Some(r) = self.msg_queued.then(in_backlog).flatten() {
            // INVARIANT: still in the backlog or taken out of it, never posted: no completion
            // of the id's will clear it.
            self.msg = core::ptr::null_mut();
            return Some(r);
        }
        // SAFETY: A live buffer (type invariant); `ib_cancel_mad()` is `ib_modify_mad(buf, 0)`,
        // which finds a buffer the agent holds, and returns `-EINVAL` for one that left the
        // backlog but is not posted yet (its completion comes all the same).
        unsafe { bindings::ib_modify_mad(msg, 0) };
        None
    }

    /// Gives the tracked MAD a new timeout (`ib_modify_mad`, after an MRA); `EINVAL` without
    /// one. With `restore` (the message's own timeout), the new timeout stretches only the
    /// wait in progress, and later retries wait `restore` again (the CM's own retries double
    /// from it); without, it applies to every remaining retry (cm.c), and the CM's own retries
    /// double from it.
    pub(crate) fn modify_tracked(&mut self, timeout_ms: u32, restore: Option<u32>) -> Result {
        if self.msg.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: A live buffer (type invariant). One still waiting in the backlog is not
        // found by the MAD layer: `-EINVAL`, as for no MAD at all (no peer has seen it).
        kernel::error::to_result(unsafe { bindings::ib_modify_mad(self.msg, timeout_ms) })?;
        if let Some(own) = restore {
            let own = i32::try_from(own).unwrap_or(i32::MAX);
            // `ib_modify_mad()` armed the wait in progress with `timeout_ms` and left it in the
            // buffer's `timeout_ms`, which the MAD layer reads only when it retransmits
            // (`retry_send()`, at the end of that wait): putting the MAD's own timeout back
            // makes the later retries wait that again. The MAD layer may read the field under
            // its agent lock, which we cannot take: a data race KCSAN would report, benign
            // because the store is a single aligned volatile write and either value is one the
            // MAD was given (and the wait just armed is at least 2 ms).
            // SAFETY: A live posted buffer (type invariant); `timeout_ms` is an aligned `int`.
            unsafe {
                core::ptr::write_volatile(core::ptr::addr_of_mut!((*self.msg).timeout_ms), own)
            };
        }
        Ok(())
    }
}

/// Where an id is filed in the remote tables (`remote.rs`), as its `remote` records it.
pub(crate) enum Filed {
    /// A REQ-made id (either side): its entry in the REQ and QP tables.
    Conn(RemoteLink),
    /// A SIDR_REQ-made id: its key in the SIDR table.
    Sidr(SidrKey),
}

/// The REQ-table link (`rb_node`) of a REQ-made id's entry in the remote tables: what takes
/// the id out of them without a walk down the tree (cm.c's `cm_id_priv->timewait_info`).
/// Only the tables make and read it (`remote.rs`), under their lock.
///
/// # Invariants
///
/// The link is the REQ-tree link of a live entry of the CM's remote tables (`remote::tables()`,
/// the one `ConnTables` there is), the entry the insert that made the link linked in, and it
/// stays so until the link is consumed: the entry leaves the tables only through the removal
/// that consumes its link (there is one link per entry: not `Clone`), or when the tables go at
/// module exit, after every id (which holds the links) is gone. A link dropped unused leaves its
/// entry in the tables.
pub(crate) struct RemoteLink(core::ptr::NonNull<bindings::rb_node>);

impl RemoteLink {
    /// Wraps `node`.
    ///
    /// # Safety
    ///
    /// `node` must be the `req_link` of an entry just linked into both trees of the CM's remote
    /// tables, whose removal takes this link (the type invariants from here on); one link per
    /// entry.
    pub(crate) unsafe fn new(node: core::ptr::NonNull<bindings::rb_node>) -> Self {
        Self(node)
    }

    /// The link.
    pub(crate) fn node(&self) -> *mut bindings::rb_node {
        self.0.as_ptr()
    }
}

/// `enum ib_cm_state` as the C ABI spells it.
pub(crate) type CmState = bindings::ib_cm_state;

/// What an id starts as.
pub(crate) struct Init {
    /// The handler.
    pub(crate) handler: bindings::ib_cm_handler,
    /// The caller's context.
    pub(crate) context: *mut ffi::c_void,
    /// The initial state.
    pub(crate) state: State,
    /// Service ID.
    pub(crate) service_id: ServiceId,
    /// The peer's comm ID (or SIDR request ID).
    pub(crate) remote_id: u32,
    /// Initial address.
    pub(crate) av: Option<CmBox<Av>>,
    /// Initial alternate address (a REQ's alternate path).
    pub(crate) alt_av: Option<CmBox<Av>>,
    /// Initial parameters.
    pub(crate) conn: Conn,
    /// Where the caller will file the id in the remote tables.
    pub(crate) remote: Option<Filed>,
    /// The creator delivers the id's first event itself (passive ids): nobody else may
    /// become its deliverer, even if a message finds the id before it is handed over.
    pub(crate) delivering: bool,
}

/// A volatile read of field `$f` of the id's C struct (`ib_cm_id`), the one audited access
/// to it: who writes each field, and when, is in `CmId`'s type invariants; each accessor
/// below names its rule.
macro_rules! c_read {
    ($self:expr, $f:ident) => {
        // SAFETY: `id` is initialised when the `CmId` is made and lives as long as it; every
        // field is plain data, and a volatile access tolerates the writes the type invariants
        // allow (the C caller's at any time to its fields, the CM's under `inner`).
        unsafe { core::ptr::addr_of!((*$self.id.get()).$f).read_volatile() }
    };
}

/// A volatile write of field `$f` of the id's C struct. Only the CM's own fields, with
/// `inner` held or the id not yet visible (the type invariants).
macro_rules! c_write {
    ($self:expr, $f:ident, $v:expr) => {
        // SAFETY: As in `c_read!`; the caller holds `inner` or owns the unpublished id.
        unsafe { core::ptr::addr_of_mut!((*$self.id.get()).$f).write_volatile($v) }
    };
}

impl CmId {
    /// Allocates an IDLE id on `dev` (`cm_alloc_id_priv`): `remote_cm_qpn` 1, a reserved local
    /// comm ID; `publish` makes it reachable by comm ID at once (`ib_create_cm_id`).
    pub(crate) fn new(
        dev: Arc<CmDevice>,
        handler: bindings::ib_cm_handler,
        context: *mut ffi::c_void,
        publish: bool,
    ) -> Result<Arc<Self>> {
        let init = Init {
            handler,
            context,
            state: State::Idle,
            service_id: ServiceId::new(0),
            remote_id: 0,
            av: None,
            alt_av: None,
            conn: Conn::default(),
            remote: None,
            delivering: false,
        };
        // Marked published when made: nobody else holds the id before the table has it, so
        // publishing takes no lock (`CmId::publish` is for ids made unpublished).
        let id = Self::make(dev, init, publish)?;
        if publish {
            id.comm_id().publish(&id);
        }
        Ok(id)
    }

    /// Builds an id that nobody else can see yet (`cm_alloc_id_priv` plus the fields a
    /// received REQ or SIDR_REQ sets), not yet published.
    pub(crate) fn build(dev: Arc<CmDevice>, init: Init) -> Result<Arc<Self>> {
        Self::make(dev, init, false)
    }

    /// [`CmId::build`], marked `published` for a caller that publishes it before anyone else
    /// can hold it.
    fn make(dev: Arc<CmDevice>, init: Init, published: bool) -> Result<Arc<Self>> {
        let comm = CommId::alloc()?;
        let device = dev.ib_dev();
        let local_id = comm.wire().to_be();
        let made = Arc::pin_init(
            try_pin_init!(Self {
                id <- Opaque::ffi_init(|slot: *mut bindings::ib_cm_id| {
                    // SAFETY: `slot` is valid for writes while the closure runs.
                    unsafe {
                        slot.write(bindings::ib_cm_id {
                            cm_handler: init.handler,
                            context: init.context,
                            device,
                            service_id: init.service_id.to_be(),
                            state: init.state.raw(),
                            lap_state: bindings::ib_cm_lap_state_IB_CM_LAP_UNINIT,
                            local_id,
                            remote_id: init.remote_id.to_be(),
                            remote_cm_qpn: 1,
                        })
                    }
                }),
                dev,
                comm: CommSlot { id: comm, live: AtomicBool::new(true) },
                inner <- new_spinlock_irq!(
                    CmIdInner {
                        destroyed: false,
                        published,
                        events: EventQueue::default(),
                        msg: core::ptr::null_mut(),
                        msg_state: State::Idle,
                        msg_reposts: 0,
                        msg_queued: false,
                        av: init.av,
                        alt_av: init.alt_av,
                        conn: init.conn,
                        remote: init.remote,
                        stored_pd: None,
                        timewait_armed: false,
                        timewait_class: 0,
                        conn_ah: ConnAh::default(),
                        ah_sends: 0,
                    },
                    "CmId::inner"
                ),
                users: UseCount::new(),
                work: AtomicU32::new(if init.delivering { 1 } else { 0 }),
                rcu: Opaque::uninit(),
                timewait: TwLink::new(),
            }),
            GFP_KERNEL,
        );
        match made {
            Ok(id) => Ok(id),
            Err(e) => {
                comm.release_unused();
                Err(e)
            }
        }
    }

    /// The id's reserved local comm ID.
    pub(crate) fn comm_id(&self) -> CommId {
        self.comm.id
    }

    /// Takes the comm ID reservation for its release by destroy; `None` if taken before.
    pub(crate) fn take_comm_id(&self) -> Option<CommId> {
        self.comm
            .live
            .swap(false, Ordering::AcqRel)
            .then_some(self.comm.id)
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
    pub(crate) fn raw(this: &Self) -> *mut bindings::ib_cm_id {
        this.id.get()
    }

    /// The RCU head that gives the comm table's reference back.
    pub(crate) fn rcu_head(&self) -> *mut bindings::callback_head {
        self.rcu.get()
    }

    /// The reference the comm table held, from its RCU head.
    ///
    /// # Safety
    ///
    /// `head` must be the head of a `CmId` passed to `call_rcu` by `CommId::release`.
    pub(crate) unsafe fn from_rcu_head(head: *mut bindings::callback_head) -> Arc<CmId> {
        // SAFETY: `head` is the `rcu` field of a `CmId` (caller contract).
        let this = unsafe {
            kernel::container_of!(head.cast::<Opaque<bindings::callback_head>>(), CmId, rcu)
        };
        // SAFETY: The table's reference came from `Arc::into_raw` in `CommId::publish`.
        unsafe { Arc::from_raw(this) }
    }

    /// The caller's current handler.
    pub(crate) fn handler(&self) -> bindings::ib_cm_handler {
        // Callers may rewrite it at any time.
        c_read!(self, cm_handler)
    }

    /// Calls the caller's handler with `ev` (`cm_process_work()`'s call), with no lock held.
    /// A non-zero return refuses the id: it comes back with the reference of the handle the
    /// caller held, which is the CM's from then on (the caller destroys the id, then drops
    /// it).
    ///
    /// Every id an event is delivered to has a handle out: `ib_create_cm_id()`'s, a
    /// listener's, or the one a passive id's first event hands over (`recv::hand_over`).
    pub(crate) fn call_handler(
        self: &Arc<Self>,
        ev: &Event,
    ) -> core::result::Result<(), (i32, Arc<CmId>)> {
        let raw = CmId::raw(self);
        let ret = match self.handler() {
            // SAFETY: A handler of the `<rdma/ib_cm.h>` type, called with a live id and an
            // event whose pointers are valid for the duration of the call.
            Some(h) => unsafe { h(raw, &ev.ev) },
            None => -(bindings::EINVAL as i32),
        };
        if ret == 0 {
            return Ok(());
        }
        // SAFETY: The handler refused the id: the handle it held (see above) is the CM's now,
        // taken back once, here.
        Err((ret, unsafe { CmId::from_raw(raw) }))
    }

    /// The caller's current context.
    pub(crate) fn context(&self) -> *mut ffi::c_void {
        // Callers may rewrite it at any time.
        c_read!(self, context)
    }

    /// The local comm ID as the wire carries it.
    pub(crate) fn local_id(&self) -> u32 {
        self.comm.id.wire()
    }

    /// The peer's comm ID (0 until known).
    pub(crate) fn remote_id(&self) -> u32 {
        // Written only under the lock or before publication.
        u32::from_be(c_read!(self, remote_id))
    }

    /// Sets the peer's comm ID. Callers hold the id lock.
    pub(crate) fn set_remote_id(&self, v: u32) {
        c_write!(self, remote_id, v.to_be());
    }

    /// The destination QP of the id's MADs (`remote_cm_qpn`; callers may redirect it).
    pub(crate) fn remote_cm_qpn(&self) -> u32 {
        // Callers may rewrite it at any time.
        c_read!(self, remote_cm_qpn)
    }

    /// The id's state as callers read it.
    pub(crate) fn state(&self) -> CmState {
        // Written only by the CM under `inner`.
        c_read!(self, state)
    }

    /// The id's state as the state machine sees it.
    pub(crate) fn cm_state(&self) -> State {
        State::from_raw(self.state()).unwrap_or(State::Idle)
    }

    /// Stores a state. Callers hold `inner` or own the unpublished id.
    pub(crate) fn set_state(&self, state: CmState) {
        c_write!(self, state, state);
    }

    /// The LAP state.
    pub(crate) fn lap(&self) -> Lap {
        Lap::from_raw(c_read!(self, lap_state)).unwrap_or(Lap::Uninit)
    }

    /// Stores a LAP state. Callers hold `inner`.
    pub(crate) fn set_lap(&self, lap: Lap) {
        c_write!(self, lap_state, lap.raw());
    }

    /// The service ID as stored in the handle.
    pub(crate) fn service_id(&self) -> ServiceId {
        // Written only by the CM.
        ServiceId::from_be(c_read!(self, service_id))
    }

    /// Sets the service ID. Callers hold `inner` or own the unpublished id.
    pub(crate) fn set_service_id(&self, sid: ServiceId) {
        c_write!(self, service_id, sid.to_be());
    }

    /// The address of the caller's current handler (callers may rewrite it at any time).
    pub(crate) fn handler_addr(&self) -> Option<usize> {
        // CAST: the sharing rule compares handler addresses, exactly as cm.c compares pointers.
        self.handler().map(|f| f as usize)
    }

    /// Whether the caller's `context` is NULL (callers may rewrite it at any time).
    pub(crate) fn context_is_null(&self) -> bool {
        self.context().is_null()
    }

    /// Takes one use unless the id is already past its destroy (`refcount_inc_not_zero`).
    pub(crate) fn get_user(&self) -> bool {
        self.users.get()
    }

    /// Ends a use (`cm_deref_id`).
    pub(crate) fn put_user(&self) {
        self.users.put();
    }

    /// Whether a thread is delivering the id's events. Under `inner`'s lock (`_g`) a `false`
    /// holds until this holder claims the delivery: only holders of the lock add to the count.
    pub(crate) fn has_deliverer(&self, _g: &CmIdInner) -> bool {
        self.work.load(Ordering::Acquire) != 0
    }

    /// Under `inner`'s lock: counts one more event (`atomic_inc_and_test(&work_count)`);
    /// `true` if there was no deliverer and the caller now is it, else the caller queues the
    /// event in `events` before it lets the lock go, where the deliverer will look for it.
    pub(crate) fn claim_delivery(&self, _g: &mut CmIdInner) -> bool {
        self.work.fetch_add(1, Ordering::AcqRel) == 0
    }

    /// The deliverer, after one event: `false` if none more is counted, and the caller is no
    /// longer the deliverer (`atomic_add_negative(-1, &work_count)`): the common case takes
    /// no lock. `true`: more were counted, queued by holders of the lock.
    pub(crate) fn delivered_one(&self) -> bool {
        let before = self.work.fetch_sub(1, Ordering::AcqRel);
        // Only the deliverer, which a claim (or `Init::delivering`) made, gets here.
        debug_assert!(before != 0);
        before != 1
    }

    /// Under `inner`'s lock: no thread delivers from now on, whatever was counted (the
    /// deliverer found the id destroyed, or no event behind the count: one lost when it
    /// could not be queued).
    pub(crate) fn end_delivery(&self, _g: &mut CmIdInner) {
        self.work.store(0, Ordering::Release);
    }

    /// Pins a listener found in the tree for one handler invocation. Called under the device
    /// lock, while the id is in the tree, so `users` is at least the bias.
    pub(crate) fn listener_get(&self) {
        self.add_user();
    }

    /// Takes one more use for a holder that knows the bias is still held (a listener pinned
    /// under the device lock, a new id handed to its first handler).
    pub(crate) fn add_user(&self) {
        self.users.add();
    }

    /// Ends a pin taken by [`CmId::listener_get`].
    pub(crate) fn listener_put(&self) {
        self.put_user();
    }

    /// Waits up to `ms` until no use is in flight; true once there is none.
    pub(crate) fn wait_unused_ms(&self, ms: u32) -> bool {
        self.users.wait_zero_ms(ms)
    }

    /// In-flight uses (the bias included), for tests and diagnostics.
    pub(crate) fn users(&self) -> u32 {
        self.users.load()
    }

    /// The rate-limited report of a destroy still waiting after `waited_ms`.
    pub(crate) fn warn_destroy_wait(&self, old_state: State, waited_ms: u64) {
        let (old, now) = (old_state.name(), self.cm_state().name());
        let handler = self
            .handler()
            .map_or(core::ptr::null(), |h| h as *const kernel::ffi::c_void);
        // SAFETY: The strings are valid for their lengths; the rest are plain values (the
        // handler is only printed, as a symbol).
        unsafe {
            bindings::ibcm_glue_warn_destroy_wait(
                self.local_id(),
                old.as_ptr().cast(),
                old.len(),
                now.as_ptr().cast(),
                now.len(),
                self.service_id().get(),
                handler,
                self.users(),
                waited_ms,
            )
        };
    }

    /// Whether the last share of this id has been destroyed.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn is_destroyed(&self) -> bool {
        self.inner.lock().destroyed
    }
}

// The footprint the README quotes: the id in kmalloc-256, its address in kmalloc-64. Lock
// debugging and PREEMPT_RT (an rt_mutex per spinlock) make every spinlock bigger, so this holds
// only without them.
#[cfg(not(any(CONFIG_DEBUG_SPINLOCK, CONFIG_DEBUG_LOCK_ALLOC, CONFIG_PREEMPT_RT)))]
const _: () = assert!(
    core::mem::size_of::<bindings::refcount_t>().next_multiple_of(8) + core::mem::size_of::<CmId>()
        <= 256
        && core::mem::size_of::<Av>() <= 64
);

/// An id's comm ID reservation: released by destroy, or by `Drop` for an id that was never
/// destroyed (a fresh `ib_cm_insert_listen` id that found a listener to share, a passive id
/// whose setup failed). Only unpublished ids can be dropped undestroyed: a published one is
/// held by the table until destroy.
struct CommSlot {
    id: CommId,
    live: AtomicBool,
}

impl Drop for CommSlot {
    fn drop(&mut self) {
        if *self.live.get_mut() {
            self.id.release_unused();
        }
    }
}

impl CmId {
    /// Makes `self`, fresh from [`CmId::new`], listen on `requested` (or an assigned ID), or
    /// shares an existing listener when `handler` allows it.
    ///
    /// Returns the listener the caller now holds a reference to: `self` or the shared one.
    pub(crate) fn listen(
        self: &Arc<Self>,
        requested: ServiceId,
        assign: bool,
        handler: Option<usize>,
        reservation: ListenReservation<CmId>,
    ) -> Result<Arc<CmId>> {
        let guard = self.inner.lock();
        if guard.destroyed || self.state() != bindings::ib_cm_state_IB_CM_IDLE {
            return Err(EINVAL);
        }
        let mut dev = self.dev.inner.lock();
        if dev.going_down {
            return Err(ENODEV);
        }
        // The new id is not yet visible to sharers, so its state may be set ahead of the
        // insert; on failure it is put back.
        self.set_state(bindings::ib_cm_state_IB_CM_LISTEN);
        let outcome = dev
            .listen
            .insert(self, requested, assign, handler, reservation);
        match outcome {
            Ok(Inserted::New(sid)) => {
                self.set_service_id(sid);
                Ok(self.clone())
            }
            Ok(Inserted::Shared(existing)) => {
                self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
                Ok(existing)
            }
            Err((e, reservation)) => {
                self.set_state(bindings::ib_cm_state_IB_CM_IDLE);
                drop(dev);
                drop(guard);
                // Freed outside the locks.
                drop(reservation);
                Err(listen_errno(e))
            }
        }
    }
}

impl Listener for CmId {
    fn handler_addr(&self) -> Option<usize> {
        CmId::handler_addr(self)
    }

    fn context_is_null(&self) -> bool {
        CmId::context_is_null(self)
    }

    fn listener_get(&self) {
        CmId::listener_get(self)
    }
}

impl Queued for CmId {
    fn tw_link(&self) -> &TwLink<Self> {
        &self.timewait
    }
}
