// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Sending CM MADs and their completions.
//!
//! Stands for `cm_alloc_msg()`, `cm_alloc_response_msg()`, `cm_post_send_mad()`,
//! `cm_send_handler()` and `cm_free_msg()` in cm.c, for the messages the CM sends so far:
//! replies built from a received MAD (REJ for an unknown service, SIDR_REP UNSUPPORTED) and
//! replies of an id to the REQ or SIDR_REQ that created it (REJ, SIDR_REP). Every send first
//! passes the device's send gate, so none starts once removal has begun and removal waits for
//! those in flight before it unregisters the agents.
//!
//! Beyond cm.c: an id's REQ, DREQ, LAP and SIDR_REQ pass their port's flow control
//! (`logic::flow`, `backlog.rs`): at most a limit of them are at the MAD layer per port, the
//! rest wait in order, and each completion lets the next one out. Answers never wait.

use crate::{
    ah::ConnAh,
    av::Av,
    backlog::{Spare, Unposted, UnpostedList},
    bindings,
    cm_id::{CmDevice, CmId, CmIdInner, PostedMad},
    device::GateGuard,
    error::ptr_error,
    logic::{
        flow::{self, Admit},
        timeout,
        trace::IdTrace,
        wire::{encode_zeroed_mad, AttrId, CmMessage, MAD_HDR_LEN, MAD_LEN, PAYLOAD_LEN},
    },
    port::{CmPort, Counter},
    recv_wc::RecvWc,
    reply_ah::ReplyAh,
    send_pool::POOL_PKEY_INDEX,
    tunables,
};
use core::mem::ManuallyDrop;
use kernel::{ffi, prelude::*, sync::Arc};

/// `IB_MGMT_BASE_VERSION`.
const BASE_VERSION: u8 = 1;
/// Queue pair 1, where CM MADs go unless an id was redirected.
pub(crate) const QP1: u32 = 1;

/// Where a MAD goes.
pub(crate) enum Dest {
    /// Back to the sender of a received MAD (address handle from its work completion).
    Response {
        /// The work completion.
        wc: *const bindings::ib_wc,
        /// Its GRH (RoCE always has one).
        grh: *const bindings::ib_grh,
    },
    /// Along a given address (non-sleeping address handle creation): the REJ INVALID_ALT_GID
    /// of a REQ, on the primary path's address; the white-box tests send as a peer with it.
    /// Ids send with [`send_for_id`].
    Av {
        /// The address.
        attr: *mut bindings::rdma_ah_attr,
        /// Destination QP.
        remote_qpn: u32,
        /// P_Key index.
        pkey_index: u16,
    },
}

/// The address handle of one send, and who destroys it.
pub(crate) enum SendAh {
    /// Created for this send alone: destroyed when the send completes.
    Own(*mut bindings::ib_ah),
    /// A cached reply handle (`reply_ah.rs`) and its `ib_ah`: the send holds a reference
    /// until it completes.
    Shared(Arc<ReplyAh>, *mut bindings::ib_ah),
    /// The id's connection handle ([`ConnAh`]): the id counts the send in `ah_sends`,
    /// and that count keeps the handle from being destroyed until the completion gives it
    /// back (the buffer's id reference keeps the id, which holds the handle, alive).
    Conn(*mut bindings::ib_ah),
}

/// What `context[0]` of a buffer on its id's connection handle points at: neither an own
/// handle (NULL) nor a cached reply handle (an `Arc<ReplyAh>`). Word-aligned, as those are,
/// so bit 0 is free for [`POOLED`].
static CONN_AH_TAG: u64 = 0;

fn conn_ah_tag() -> *mut ffi::c_void {
    core::ptr::addr_of!(CONN_AH_TAG).cast_mut().cast()
}

/// Bit 0 of `context[0]`: the buffer was created for its port's pool (`send_pool.rs`: QP1,
/// P_Key index [`POOL_PKEY_INDEX`]) and goes back there once its send is over.
const POOLED: usize = 1;

/// `context[0]` without the [`POOLED`] bit, and the bit.
fn split_ctx(ctx: *mut ffi::c_void) -> (*mut ffi::c_void, bool) {
    // CAST: the pointer's address, to read and clear its tag.
    let pooled = (ctx as usize) & POOLED != 0;
    (
        ctx.cast::<u8>().wrapping_sub(usize::from(pooled)).cast(),
        pooled,
    )
}

impl SendAh {
    /// Moves the handle into `buf`: `buf.ah` is the handle, `buf.context[0]` the shared
    /// reference (NULL for an own handle, the tag for the id's connection handle), marked
    /// [`POOLED`] if `pooled`, both released by [`recycle`].
    ///
    /// # Safety
    ///
    /// `buf` must be a send buffer we own and have not posted; `pooled` only if
    /// [`new_buf`] made or took it for the pool.
    unsafe fn into_buf(self, buf: *mut bindings::ib_mad_send_buf, pooled: bool) {
        let this = ManuallyDrop::new(self);
        let (ah, ctx) = match &*this {
            SendAh::Own(ah) => (*ah, core::ptr::null_mut()),
            SendAh::Conn(ah) => (*ah, conn_ah_tag()),
            SendAh::Shared(shared, ah) => {
                // SAFETY: Reads the `Arc` out of `this`, which is never dropped: the
                // reference moves into the buffer.
                let shared = unsafe { core::ptr::read(shared) };
                (*ah, Arc::into_raw(shared).cast_mut().cast::<ffi::c_void>())
            }
        };
        // SAFETY: `buf` is ours (caller).
        unsafe {
            (*buf).ah = ah;
            (*buf).context[0] = ctx.cast::<u8>().wrapping_add(usize::from(pooled)).cast();
        }
    }
}

impl Drop for SendAh {
    fn drop(&mut self) {
        if let SendAh::Own(ah) = self {
            // SAFETY: Created for this send and never handed to the MAD layer.
            unsafe { bindings::ibcm_glue_destroy_ah(*ah) };
        }
    }
}

/// Releases the address handle of a send buffer filled by [`SendAh::into_buf`] (a buffer on
/// its id's connection handle leaves the handle alone: its id accounts for it), then gives
/// the buffer back to its port's pool if it was made for it and the pool takes it, or frees
/// it (`port`: the buffer's port; `None` frees it).
///
/// # Safety
///
/// `buf` must be such a buffer whose send completed or was never posted, with no id
/// reference left in `context[1]`; called once.
unsafe fn recycle(port: Option<&CmPort>, buf: *mut bindings::ib_mad_send_buf) {
    // SAFETY: `buf` is ours (caller).
    let (ah, ctx) = unsafe { ((*buf).ah, (*buf).context[0]) };
    let (ctx, pooled) = split_ctx(ctx);
    if ctx == conn_ah_tag() {
        // The id's connection handle.
    } else if !ctx.is_null() {
        // SAFETY: `context[0]` holds the reference `into_buf` moved in; taken back once.
        drop(unsafe { Arc::<ReplyAh>::from_raw(ctx.cast::<ReplyAh>()) });
    } else if !ah.is_null() {
        // SAFETY: An own handle of this send, not used any more.
        unsafe { bindings::ibcm_glue_destroy_ah(ah) };
    }
    let port = port.filter(|_| pooled);
    // SAFETY: `buf` is ours, its handle and references released (above, caller); one made for
    // the pool of its port (its tag) meets the pool's terms once its fields are cleared, and
    // what the pool refuses (or any other buffer) is freed, once.
    unsafe {
        (*buf).ah = core::ptr::null_mut();
        (*buf).context = [core::ptr::null_mut(); 2];
        let refused = match port {
            Some(port) => port.pool().put(buf, tunables::send_pool_size()).err(),
            None => Some(buf),
        };
        if let Some(buf) = refused {
            bindings::ib_free_send_mad(buf);
        }
    }
}

/// A send buffer of `port`'s agent for a MAD to `remote_qpn` with `pkey_index`, with an
/// all-zero MAD, and whether it is the pool's: a spare one from the port's pool if the pool
/// serves those ([`crate::send_pool`]), else a new one (`gfp`), made for the pool if it would
/// serve it. `_gate` is the device's send gate, which keeps the agent registered.
fn new_buf(
    port: &CmPort,
    _gate: &GateGuard<'_>,
    remote_qpn: u32,
    pkey_index: u16,
    gfp: bindings::gfp_t,
) -> Result<(*mut bindings::ib_mad_send_buf, bool)> {
    let poolable =
        remote_qpn == QP1 && pkey_index == POOL_PKEY_INDEX && tunables::send_pool_size() != 0;
    if poolable {
        if let Some(buf) = port.pool().take() {
            return Ok((buf, true));
        }
    }
    let agent = port.agent();
    if agent.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `agent` is registered while the gate is held; sizes are the CM's fixed MAD
    // layout.
    let buf = unsafe {
        bindings::ib_create_send_mad(
            agent,
            remote_qpn,
            pkey_index,
            0,
            // CAST: 24 and 232 fit in an int.
            MAD_HDR_LEN as i32,
            PAYLOAD_LEN as i32,
            gfp,
            BASE_VERSION,
        )
    };
    if let Some(e) = ptr_error(buf, ENOMEM) {
        return Err(e);
    }
    Ok((buf, poolable))
}

/// Encodes `msg` into the MAD of a send buffer from [`new_buf`] (the CM's sizes: header plus
/// payload, one whole MAD), in place, with no copy through the stack. The MAD is all zeros
/// (`ib_create_send_mad` allocates the buffer with `kzalloc`; a spare one from the pool is
/// cleared when taken), so it is not cleared again.
///
/// # Safety
///
/// `buf` must be such a buffer that we own, have not posted and have not written to since.
unsafe fn encode_into(
    buf: *mut bindings::ib_mad_send_buf,
    msg: &CmMessage<'_>,
    tid: u64,
    attr_mod: u32,
) {
    // SAFETY: The buffer's `mad` is `MAD_HDR_LEN + PAYLOAD_LEN` = `MAD_LEN` bytes, allocated
    // with it and not aliased while we own it (caller); the borrow ends with this function.
    let mad = unsafe { &mut *(*buf).mad.cast::<[u8; MAD_LEN]>() };
    encode_zeroed_mad(msg, tid, attr_mod, mad);
    // Records the MAD for the white-box receive-path tests.
    #[cfg(ibcm_kunit)]
    // SAFETY: `mad` is 256 readable bytes.
    unsafe {
        bindings::ibcm_glue_capture_put(mad.as_ptr())
    };
}

/// Sends `msg` back to the sender of the received `wc`, with TID `tid` (cm.c's response
/// MADs: QP1, the completion's address and P_Key index, no id attached). May sleep.
pub(crate) fn send_response(
    dev: &CmDevice,
    port_num: u32,
    wc: &RecvWc,
    tid: u64,
    msg: &CmMessage<'_>,
) -> Result {
    let dest = Dest::Response {
        wc: wc.wc(),
        grh: wc.grh(),
    };
    // SAFETY: `wc` owns a valid completion and GRH for the call, which runs in `dev`'s
    // receive work (a `RecvWc` is lent only there).
    unsafe { send(dev, port_num, dest, msg, tid, 0, false) }
}

/// Sends `msg` along the address `av` (to QP1, `GFP_KERNEL`), with no id attached.
pub(crate) fn send_along(dev: &CmDevice, av: &Av, msg: &CmMessage<'_>, tid: u64) -> Result {
    let dest = Dest::Av {
        attr: av.attr(),
        remote_qpn: QP1,
        pkey_index: av.pkey_index,
    };
    // SAFETY: `av`'s attribute is initialised (its invariant) and outlives the call.
    unsafe { send(dev, av.port_num(), dest, msg, tid, 0, false) }
}

/// Sends `msg` from port `port_num` of `dev`, with `tid` and `attr_mod` in the MAD header.
///
/// `gfp_atomic` selects `GFP_ATOMIC` for callers that may be in atomic context; those must
/// use [`Dest::Av`].
///
/// # Safety
///
/// The pointers in `dest` must be valid for the duration of the call. [`Dest::Response`] may
/// resolve the sender's address (sleeps) and is for the device's receive work only.
pub(crate) unsafe fn send(
    dev: &CmDevice,
    port_num: u32,
    dest: Dest,
    msg: &CmMessage<'_>,
    tid: u64,
    attr_mod: u32,
    gfp_atomic: bool,
) -> Result {
    let _gate = dev.enter_send().ok_or(ENODEV)?;
    let port = dev.port(port_num).ok_or(EINVAL)?;
    let agent = port.agent();
    if agent.is_null() {
        return Err(ENODEV);
    }
    let (ah, remote_qpn, pkey_index) = match dest {
        Dest::Response { wc, grh } => {
            // Resolving the sender, and creating a cached entry's handle, may sleep: only
            // on a cache miss, so say it on every call.
            // SAFETY: Plain debug check.
            unsafe { bindings::ibcm_glue_might_sleep() };
            // SAFETY: `agent` is registered (gate held); `wc`/`grh` are valid (caller).
            let ah = match unsafe { dev.reply_addr(agent, wc, grh) }? {
                Some(shared) => {
                    // SAFETY: `agent` is the registered agent of the port the address was
                    // resolved on (the cache is keyed by port); receive work may sleep.
                    let ah = unsafe { shared.ah(agent) }?;
                    SendAh::Shared(shared, ah)
                }
                None => {
                    // SAFETY: As above.
                    let ah = unsafe { bindings::ibcm_glue_ah_from_wc(agent, wc, grh) };
                    if let Some(e) = ptr_error(ah, ENOMEM) {
                        return Err(e);
                    }
                    SendAh::Own(ah)
                }
            };
            // SAFETY: `wc` is valid (caller).
            (ah, QP1, unsafe { (*wc).pkey_index })
        }
        Dest::Av {
            attr,
            remote_qpn,
            pkey_index,
        } => {
            // SAFETY: `agent` is registered, so its QP and PD are live; `attr` is valid
            // (caller).
            let ah = unsafe { bindings::rdma_create_ah((*(*agent).qp).pd, attr, 0) };
            if let Some(e) = ptr_error(ah, ENOMEM) {
                return Err(e);
            }
            (SendAh::Own(ah), remote_qpn, pkey_index)
        }
    };
    let gfp = if gfp_atomic {
        bindings::GFP_ATOMIC
    } else {
        bindings::GFP_KERNEL
    };
    // On failure `ah` is dropped: an own handle is destroyed, a shared one released.
    let (buf, pooled) = new_buf(port, &_gate, remote_qpn, pkey_index, gfp)?;
    // SAFETY: `buf` is a send buffer with a zero MAD that we own until it is posted; the
    // message goes into its MAD and `ah` moves into it.
    unsafe {
        encode_into(buf, msg, tid, attr_mod);
        ah.into_buf(buf, pooled);
        (*buf).timeout_ms = 0;
        (*buf).retries = 0;
    }
    // SAFETY: `buf` is ready; on failure it is still ours.
    let ret = unsafe { bindings::ib_post_send_mad(buf, core::ptr::null_mut()) };
    if ret != 0 {
        // SAFETY: Not posted, so the buffer and its handle are still ours.
        unsafe { recycle(Some(port), buf) };
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

/// Whether a test asks the allocation of an id's MAD send buffers to fail (`fail_send_mads`, a
/// module parameter of test builds only).
fn forced_failure() -> bool {
    #[cfg(ibcm_kunit)]
    // SAFETY: Reads a `bool` module parameter.
    return unsafe { bindings::ibcm_glue_fail_send_mads() };
    #[cfg(not(ibcm_kunit))]
    false
}

/// Sends `msg` for `id` along its primary address (`cm_alloc_msg` + `ib_post_send_mad`), with
/// the MAD layer retransmitting it the id's `max_cm_retries` times every `timeout_ms` if that
/// is non-zero. The buffer carries a reference to the id (`context[1]`) until its completion.
/// `trace` fires once the buffer is allocated, just before the post (where cm.c traces its
/// sends). Non-sleeping: `g` is the id's locked state (the proof that the lock is held, which
/// the returned [`PostedMad`] relies on), possibly in atomic context.
///
/// With `on_conn`, the send goes on the id's connection handle ([`ConnAh`]) and counts itself
/// in `ah_sends`, or, if there is none (the REQ, the REP), creates it within the device's
/// budget; without, or when the budget is spent or the creation fails, it creates a handle of
/// its own (cm.c's way).
#[expect(clippy::too_many_arguments)]
pub(crate) fn send_for_id(
    id: &Arc<CmId>,
    g: &mut CmIdInner,
    msg: &CmMessage<'_>,
    tid: Option<u64>,
    attr_mod: u32,
    timeout_ms: u32,
    trace: Option<IdTrace>,
    on_conn: bool,
) -> Result<(PostedMad, u64)> {
    // The MAD layer makes the retries at the message's own timeout; under a backoff policy the
    // CM makes the rest itself (`Completed::repost`).
    let policy = if timeout_ms == 0 {
        Default::default()
    } else {
        tunables::retry_policy()
    };
    let reposts = policy.reposts(g.conn.max_cm_retries);
    let retries = policy.linear_retries(g.conn.max_cm_retries);
    let av = g.av.as_deref().ok_or(EINVAL)?;
    let dev = &*id.dev;
    // Once removal began, cm.c's `cm_alloc_msg` finds the port's MAD agent gone: `-EINVAL`.
    let _gate = dev.enter_send().ok_or(EINVAL)?;
    let port = dev.port(av.port_num()).ok_or(EINVAL)?;
    let agent = port.agent();
    if agent.is_null() {
        return Err(EINVAL);
    }
    // `cm_form_tid`: the agent's high TID and the comm ID as `ib_cm_id.local_id` stores it.
    let tid = tid.unwrap_or_else(|| {
        // SAFETY: `agent` is registered while the gate is held; `hi_tid` is fixed.
        let hi = unsafe { (*agent).hi_tid };
        (u64::from(hi) << 32) | u64::from(id.local_id().to_be())
    });
    let ah = if !on_conn {
        SendAh::Own(create_ah(agent, av)?.as_ptr())
    } else {
        match g.conn_ah.get() {
            Some(ah) => SendAh::Conn(ah.as_ptr()),
            None => first_conn_send(dev, agent, av, &mut g.conn_ah)?,
        }
    };
    let on_conn_ah = matches!(ah, SendAh::Conn(_));
    if forced_failure() {
        return Err(ENOMEM);
    }
    let (buf, pooled) = new_buf(
        port,
        &_gate,
        id.remote_cm_qpn(),
        av.pkey_index,
        bindings::GFP_ATOMIC,
    )?;
    if let Some(ev) = trace {
        crate::trace::id(ev, id);
    }
    // The buffer holds a reference (the id's memory until the completion), not a use:
    // `ib_destroy_cm_id()` waits for the id's callbacks, not for its MADs to leave the wire
    // (the completion takes a use of its own for the one thing it may deliver, a `*_ERROR`).
    let owner = Arc::into_raw(id.clone());
    // SAFETY: `buf` is a send buffer with a zero MAD that we own until it is posted; the
    // message goes into its MAD, and `ah` and the id reference move into it.
    unsafe {
        encode_into(buf, msg, tid, attr_mod);
        ah.into_buf(buf, pooled);
        (*buf).context[1] = owner.cast_mut().cast();
        (*buf).timeout_ms = if timeout_ms == 0 {
            0
        } else {
            i32::try_from(timeout_ms).unwrap_or(i32::MAX)
        };
        (*buf).retries = if timeout_ms == 0 {
            0
        } else {
            i32::from(retries)
        };
    }
    let (ret, queued) = if flow::controlled(msg.attr_id()) {
        // SAFETY: `buf` is ready and ours, built for `port`.
        match unsafe { post_controlled(dev, port, buf) } {
            Ok(queued) => (0, queued),
            Err(e) => (e, false),
        }
    } else {
        // SAFETY: `buf` is ready; on failure it is still ours.
        (
            unsafe { bindings::ib_post_send_mad(buf, core::ptr::null_mut()) },
            false,
        )
    };
    if ret != 0 {
        // SAFETY: Not posted, so the buffer, its handle and the id reference are still ours.
        unsafe {
            drop(Arc::from_raw(owner));
            recycle(Some(port), buf);
        }
        return Err(Error::from_errno(ret));
    }
    if on_conn_ah {
        g.ah_sends += 1;
    }
    // SAFETY: Posted just above, under the id lock (`g` proves it is held), which the caller
    // keeps until it records or drops the value.
    Ok((unsafe { PostedMad::new(buf, reposts, queued) }, tid))
}

/// Posts a controlled MAD (`logic::flow::controlled`) of `port` of `dev`, or queues it in the
/// port's backlog behind those waiting already; whether it was queued, or the errno of the
/// refusal (`-ENOMEM`: the backlog is full, or no node for it) or of the post. Posting under
/// the port's lock keeps a slot from being seen taken by a post that then fails.
///
/// # Safety
///
/// `buf` must be a built send buffer of `port`'s agent that the caller owns and has not
/// posted; on success it belongs to the MAD layer or to the backlog, else it is still the
/// caller's.
unsafe fn post_controlled(
    dev: &CmDevice,
    port: &CmPort,
    buf: *mut bindings::ib_mad_send_buf,
) -> core::result::Result<bool, ffi::c_int> {
    let params = tunables::flow_control();
    let mut spare = None;
    loop {
        let mut f = port.flow();
        let limit = flow::limit(params.limit, f.derived_limit);
        match flow::admit(f.outstanding, f.queued(), limit, params.backlog) {
            Admit::Post => {
                // SAFETY: `buf` is ready (caller).
                let ret = unsafe { bindings::ib_post_send_mad(buf, core::ptr::null_mut()) };
                if ret != 0 {
                    return Err(ret);
                }
                f.outstanding += 1;
                return Ok(false);
            }
            Admit::Queue => match spare.take() {
                Some(node) => {
                    // SAFETY: `buf` is built, ours and not posted (caller).
                    unsafe { f.push(node, buf) };
                    // Free slots with MADs waiting: the limit was raised (or lifted) since
                    // they queued, and no completion may come for a while to let them out.
                    if flow::may_dequeue(f.outstanding, limit) {
                        dev.kick_flow();
                    }
                    return Ok(true);
                }
                None => {
                    // The node is allocated outside the port's lock; the decision is taken
                    // again with it (a slot may have freed meanwhile).
                    drop(f);
                    match Spare::new() {
                        Ok(node) => spare = Some(node),
                        Err(e) => return Err(e.to_errno()),
                    }
                }
            },
            Admit::Refuse => {
                f.refused += 1;
                return Err(ENOMEM.to_errno());
            }
        }
    }
}

/// At most this many waiting MADs are taken out per drain (with the port's lock held and
/// interrupts off); the kick work does the rest a batch at a time. A waiting MAD always has
/// a completion or a queued kick ahead of it (or removal, which completes it).
const DEQUEUE_BATCH: u32 = 32;

/// A completed controlled MAD of `port` gives its slot back, and the waiting ones take the
/// free slots ([`drain`]).
pub(crate) fn release_slot(dev: &CmDevice, port: &CmPort) -> UnpostedList {
    drain(dev, port, true)
}

/// Lets the waiting MADs of `port` take its free slots, in order, after giving one back if
/// `release`; at most [`DEQUEUE_BATCH`] of them per call (each either posted or failed). When
/// the batch runs out with more that could go out, the device's kick work takes over, one
/// batch per run, so neither this caller nor the CM workqueue is held for a whole backlog.
/// Returned are those whose post failed, never posted, for the caller to complete. While
/// the device goes away nothing more goes out: removal completes the waiting ones
/// ([`take_waiting`]).
pub(crate) fn drain(dev: &CmDevice, port: &CmPort, release: bool) -> UnpostedList {
    let mut failed = UnpostedList::new();
    let mut f = port.flow();
    if release {
        f.outstanding = f.outstanding.saturating_sub(1);
    }
    // The common case, nothing waiting, reads no parameter and passes no gate.
    if f.queued() == 0 {
        return failed;
    }
    let Some(_gate) = dev.enter_send() else {
        return failed;
    };
    let limit = flow::limit(tunables::flow_control().limit, f.derived_limit);
    let mut tried = 0;
    while flow::may_dequeue(f.outstanding, limit) && f.queued() != 0 {
        if tried == DEQUEUE_BATCH {
            // Inside the send gate: removal cancels the kick after closing it.
            dev.kick_flow();
            break;
        }
        let Some(waiting) = f.pop() else {
            break;
        };
        tried += 1;
        // SAFETY: A built, unposted buffer of this port's agent, which is registered while
        // the send gate is held (backlog invariants).
        if unsafe { bindings::ib_post_send_mad(waiting.0, core::ptr::null_mut()) } == 0 {
            f.outstanding += 1;
        } else {
            failed.push(waiting);
        }
    }
    failed
}

/// Every MAD waiting in `port`'s backlog, taken out in order (device removal, once no send
/// starts any more, before the agent goes).
pub(crate) fn take_waiting(port: &CmPort) -> UnpostedList {
    let mut all = UnpostedList::new();
    let mut f = port.flow();
    while let Some(waiting) = f.pop() {
        all.push(waiting);
    }
    all
}

/// The handle of a connection's first send (its REQ or REP): the connection's own, made now
/// and kept in `conn_ah`, within the device's budget; else one for this send alone.
fn first_conn_send(
    dev: &CmDevice,
    agent: *mut bindings::ib_mad_agent,
    av: &Av,
    conn_ah: &mut ConnAh,
) -> Result<SendAh> {
    if dev.conn_ahs().claim() {
        let made = if crate::ah::forced_failure() {
            Err(ENOMEM)
        } else {
            create_ah(agent, av)
        };
        match made {
            Ok(ah) => {
                // SAFETY: Created just above on the agent's PD from the id's address, for
                // this id alone, with a claim on the device's budget.
                unsafe { conn_ah.set(ah) };
                return Ok(SendAh::Conn(ah.as_ptr()));
            }
            // The driver is out of handles or memory: this send makes one of its own (it may
            // succeed: the connection's handle could have been the last one), and the
            // connection goes on so.
            Err(_) => dev.conn_ahs().unclaim_failed(),
        }
    }
    Ok(SendAh::Own(create_ah(agent, av)?.as_ptr()))
}

/// A new address handle to `av` on `agent`'s PD, owned by the caller.
fn create_ah(
    agent: *mut bindings::ib_mad_agent,
    av: &Av,
) -> Result<core::ptr::NonNull<bindings::ib_ah>> {
    // SAFETY: `agent` is registered (the caller holds the send gate), so its QP and PD are
    // live; `av.attr()` is initialised.
    let ah = unsafe { bindings::rdma_create_ah((*(*agent).qp).pd, av.attr(), 0) };
    if let Some(e) = ptr_error(ah, ENOMEM) {
        return Err(e);
    }
    core::ptr::NonNull::new(ah).ok_or(ENOMEM)
}

/// A completed send, taken back from the MAD layer (the first half of `cm_send_handler`):
/// counted, with the id reference the buffer carried; dropping it releases the buffer's
/// address handle and frees the buffer or gives it back to its port's pool ([`recycle`]),
/// unless [`Completed::repost`] gave it back to the MAD layer.
///
/// # Invariants
///
/// `buf` is a buffer posted by [`send`] or [`send_for_id`] through an agent of `dev` on the
/// port `port` (`None` if `dev` has no such port) whose send has completed, or one of
/// `send_for_id` that never went out ([`Completed::unposted`]): it is ours, its address
/// handle or connection-handle tag is still in `context[0]`, and it is freed once, by `drop`,
/// or posted again, once.
pub(crate) struct Completed<'a> {
    buf: *mut bindings::ib_mad_send_buf,
    dev: &'a CmDevice,
    /// The port, looked up once for the counters, the pool and the flow-control slot.
    port: Option<&'a CmPort>,
    attr: Option<AttrId>,
    /// The id the buffer held a reference to (`context[1]`), taken back.
    pub(crate) id: Option<Arc<CmId>>,
    /// The send used the id's connection address handle.
    pub(crate) on_conn_ah: bool,
    /// The completion's status.
    pub(crate) status: bindings::ib_wc_status,
    /// A controlled MAD that went out: it held a flow-control slot of its port, which the
    /// caller gives back ([`release_slot`]) unless the buffer goes out again.
    pub(crate) held_slot: bool,
}

impl<'a> Completed<'a> {
    /// Takes a completed send back and counts the message and its retries on its port.
    ///
    /// # Safety
    ///
    /// `send_wc` is the MAD layer's completion of a buffer posted by [`send`] or
    /// [`send_for_id`] through an agent of `dev` on `port_num`, passed to the agent's send
    /// handler; this is called once for it.
    pub(crate) unsafe fn take(
        dev: &'a CmDevice,
        port_num: u32,
        send_wc: *mut bindings::ib_mad_send_wc,
    ) -> Self {
        // SAFETY: The MAD layer passes a valid completion for one of our buffers (caller);
        // the buffer is ours until freed, and its `mad` holds the MAD we built.
        let (buf, status, rej_reason, retries) = unsafe {
            let buf = (*send_wc).send_buf;
            let mad = core::slice::from_raw_parts((*buf).mad.cast::<u8>(), MAD_LEN);
            (
                buf,
                (*send_wc).status,
                u16::from_be_bytes([mad[MAD_HDR_LEN + 10], mad[MAD_HDR_LEN + 11]]),
                (*buf).retries,
            )
        };
        // SAFETY: The completed buffer, ours and taken back once (caller).
        let done = unsafe { Self::own(dev, port_num, buf, status, true) };
        if let (Some(port), Some(attr)) = (done.port, done.attr) {
            let mut retries = u64::try_from(retries).unwrap_or(0);
            // cm.c counts an id-less answer other than a REJ (a retransmission's answer, a DREP
            // for an unknown DREQ) as sent twice with one retry.
            if done.id.is_none() && matches!(attr, AttrId::Mra | AttrId::Rtu | AttrId::Drep) {
                retries = 1;
            }
            port.count(Counter::TxMsgs, attr.counter_index(), 1 + retries);
            // Most MADs go out once: no atomic add of nothing.
            if retries != 0 {
                port.count(Counter::TxRetries, attr.counter_index(), retries);
            }
            if attr == AttrId::Rej {
                // Ours: REJs by reason (the REJ's reason field, IBTA table 104).
                port.count_rej(true, rej_reason);
            }
        }
        done
    }

    /// A buffer of an id that never went out (taken out of the backlog, or its post from
    /// there failed), as if it completed with `status`: not counted as sent, holding no slot.
    pub(crate) fn unposted(
        dev: &'a CmDevice,
        waiting: Unposted,
        status: bindings::ib_wc_status,
    ) -> Self {
        let buf = waiting.0;
        // SAFETY: An unposted buffer built by `send_for_id` is ours, with its agent registered
        // (removal completes waiting buffers before it unregisters the agents).
        let port_num = u32::from(unsafe { (*(*buf).mad_agent).port_num });
        // SAFETY: As above; `Unposted` hands the buffer over once.
        unsafe { Self::own(dev, port_num, buf, status, false) }
    }

    /// Takes `buf` over with `status`, and with the id reference its `context[1]` carries
    /// (`send_for_id`'s; NULL for `send`'s); `went_out` if the MAD layer sent it (a controlled
    /// MAD of an id then held a flow-control slot: every one went through `post_controlled`).
    ///
    /// # Safety
    ///
    /// `buf` is a buffer built by [`send`] or [`send_for_id`] through an agent of `dev` on
    /// `port_num`, completed or never posted: ours, taken over once.
    unsafe fn own(
        dev: &'a CmDevice,
        port_num: u32,
        buf: *mut bindings::ib_mad_send_buf,
        status: bindings::ib_wc_status,
        went_out: bool,
    ) -> Self {
        // SAFETY: `buf` is ours (caller); its `mad` holds the MAD we built.
        let (attr, owner, ctx) = unsafe {
            let mad = core::slice::from_raw_parts((*buf).mad.cast::<u8>(), MAD_LEN);
            (
                AttrId::from_wire(u16::from_be_bytes([mad[16], mad[17]])),
                (*buf).context[1],
                (*buf).context[0],
            )
        };
        let id = if owner.is_null() {
            None
        } else {
            // SAFETY: `context[1]` holds the reference the sender moved in (restored if the
            // buffer waited in a backlog); taken back once (caller).
            Some(unsafe { Arc::<CmId>::from_raw(owner.cast::<CmId>()) })
        };
        // INVARIANT: completed or never posted, ours; freed only by `drop`.
        Self {
            buf,
            dev,
            port: dev.port(port_num),
            attr,
            held_slot: went_out && id.is_some() && attr.is_some_and(flow::controlled),
            id,
            on_conn_ah: split_ctx(ctx).0 == conn_ah_tag(),
            status,
        }
    }

    /// The port it was sent from, if its device has it.
    pub(crate) fn port(&self) -> Option<&'a CmPort> {
        self.port
    }

    /// The buffer, as an identity (the id's tracked MAD is compared with it).
    pub(crate) fn buf(&self) -> *mut bindings::ib_mad_send_buf {
        self.buf
    }

    /// Adds `n` to the message's `counter` on its port.
    fn count(&self, counter: Counter, n: u64) {
        if let (Some(port), Some(attr)) = (self.port, self.attr) {
            port.count(counter, attr.counter_index(), n);
        }
    }

    /// Sends the MAD of `id` once more, waiting twice as long as the wait that just ran out
    /// (`timeout::backoff_wait_ms`) and not retrying: a retry the CM makes itself once the MAD
    /// layer's ran out (`RetryPolicy::reposts`). The
    /// buffer goes back to the MAD layer with its address handle and a reference to `id`, and
    /// counts as a retry; if the device is going away or the post fails, it comes back.
    /// `_g` is `id`'s locked state: the post happens under the lock, as the first one did,
    /// so the tracked MAD the id records stays the one in flight. This relies on 6.12's MAD
    /// layer not touching a buffer after its send handler returned (`timeout_sends()`,
    /// `ib_mad_complete_send_wr()`), which `ib_post_send_mad()`'s re-initialisation of every
    /// per-post field makes a repost legal against; a kernel that changes that must be
    /// checked again (`scripts/check-kdir.sh` accepts 6.12 only).
    pub(crate) fn repost(
        mut self,
        id: &Arc<CmId>,
        _g: &mut CmIdInner,
    ) -> core::result::Result<(), Self> {
        let Some(_gate) = self.dev.enter_send() else {
            return Err(self);
        };
        let owner = Arc::into_raw(id.clone());
        // SAFETY: The send completed, so the buffer is ours (type invariants); its MAD, address
        // handle and `context[0]` are unchanged, and `ib_post_send_mad()` sets up everything
        // else afresh.
        let ret = unsafe {
            let prev = u32::try_from((*self.buf).timeout_ms).unwrap_or(0);
            let wait = timeout::backoff_wait_ms(prev);
            (*self.buf).context[1] = owner.cast_mut().cast();
            (*self.buf).timeout_ms = i32::try_from(wait).unwrap_or(i32::MAX);
            (*self.buf).retries = 0;
            bindings::ib_post_send_mad(self.buf, core::ptr::null_mut())
        };
        if ret != 0 {
            // SAFETY: Not posted: the reference moved in above is still ours.
            drop(unsafe { Arc::from_raw(owner) });
            return Err(self);
        }
        self.count(Counter::TxRetries, 1);
        self.id = None;
        // INVARIANT: posted again; its next completion takes it back.
        core::mem::forget(self);
        Ok(())
    }
}

impl Drop for Completed<'_> {
    fn drop(&mut self) {
        // Ours, beyond cm.c: a message whose retries ran out without an answer.
        if self.status == bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR {
            self.count(Counter::TxTimeouts, 1);
        }
        // SAFETY: The send is complete; the buffer and its handle are ours to release, once
        // (type invariants), and the id reference was taken out of it (`Completed::own`).
        unsafe { recycle(self.port, self.buf) };
    }
}
