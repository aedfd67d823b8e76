// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The MAD agents' callbacks (`cm_recv_handler`, `cm_work_handler`, `cm_send_handler` in
//! cm.c): the receive callback counts a MAD and queues it, the receive work dispatches it to
//! its message's handler in `conn/`, and the send completion gives a buffer back and tells the
//! id's protocol how its tracked MAD ended.

use crate::{
    backlog::UnpostedList,
    bindings,
    cm_id::{CmDevice, CmId},
    conn,
    device::device_of_agent,
    logic::wire::{
        check_header,
        conn::{CommIdsView, Mra, Rej, RepView, ReqView},
        lap::{Apr, Lap},
        payload,
        sidr::{SidrRep, SidrReq},
        AttrId, RecvHdr, WireError, PAYLOAD_LEN,
    },
    port::{CmPort, Counter},
    recv_wc::{RecvWc, RecvWork},
    send::{self, Completed},
    tunables,
    wq::{self, DevWork},
};
use kernel::{c_str, ffi, sync::ArcBorrow};

/// The receive work function (`cm_work_handler`).
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for a work item queued by [`ibcm_rs_recv`],
/// which gave up its reference.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_recv_work(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the work item whose reference `ibcm_rs_recv` gave up, taken back once.
    let wc = unsafe { RecvWork::from_work(work) };
    // SAFETY: The context the receive callback got with the MAD, whose agent stays registered
    // and whose device stays alive until removal has flushed the CM workqueue, which runs this
    // work first; the borrow ends with the work.
    // The borrow, not a new reference: the REQ handler takes one only for an id it makes.
    let dev: ArcBorrow<'_, CmDevice> = unsafe { device_of_agent(wc.context()) };
    process(dev, wc.port_num, wc.attr(), &wc);
    // Its place in the port's queue, taken by the receive callback.
    if let Some(port) = dev.port(wc.port_num) {
        port.recv_done();
    }
}

/// The MAD agent's receive callback (`cm_recv_handler`): count, then queue or drop.
///
/// # Safety
///
/// Called by the MAD layer (through `glue.c`) with the agent's context and a completion we
/// now own.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_recv(
    context: *mut ffi::c_void,
    port_num: u32,
    recv_wc: *mut bindings::ib_mad_recv_wc,
) {
    // SAFETY: The agent's context is its device, alive while the agent is registered.
    let dev = unsafe { device_of_agent::<CmId>(context) };
    // A MAD of a known attribute is counted received before anything is allocated for it and
    // before the rest of its header is looked at (cm.c counts by attribute alone, then
    // allocates its work): a failed allocation drops a MAD that was counted, as in cm.c.
    // SAFETY: The MAD layer hands the completion over to its receive handler; it is only read.
    let known = unsafe { RecvWork::peek_attr(recv_wc) }.and_then(AttrId::from_wire);
    let port = dev.port(port_num);
    if let (Some(port), Some(attr)) = (port, known) {
        port.count(Counter::RxMsgs, attr.counter_index(), 1);
    }
    // SAFETY: The MAD layer hands the completion over to its receive handler, with the agent's
    // context and port.
    let Ok(wc) = (unsafe { RecvWork::new(recv_wc, context, port_num) }) else {
        return;
    };
    let Some(port) = port else {
        return;
    };
    // The header is checked once, here: the work gets the attribute, the handlers read the
    // TID and attribute modifier where they use them.
    let mad = wc.mad();
    let Some(attr) = known else {
        port.count_malformed();
        dev.warn_malformed(port_num, c_str!("unknown attribute or short MAD"), &wc);
        return;
    };
    if let Err(e) = check_header(mad) {
        port.count_malformed();
        dev.warn_malformed(port_num, wire_error(e), &wc);
        return;
    }
    // Inside the receive gate until the work is queued: removal closes the gate and waits for
    // callbacks inside it before it flushes the CM workqueue, so its flush sees every work
    // queued here (cm.c queues under `cm.lock` for the same ordering with `going_down`).
    let Some(_gate) = dev.enter_recv() else {
        return;
    };
    let wq = wq::wq();
    if wq.is_null() {
        return;
    }
    // A port's queue of received MADs is bounded: beyond the limit the MAD is dropped, and
    // counted (cm.c queues every one).
    if !port.queue_recv(tunables::recv_queue_limit(), attr) {
        return;
    }
    // The work item holds the reference from here until `ibcm_rs_recv_work` takes it back; it
    // does not move (it stays in its box).
    let item = wc.into_work(attr);
    // SAFETY: `wq` is live until module exit, after every device is gone; `item` is live.
    // `queue_work()` is `queue_work_on(WORK_CPU_UNBOUND, ...)`.
    unsafe {
        bindings::queue_work_on(
            bindings::wq_misc_consts_WORK_CPU_UNBOUND as ffi::c_int,
            wq,
            item,
        )
    };
}

/// What a header check's failure is called in the malformed-MAD warning.
fn wire_error(e: WireError) -> &'static kernel::str::CStr {
    match e {
        WireError::Truncated => c_str!("truncated"),
        WireError::WrongClassVersion => c_str!("wrong class version"),
        WireError::WrongBaseVersion => c_str!("wrong base version"),
        WireError::WrongClass => c_str!("wrong class"),
        WireError::WrongMethod => c_str!("wrong method"),
        WireError::UnknownAttribute => c_str!("unknown attribute"),
    }
}

/// Dispatches one received MAD of attribute `attr`, whose header the receive callback checked
/// (`cm_work_handler`). The header was checked once, by the receive callback; the REQ, REP,
/// RTU, DREQ and DREP go to their handlers as views that read each field where it is used,
/// the other messages decoded straight into the handler's argument.
fn process(dev: ArcBorrow<'_, CmDevice>, port_num: u32, attr: AttrId, wc: &RecvWc) {
    let mad = wc.mad();
    let hdr = RecvHdr::of(mad);
    // The payload as an array: its length is then known where the handlers are inlined, and
    // their fields at fixed offsets are read with no bounds check. A MAD shorter than a whole
    // one (the MAD layer gives whole ones) reads as zeros past its end, as it always did: its
    // payload is copied into `short`, which the common case leaves unwritten.
    let (rest, mut short) = (payload(mad), None);
    let p: &[u8; PAYLOAD_LEN] = match rest.first_chunk() {
        Some(p) => p,
        None => short.insert(padded(rest)),
    };
    let p: &[u8] = p;
    let owner = dev;
    let dev: &CmDevice = &owner;
    match attr {
        AttrId::Req => conn::req::on_req(owner, port_num, wc, &hdr, ReqView(p)),
        AttrId::Rep => conn::rep_rtu::on_rep(dev, port_num, wc, &hdr, RepView(p)),
        AttrId::Rtu => conn::rep_rtu::on_rtu(dev, port_num, wc, CommIdsView(p)),
        AttrId::Dreq => conn::dreq_drep::on_dreq(dev, port_num, wc, &hdr, CommIdsView(p)),
        AttrId::Drep => conn::dreq_drep::on_drep(wc, CommIdsView(p)),
        _ => process_other(owner, port_num, attr, wc, &hdr, p),
    }
}

/// `rest`, a payload shorter than a whole one, followed by zeros.
#[cold]
fn padded(rest: &[u8]) -> [u8; PAYLOAD_LEN] {
    let mut p = [0u8; PAYLOAD_LEN];
    let n = rest.len().min(PAYLOAD_LEN);
    p[..n].copy_from_slice(&rest[..n]);
    p
}

/// The messages that an accepted connection's ordinary life does not bring (SIDR, REJ, MRA,
/// LAP, APR): decoded and handled out of line, so that their decoded messages and their
/// handlers' locals do not grow the receive work's frame on the common path.
#[inline(never)]
fn process_other(
    owner: ArcBorrow<'_, CmDevice>,
    port_num: u32,
    attr: AttrId,
    wc: &RecvWc,
    hdr: &RecvHdr<'_>,
    p: &[u8],
) {
    let dev: &CmDevice = &owner;
    match attr {
        AttrId::SidrReq => conn::sidr::on_sidr_req(owner, port_num, wc, hdr, &SidrReq::decode(p)),
        AttrId::Rej => {
            let rej = Rej::decode(p);
            if let Some(port) = dev.port(port_num) {
                port.count_rej(false, rej.reason);
            }
            conn::rej_mra::on_rej(wc, &rej)
        }
        AttrId::Mra => conn::rej_mra::on_mra(dev, port_num, wc, &Mra::decode(p)),
        AttrId::SidrRep => conn::sidr::on_sidr_rep(wc, &SidrRep::decode(p)),
        AttrId::Lap => conn::lap_apr::on_lap(dev, port_num, wc, hdr, &Lap::decode(p)),
        AttrId::Apr => conn::lap_apr::on_apr(dev, port_num, wc, &Apr::decode(p)),
        // Handled by `process`.
        AttrId::Req | AttrId::Rep | AttrId::Rtu | AttrId::Dreq | AttrId::Drep => {}
    }
}

/// Send completion (`cm_send_handler`): counts the message and its retries, lets the id's
/// protocol forget the buffer, frees the buffer and its address handle, then reports a failed
/// tracked MAD to the protocol.
///
/// # Safety
///
/// Called by the MAD layer (through `glue.c`) for a buffer posted by `send::send`, with the
/// agent's context.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_done(
    context: *mut ffi::c_void,
    port_num: u32,
    send_wc: *mut bindings::ib_mad_send_wc,
) {
    // SAFETY: The agent's context is its device, alive while the agent is registered.
    let dev = unsafe { device_of_agent(context) };
    // SAFETY: The MAD layer's completion of one of our buffers, handed to us once.
    let done = unsafe { Completed::take(&dev, port_num, send_wc) };
    complete_inline(&dev, done);
}

/// What a completion (or a buffer of an id that never went out) does: the id's protocol
/// forgets the buffer, the buffer and its address handle are freed, a failed tracked MAD is
/// reported to the protocol, and a slot of the port's flow control the MAD held is given
/// back, the waiting MADs it lets out that could not be posted being completed in turn.
pub(crate) fn complete(dev: &CmDevice, done: Completed<'_>) {
    complete_inline(dev, done)
}

/// [`complete`], inlined into the send completion, its one hot caller: the completion is not
/// copied into a call's arguments, and there is one call less per MAD sent.
#[inline(always)]
fn complete_inline(dev: &CmDevice, mut done: Completed<'_>) {
    let port = done.port();
    let held_slot = done.held_slot;
    if let Some(id) = done.id.take() {
        let status = done.status;
        // The id forgets the buffer (if it is its tracked one) before the buffer is freed, and
        // gives back its use of the connection handle (the last one destroys it); or a buffer
        // whose wait ran out goes out again, a retry of the CM's own, keeping its slot. The
        // common case borrows the completion (no copy of it in and out).
        let failed_in = if status == bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR {
            let Some((done, failed_in)) = conn::repost_or_untrack(&id, done) else {
                return;
            };
            drop(done);
            failed_in
        } else {
            let failed_in = conn::untrack(&id, &done);
            drop(done);
            failed_in
        };
        if held_slot {
            release_slot(dev, port);
        }
        conn::send_done(&id, failed_in, status);
    } else {
        drop(done);
        if held_slot {
            release_slot(dev, port);
        }
    }
}

/// Gives a flow-control slot of `port` back; the MADs it lets out whose post failed fail
/// as a send error would (their ids get the `*_ERROR` event of their state).
fn release_slot(dev: &CmDevice, port: Option<&CmPort>) {
    if let Some(port) = port {
        fail_unposted(dev, send::release_slot(dev, port));
    }
}

/// Completes MADs whose post from the backlog failed as a send error.
fn fail_unposted(dev: &CmDevice, failed: UnpostedList) {
    for failed in failed {
        complete(
            dev,
            Completed::unposted(dev, failed, bindings::ib_wc_status_IB_WC_GENERAL_ERR),
        );
    }
}

/// The flow-control kick of a device ([`CmDevice::kick_flow`]): its ports' waiting MADs take
/// the slots a raised limit freed, one batch per port per run (a drain that ends its batch
/// with more to do queues the kick again, after the receive work queued meanwhile).
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for the `flow_kick` work of a live
/// [`CmDevice`]: removal cancels the work before it drops the device's last reference.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_flow_kick(dw: *mut bindings::delayed_work) {
    // SAFETY: `dw` is the `flow_kick` field of a live `CmDevice` (caller contract).
    let dev = unsafe { CmDevice::from_work(dw, DevWork::FlowKick) };
    for port in dev.ports() {
        fail_unposted(dev, send::drain(dev, port, false));
    }
}

/// Device removal, once no send starts any more and before the agents go: the MADs still
/// waiting in the ports' backlogs complete as flushed, never sent (cm.c's MADs at the MAD
/// layer are flushed the same way by the agents' unregistration).
pub(crate) fn flush_backlogs(dev: &CmDevice) {
    for port in dev.ports() {
        for waiting in send::take_waiting(port) {
            complete(
                dev,
                Completed::unposted(dev, waiting, bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR),
            );
        }
    }
}
