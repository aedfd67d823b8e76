// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Receiving CM MADs: the agent's receive callback, the CM workqueue, the dispatch of each
//! message to its family's handler in `conn/`, and what those share: answers sent back along a
//! received MAD (`cm_issue_rej()`, response MADs), the listener pin, and the hand-over of a new
//! passive id to its listener's handler.
//!
//! Stands for `cm_recv_handler()` and `cm_work_handler()` in cm.c. The receive callback only
//! counts the MAD and queues it; everything else runs on the CM workqueue (process context),
//! with no CM lock held while a consumer's handler runs. REQ in is `conn/req.rs`, SIDR_REQ in
//! `conn/sidr.rs`.

use crate::alloc::CmBox;
use crate::{
    av::Av,
    bindings,
    cm_id::CmId,
    conn,
    device::CmDevice,
    event::Event,
    logic::{
        req_event::{self, PathRecord, SA_EQ},
        wire::{
            conn::{Drep, Dreq, Mra, Rej, Rep, Req, Rtu},
            decode_header,
            lap::{Apr, Lap},
            sidr::{SidrRep, SidrReq},
            AttrId, CmMessage, MadHeader, WireError, MAD_HDR_LEN, MAD_LEN,
        },
    },
    port::{device_of_agent, Counter},
    send::{self, Dest},
    trace::{self, Local},
};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{c_str, ffi, prelude::*, sync::Arc};

/// The CM workqueue (`cm.wq`), created at module init.
static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// The CM workqueue, NULL before init and after exit.
pub(crate) fn wq() -> *mut bindings::workqueue_struct {
    WQ.load(Ordering::Acquire)
}

/// Creates the CM workqueue.
pub(crate) fn init_wq() -> Result {
    // SAFETY: Plain allocation of a workqueue.
    let wq = unsafe { bindings::ibcm_glue_alloc_wq() };
    if wq.is_null() {
        return Err(ENOMEM);
    }
    WQ.store(wq, Ordering::Release);
    Ok(())
}

/// Destroys the CM workqueue (after the client is unregistered: no work can be queued).
pub(crate) fn destroy_wq() {
    let wq = WQ.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !wq.is_null() {
        // SAFETY: Created by `init_wq`; nothing queues on it any more.
        unsafe { bindings::destroy_workqueue(wq) };
    }
}

/// Waits for every queued receive work item to finish.
pub(crate) fn flush() {
    let wq = WQ.load(Ordering::Acquire);
    if !wq.is_null() {
        // SAFETY: `wq` is live until `destroy_wq`, which runs after every device is removed.
        unsafe { bindings::ibcm_glue_flush_wq(wq) };
    }
}

/// A received MAD, owned until dropped (`ib_free_recv_mad`), with the event allocation its
/// work item came in (cm.c's `cm_work` is both), for the handler that reports it.
pub(crate) struct RecvWc {
    raw: *mut bindings::ib_mad_recv_wc,
    spare: core::cell::Cell<Option<CmBox<Event>>>,
}

// SAFETY: The receive buffers belong to us once handed to the receive callback; the MAD layer
// does not touch them again until `ib_free_recv_mad`.
unsafe impl Send for RecvWc {}

impl RecvWc {
    /// Takes ownership of a received MAD.
    fn new(raw: *mut bindings::ib_mad_recv_wc) -> Self {
        Self {
            raw,
            spare: core::cell::Cell::new(None),
        }
    }

    /// The event allocation this MAD came in, once (a handler that reports the MAD uses it
    /// instead of allocating).
    pub(crate) fn take_event(&self) -> Option<CmBox<Event>> {
        self.spare.take()
    }

    /// The MAD bytes (at most 256, fewer if the MAD layer says so).
    pub(crate) fn mad(&self) -> &[u8] {
        // SAFETY: `self.raw` is a valid receive completion whose `mad` buffer holds `mad_len`
        // bytes (an IB MAD buffer is 256 bytes); the slice lives as long as `self`.
        unsafe {
            let len = usize::try_from((*self.raw).mad_len)
                .unwrap_or(0)
                .min(MAD_LEN);
            let mad = (*self.raw).recv_buf.__bindgen_anon_1.mad;
            if mad.is_null() {
                return &[];
            }
            core::slice::from_raw_parts(mad.cast::<u8>(), len)
        }
    }

    /// The work completion.
    pub(crate) fn wc(&self) -> *const bindings::ib_wc {
        // SAFETY: `self.raw` is valid.
        unsafe { (*self.raw).wc }
    }

    /// The GRH.
    pub(crate) fn grh(&self) -> *const bindings::ib_grh {
        // SAFETY: `self.raw` is valid.
        unsafe { (*self.raw).recv_buf.grh }
    }
}

impl Drop for RecvWc {
    fn drop(&mut self) {
        // An unused event in `spare` points at nothing and goes with the fields, after this.
        // SAFETY: We own the completion; this is its one release.
        unsafe { bindings::ib_free_recv_mad(self.raw) };
    }
}

/// What a received MAD's work item carries to the receive work (inside an [`Event`]: one
/// allocation per received MAD, as cm.c's `cm_work`).
pub(crate) struct Origin {
    pub(crate) dev: Arc<CmDevice>,
    pub(crate) port_num: u32,
    pub(crate) wc: RecvWc,
}

/// The receive work function (`cm_work_handler`).
///
/// # Safety
///
/// Called by the workqueue (through `glue.c`) for a work item queued by [`ibcm_rs_recv`],
/// which gave up its box.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_recv_work(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the work item of an event leaked by `ibcm_rs_recv`, taken back once.
    let mut ev = unsafe { Event::from_work(work) };
    let Some(origin) = ev.take_origin() else {
        return;
    };
    // The event's allocation goes to the handler that reports the MAD (or with the MAD).
    origin.wc.spare.set(Some(ev));
    process(&origin.dev, origin.port_num, &origin.wc);
}

fn warn_malformed(dev: &CmDevice, port_num: u32, what: &'static CStr) {
    // SAFETY: `dev.ib_dev()` is live while the agent delivers MADs; `what` is a C string.
    unsafe { bindings::ibcm_glue_warn_malformed(dev.ib_dev(), port_num, what.as_char_ptr()) };
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
    let wc = RecvWc::new(recv_wc);
    // SAFETY: The agent's context is its device, alive while the agent is registered.
    let dev = unsafe { device_of_agent(context) };
    let Some(port) = dev.port(port_num) else {
        return;
    };
    let attr = MadHeader::decode(wc.mad())
        .ok()
        .and_then(|h| AttrId::from_wire(h.attr_id));
    let Some(attr) = attr else {
        port.count_malformed();
        warn_malformed(&dev, port_num, c_str!("unknown attribute or short MAD"));
        return;
    };
    port.count(Counter::RxMsgs, attr.counter_index(), 1);
    // Inside the receive gate until the work is queued: removal closes the gate and waits for
    // callbacks inside it before it flushes the CM workqueue, so its flush sees every work
    // queued here (cm.c queues under `cm.lock` for the same ordering with `going_down`).
    let Some(_gate) = dev.enter_recv() else {
        return;
    };
    let wq = WQ.load(Ordering::Acquire);
    if wq.is_null() {
        return;
    }
    let origin = Origin {
        dev: dev.into(),
        port_num,
        wc,
    };
    let Ok(work) = Event::for_work(origin) else {
        return;
    };
    // The work item owns itself from here until `ibcm_rs_recv_work` takes it back; it does
    // not move (it stays in its box).
    let item = Event::into_work(work);
    // SAFETY: `wq` is live until module exit, after every device is gone; `item` is live.
    unsafe { bindings::ibcm_glue_queue_work(wq, item) };
}

/// Dispatches one received MAD (`cm_work_handler`).
fn process(dev: &Arc<CmDevice>, port_num: u32, wc: &RecvWc) {
    let Some(port) = dev.port(port_num) else {
        return;
    };
    // Each message is decoded straight into the handler's argument: no enum of every message
    // kind is built and moved around.
    let (hdr, attr, p) = match decode_header(wc.mad()) {
        Ok(x) => x,
        Err(e) => {
            port.count_malformed();
            let what = match e {
                WireError::Truncated => c_str!("truncated"),
                WireError::WrongClassVersion => c_str!("wrong class version"),
                WireError::WrongBaseVersion => c_str!("wrong base version"),
                WireError::WrongClass => c_str!("wrong class"),
                WireError::WrongMethod => c_str!("wrong method"),
                WireError::UnknownAttribute => c_str!("unknown attribute"),
            };
            warn_malformed(dev, port_num, what);
            return;
        }
    };
    match attr {
        AttrId::Req => conn::req::on_req(dev, port_num, wc, &hdr, &Req::decode(p)),
        AttrId::SidrReq => conn::sidr::on_sidr_req(dev, port_num, wc, &hdr, &SidrReq::decode(p)),
        AttrId::Rep => conn::rep_rtu::on_rep(dev, port_num, wc, &hdr, &Rep::decode(p)),
        AttrId::Rtu => conn::rep_rtu::on_rtu(dev, port_num, wc, &hdr, &Rtu::decode(p)),
        AttrId::Dreq => conn::dreq_drep::on_dreq(dev, port_num, wc, &hdr, &Dreq::decode(p)),
        AttrId::Drep => conn::dreq_drep::on_drep(dev, port_num, wc, &hdr, &Drep::decode(p)),
        AttrId::Rej => conn::rej_mra::on_rej(dev, port_num, wc, &hdr, &Rej::decode(p)),
        AttrId::Mra => conn::rej_mra::on_mra(dev, port_num, wc, &hdr, &Mra::decode(p)),
        AttrId::SidrRep => conn::sidr::on_sidr_rep(dev, port_num, wc, &hdr, &SidrRep::decode(p)),
        AttrId::Lap => conn::lap_apr::on_lap(dev, port_num, wc, &hdr, &Lap::decode(p)),
        AttrId::Apr => conn::lap_apr::on_apr(dev, port_num, wc, &hdr, &Apr::decode(p)),
    }
}

/// Holds a listener pinned for one handler invocation (`cm_find_listen`'s reference).
pub(crate) struct ListenerPin(pub(crate) Arc<CmId>);

impl Drop for ListenerPin {
    fn drop(&mut self) {
        self.0.listener_put();
    }
}

/// The P_Key of the BTH the MAD arrived with (`cm_get_bth_pkey`), 0 if unknown.
pub(crate) fn bth_pkey(dev: &CmDevice, port_num: u32, wc: &RecvWc) -> u16 {
    let mut pkey = 0u16;
    // SAFETY: Live device and completion; `pkey` is a valid output.
    let ret = unsafe {
        bindings::ib_get_cached_pkey(
            dev.ib_dev(),
            port_num,
            i32::from((*wc.wc()).pkey_index),
            &mut pkey,
        )
    };
    if ret != 0 {
        warn_malformed(
            dev,
            port_num,
            c_str!("no cached P_Key for the request's pkey index"),
        );
        return 0;
    }
    pkey
}

/// Fills a path record from what the logic computed, its record type from the address `wc_av`
/// the record's MAD came from, then its LIDs (whose layout depends on the type).
pub(crate) fn fill_typed_path(out: &mut bindings::sa_path_rec, p: &PathRecord, wc_av: &Av) {
    fill_path(out, p);
    // SAFETY: Our own record and an initialised attribute; the type is set before the LIDs.
    unsafe {
        bindings::ibcm_glue_path_set_type(out, wc_av.attr(), p.opa);
        bindings::ibcm_glue_path_set_lids(out, p.dlid, p.slid);
    }
}

/// Fills a path record from what the logic computed (the type and LIDs are set apart).
pub(crate) fn fill_path(out: &mut bindings::sa_path_rec, p: &PathRecord) {
    // SAFETY: `raw` is the byte view of the GID union; any bytes are valid.
    unsafe {
        *out.dgid.raw.as_mut() = p.dgid;
        *out.sgid.raw.as_mut() = p.sgid;
    }
    out.flow_label = p.flow_label.to_be();
    out.hop_limit = p.hop_limit;
    out.traffic_class = p.traffic_class;
    out.reversible = p.reversible;
    out.pkey = p.pkey.to_be();
    out.sl = p.sl;
    out.mtu_selector = SA_EQ;
    out.mtu = p.mtu;
    out.rate_selector = SA_EQ;
    out.rate = p.rate;
    out.packet_life_time_selector = SA_EQ;
    out.packet_life_time = p.packet_life_time;
    out.service_id = p.service_id.to_be();
}

/// A REJ answering the received `wc` (a REQ, or for a stale connection a REP) without an id
/// (`cm_issue_rej`): its comm IDs are the received message's first two words, swapped.
pub(crate) fn issue_rej(
    dev: &CmDevice,
    port_num: u32,
    wc: &RecvWc,
    tid: u64,
    reason: u16,
    rejected: u8,
) {
    let payload = wc.mad().get(MAD_HDR_LEN..).unwrap_or(&[]);
    let rej = req_event::issued_rej(payload, reason, rejected);
    // The received message's own comm IDs (the REJ's, swapped).
    trace::local(Local::IssueRej, rej.remote_comm_id, rej.local_comm_id);
    respond(dev, port_num, wc, tid, &CmMessage::Rej(rej));
}

/// Sends `msg` back to the sender of the received `wc`, with TID `tid` (cm.c's response
/// MADs: QP1, the completion's address and P_Key index, no id attached).
pub(crate) fn respond(dev: &CmDevice, port_num: u32, wc: &RecvWc, tid: u64, msg: &CmMessage<'_>) {
    // SAFETY: `wc` outlives the call, which runs in the device's receive work.
    let _ = unsafe {
        send::send(
            dev,
            port_num,
            Dest::Response {
                wc: wc.wc(),
                grh: wc.grh(),
            },
            msg,
            tid,
            0,
            false,
        )
    };
}

pub(crate) fn count_duplicate(dev: &CmDevice, port_num: u32, attr: AttrId) {
    if let Some(port) = dev.port(port_num) {
        port.count(Counter::RxDuplicates, attr.counter_index(), 1);
    }
}

/// Gives a new passive id to its handler: the handler's handle is one new reference; the id
/// is published (REQ ids only) with its first event already being delivered, so nothing can
/// overtake it (`cm_finalize_id` + `cm_queue_work_unlock`).
pub(crate) fn hand_over(id: Arc<CmId>, ev: CmBox<Event>, publish: bool) {
    if publish {
        id.publish();
    }
    // The delivery's use: nobody else holds the id yet, so its bias is there.
    id.add_user();
    let _handle = CmId::into_raw(id.clone());
    id.deliver(ev);
}
