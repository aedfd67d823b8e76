// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Receiving CM MADs: the agent's receive callback, the CM workqueue, and the dispatch of
//! REQ and SIDR_REQ to listeners.
//!
//! Stands for `cm_recv_handler()`, `cm_work_handler()`, the listener half of
//! `cm_req_handler()` and `cm_sidr_req_handler()`, and `cm_issue_rej()` for unknown services
//! in cm.c. The receive callback only counts the MAD and queues it; everything else runs on the
//! CM workqueue (process context), with no CM lock held while a consumer's handler runs. The
//! listener is looked up before anything is allocated for the connection, so a REQ for an
//! unknown service costs one tree lookup and one REJ.

use crate::alloc::CmBox;
use crate::{
    av::Av,
    bindings,
    cm_id::{CmId, Conn, Init},
    comm_id, conn,
    device::CmDevice,
    event::Event,
    logic::{
        req_event::{self, PathRecord, RecvPort, SidrReply, SA_EQ, SIDR_UNSUPPORTED},
        service_id::ServiceId,
        state::{Input, State},
        timeout,
        wire::{
            conn::{Drep, Dreq, Mra, Rej, Rep, Req, Rtu, MSG_REQ},
            decode_header,
            lap::{Apr, Lap},
            sidr::{SidrRep, SidrReq},
            AttrId, CmMessage, MadHeader, WireError, MAD_HDR_LEN, MAD_LEN,
        },
    },
    port::{device_of_agent, Counter},
    remote::{ConnReservation, QpKey, RemoteKey, RemoteReservation, ReqKey, SidrKey, Taken},
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
        AttrId::Req => handle_req(dev, port_num, wc, &hdr, &Req::decode(p)),
        AttrId::SidrReq => handle_sidr_req(dev, port_num, wc, &hdr, &SidrReq::decode(p)),
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
struct ListenerPin(Arc<CmId>);

impl Drop for ListenerPin {
    fn drop(&mut self) {
        self.0.listener_put();
    }
}

/// The P_Key of the BTH the MAD arrived with (`cm_get_bth_pkey`), 0 if unknown.
fn bth_pkey(dev: &CmDevice, port_num: u32, wc: &RecvWc) -> u16 {
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
fn fill_path(out: &mut bindings::sa_path_rec, p: &PathRecord) {
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

/// What the device tables say about a request's remote keys.
enum Seen {
    /// Nothing: a new request.
    New,
    /// A retransmission of a request this id holds.
    Duplicate(Arc<CmId>),
    /// A new REQ from a queue pair this id is connected (or connecting) to
    /// (`cm_insert_remote_qpn`).
    Stale(Arc<CmId>),
}

/// The REQ checks against the device's tables.
fn seen_req(inner: &crate::device::DeviceInner, key: &ReqKey, qp: &QpKey) -> Seen {
    if let Some(id) = inner.remote_conns.get_req(key) {
        Seen::Duplicate(id)
    } else if let Some(id) = inner.remote_conns.get_qp(qp) {
        Seen::Stale(id)
    } else {
        Seen::New
    }
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

fn count_duplicate(dev: &CmDevice, port_num: u32, attr: AttrId) {
    if let Some(port) = dev.port(port_num) {
        port.count(Counter::RxDuplicates, attr.counter_index(), 1);
    }
}

/// What to do with a REQ whose keys are known (`cm_match_req`'s first two checks).
fn on_known_req(dev: &CmDevice, port_num: u32, wc: &RecvWc, hdr: &MadHeader, seen: Seen) {
    match seen {
        Seen::New => {}
        // `cm_dup_req_handler`: counted; an MRA_REQ_SENT id sends its MRA again.
        Seen::Duplicate(id) => {
            // Only an id that is visible by comm ID (set up and handed over) answers, as
            // cm.c's `cm_acquire_id` in `cm_match_req`; one still being set up ignores it.
            let Some(id) = comm_id::acquire(id.local_id(), id.remote_id()) else {
                return;
            };
            let recv = conn::Recv::new(dev, port_num, AttrId::Req, hdr, wc);
            let mut ctx = conn::Ctx {
                recv: Some(recv),
                ..conn::Ctx::default()
            };
            let out = conn::run(&id, Input::RecvDupReq, &mut ctx, |_, _| {}, |_, _| {});
            let _ = conn::finish(&id, out, ctx.recv.as_ref());
        }
        // REJ STALE_CONN, and a DREQ to the old connection (effective if ESTABLISHED).
        Seen::Stale(old) => {
            issue_rej(
                dev,
                port_num,
                wc,
                hdr.tid,
                req_event::REJ_STALE_CONN,
                MSG_REQ,
            );
            let _ = conn::dreq_drep::send_dreq(&old, &[]);
        }
    }
}

/// The passive id's parameters from a REQ (`cm_req_handler`).
fn conn_of_req(req: &Req<'_>, tid: u64) -> Conn {
    let mut conn = Conn {
        tid,
        remote_qpn: req.local_qpn,
        sq_psn: req.starting_psn,
        timeout_ms: timeout::conv_ms(req.local_cm_response_timeout),
        path_mtu: req.path_mtu,
        pkey: req.pkey,
        max_cm_retries: req.max_cm_retries,
        responder_resources: req.initiator_depth,
        initiator_depth: req.responder_resources,
        retry_count: req.retry_count,
        rnr_retry_count: req.rnr_retry_count,
        ..Conn::default()
    };
    conn.set_qp_type(req_event::qp_type(req));
    conn
}

/// `IB_CM_REJ_INVALID_GID`.
pub(crate) const REJ_INVALID_GID: u16 = 12;
/// `IB_CM_REJ_INVALID_ALT_GID`.
pub(crate) const REJ_INVALID_ALT_GID: u16 = 18;

/// REQ (`cm_req_handler`).
fn handle_req(dev: &Arc<CmDevice>, port_num: u32, wc: &RecvWc, hdr: &MadHeader, req: &Req<'_>) {
    let sid = ServiceId::new(req.service_id);
    let key = ReqKey {
        ca_guid: req.local_ca_guid,
        comm_id: req.local_comm_id,
    };
    let qp = QpKey {
        ca_guid: req.local_ca_guid,
        qpn: req.local_qpn,
    };
    let (seen, listener) = {
        let inner = dev.inner.lock();
        match seen_req(&inner, &key, &qp) {
            Seen::New => (Seen::New, inner.listen.find(sid)),
            s => (s, None),
        }
    };
    // cm.c traces every REQ that makes no new connection (a retransmission, a stale
    // connection, no listener) as `icm_no_listener_err`, after its answer.
    if !matches!(seen, Seen::New) {
        on_known_req(dev, port_num, wc, hdr, seen);
        return trace::no_listener(req.local_comm_id);
    }
    let Some(listener) = listener else {
        issue_rej(
            dev,
            port_num,
            wc,
            hdr.tid,
            req_event::REJ_INVALID_SERVICE_ID,
            MSG_REQ,
        );
        return trace::no_listener(req.local_comm_id);
    };
    let listener = ListenerPin(listener);
    // SAFETY: `wc` outlives the call, which runs in the device's receive work.
    let Ok(wc_av) = (unsafe { Av::from_wc(dev, port_num, wc.wc(), wc.grh()) }) else {
        return;
    };
    // SAFETY: The receive work owns `wc` until this event is delivered (by `hand_over`, in
    // this work) or dropped; queueing it copies the MAD first.
    let ev = unsafe { Event::for_wc(bindings::ib_cm_event_type_IB_CM_REQ_RECEIVED, wc) };
    let Ok(mut ev) = ev else {
        return;
    };

    // SAFETY: `wc` is valid while it lives; `wc_av` was initialised for this REQ.
    let port = unsafe {
        let w = &*wc.wc();
        RecvPort {
            roce: (*wc_av.attr()).type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE,
            opa: bindings::ibcm_glue_cap_opa_ah(dev.ib_dev(), port_num),
            wc_slid: w.slid,
            wc_sl: w.sl,
            wc_dlid_path_bits: w.dlid_path_bits,
        }
    };
    let (primary, alternate) = req_event::req_paths(req, &port);
    fill_typed_path(&mut ev.paths()[0], &primary, &wc_av);
    // SAFETY: The AV was initialised from this completion.
    ev.paths()[0].hop_limit = unsafe { bindings::ibcm_glue_ah_attr_hop_limit(wc_av.attr()) };
    if let Some(alt) = &alternate {
        fill_path(&mut ev.paths()[1], alt);
        ev.paths()[1].rec_type = ev.paths()[0].rec_type;
        // SAFETY: Our own path record.
        unsafe { bindings::ibcm_glue_path_set_lids(&mut ev.paths()[1], alt.dlid, alt.slid) };
    }
    // The id's address comes from the primary path (`cm_init_av_by_path`); if that fails,
    // REJ INVALID_GID with our port's GID 0 as ARI.
    // SAFETY: Our own path record; the sgid attribute is held by `wc_av`.
    let mut av = match unsafe { Av::from_path(dev, &mut ev.paths()[0], wc_av.sgid_attr()) } {
        Ok(av) => av,
        Err(_) => {
            // SAFETY: Live device; `gid` is a valid output.
            let (have, ari) = unsafe {
                let mut gid: bindings::ib_gid = core::mem::zeroed();
                let ok = bindings::rdma_query_gid(dev.ib_dev(), port_num, 0, &mut gid) == 0;
                (ok, *gid.raw.as_ref())
            };
            let rej = req_event::rej_of_req(
                0,
                req.local_comm_id,
                REJ_INVALID_GID,
                if have { &ari } else { &[] },
                &[],
            );
            return respond(dev, port_num, wc, hdr.tid, &CmMessage::Rej(rej));
        }
    };
    // SAFETY: `av` holds an initialised attribute.
    if unsafe { (*av.attr()).type_ } == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB {
        // The REQ's primary local LID (after the routed-REQ rule), programmed into the QP by
        // `ib_cm_init_qp_attr(RTR)`.
        av.dlid_datapath = req_event::datapath_dlid(req, &port);
    }
    // A REQ with an alternate path gives the id its alternate address too; if that path gives
    // none, REJ INVALID_ALT_GID with the primary path's source GID as ARI (as cm.c, which
    // resolves it with no sgid attribute).
    let alt_av = if alternate.is_some() {
        // SAFETY: Our own path record.
        match unsafe { Av::from_path(dev, &mut ev.paths()[1], core::ptr::null()) } {
            Ok(alt) => Some(alt),
            Err(_) => {
                // SAFETY: `raw` is the byte view of the GID union.
                let ari = unsafe { *ev.paths()[0].sgid.raw.as_ref() };
                let rej =
                    req_event::rej_of_req(0, req.local_comm_id, REJ_INVALID_ALT_GID, &ari, &[]);
                // cm.c sends this one from the id, on the primary path's address it has just
                // built (`cm_alloc_msg`), not back along the REQ's packet as the INVALID_GID
                // REJ above; without a handle nothing is sent, as there.
                let dest = Dest::Av {
                    attr: av.attr(),
                    remote_qpn: send::QP1,
                    pkey_index: av.pkey_index,
                };
                // SAFETY: `av`'s attribute is initialised and outlives the call.
                let _ = unsafe {
                    send::send(
                        dev,
                        av.port_num(),
                        dest,
                        &CmMessage::Rej(rej),
                        hdr.tid,
                        0,
                        false,
                    )
                };
                return;
            }
        }
    } else {
        None
    };
    // An OPA source GID is shown as the port's GID 0, on both paths (`cm_opa_to_ib_sgid`).
    let rewrite = req_event::ib_sgid_rewrites(&primary, alternate.as_ref(), &port);
    for (path, _) in ev.paths().iter_mut().zip(rewrite).filter(|(_, r)| *r) {
        // SAFETY: Live device; `sgid` is a valid output. On failure the OPA GID stays, as in C.
        unsafe {
            let mut gid: bindings::ib_gid = core::mem::zeroed();
            if bindings::rdma_query_gid(dev.ib_dev(), port_num, 0, &mut gid) == 0 {
                path.sgid = gid;
            }
        }
    }
    let Ok(reservation) = ConnReservation::new(GFP_KERNEL) else {
        return;
    };
    let sgid_attr = av.sgid_attr();
    let init = Init {
        handler: listener.0.handler(),
        context: listener.0.context(),
        state: State::ReqRcvd,
        service_id: sid,
        remote_id: req.local_comm_id,
        av: Some(av),
        alt_av,
        conn: conn_of_req(req, hdr.tid),
        remote: Some(RemoteKey::req(key, qp)),
        delivering: true,
    };
    let Ok(id) = CmId::build(dev.clone(), init) else {
        return;
    };
    drop(wc_av);
    // A copy of the same REQ, or another REQ from the same QP, may have been handled on
    // another CPU meanwhile: the insert checks again, under the device lock, and registers in
    // both tables or neither.
    let refused = dev
        .inner
        .lock()
        .remote_conns
        .insert(key, qp, &id, reservation)
        .err();
    // A refused reservation is freed when this function returns; no lock is held then.
    let seen = match refused {
        None => Seen::New,
        Some((_, Taken::Req(other))) => Seen::Duplicate(other),
        Some((_, Taken::Qp(other))) => Seen::Stale(other),
    };
    if !matches!(seen, Seen::New) {
        id.inner.lock().remote = None;
        id.destroy_with(-(bindings::ENOMEM as i32));
        on_known_req(dev, port_num, wc, hdr, seen);
        // As on the early path (cm.c traces every failed `cm_match_req`).
        return trace::no_listener(req.local_comm_id);
    }

    let params = req_event::req_params(req, hdr.attr_mod);
    let pd = ev.payload_ptr(140);
    let (primary_ptr, alt_ptr) = {
        let (a, b) = ev.paths().split_at_mut(1);
        (a.as_mut_ptr(), b.as_mut_ptr())
    };
    ev.ev.private_data = pd;
    // SAFETY: `req_rcvd` is the union member this event type uses.
    let p = unsafe { ev.ev.param.req_rcvd.as_mut() };
    p.listen_id = CmId::raw(&listener.0);
    p.bth_pkey = bth_pkey(dev, port_num, wc);
    p.port = u8::try_from(port_num).unwrap_or(0);
    p.primary_path = primary_ptr;
    p.alternate_path = if alternate.is_some() {
        alt_ptr
    } else {
        core::ptr::null_mut()
    };
    // The id's address holds this attribute while it is the id's address: for the whole
    // handler call, unless a LAP (InfiniBand only) replaces the address meanwhile, which drops
    // the reference as cm.c's `cm_init_av_for_lap()` does.
    p.ppath_sgid_attr = sgid_attr;
    p.remote_ca_guid = params.remote_ca_guid.to_be();
    p.remote_qkey = params.remote_qkey;
    p.remote_qpn = params.remote_qpn;
    p.qp_type = params.qp_type;
    p.starting_psn = params.starting_psn;
    p.responder_resources = params.responder_resources;
    p.initiator_depth = params.initiator_depth;
    // The bit fields are set by the C compiler (bindgen misplaces two of them, see glue.c).
    // SAFETY: `p` is our event's parameter block.
    unsafe {
        bindings::ibcm_glue_req_event_bits(
            p,
            params.local_cm_response_timeout,
            params.flow_control.into(),
            params.remote_cm_response_timeout,
            params.retry_count,
            params.rnr_retry_count,
            params.srq.into(),
        )
    };
    p.ece.vendor_id = params.ece_vendor_id;
    p.ece.attr_mod = params.ece_attr_mod;
    hand_over(id, ev, true);
    drop(listener);
}

/// Gives a new passive id to its handler: the handler's handle is one new reference; the id
/// is published (REQ ids only) with its first event already being delivered, so nothing can
/// overtake it (`cm_finalize_id` + `cm_queue_work_unlock`).
fn hand_over(id: Arc<CmId>, ev: CmBox<Event>, publish: bool) {
    if publish {
        id.publish();
    }
    // The delivery's use: nobody else holds the id yet, so its bias is there.
    id.add_user();
    let _handle = CmId::into_raw(id.clone());
    id.deliver(ev);
}

/// SIDR_REQ (`cm_sidr_req_handler`).
fn handle_sidr_req(
    dev: &Arc<CmDevice>,
    port_num: u32,
    wc: &RecvWc,
    hdr: &MadHeader,
    sidr: &SidrReq<'_>,
) {
    let sid = ServiceId::new(sidr.service_id);
    // SAFETY: `wc` is valid while it lives.
    let slid = unsafe { (*wc.wc()).slid };
    let key = SidrKey {
        request_id: sidr.request_id,
        slid,
    };
    let (dup, listener) = {
        let inner = dev.inner.lock();
        if inner.remote_sidrs.contains(&key) {
            (true, None)
        } else {
            (false, inner.listen.find(sid))
        }
    };
    if dup {
        return count_duplicate(dev, port_num, AttrId::SidrReq);
    }
    let Some(listener) = listener else {
        let rep = req_event::sidr_rep(&SidrReply {
            request_id: sidr.request_id,
            status: SIDR_UNSUPPORTED,
            qpn: 0,
            qkey: 0,
            service_id: sidr.service_id,
            vendor_id: 0,
            info: &[],
            private_data: &[],
        });
        return respond(dev, port_num, wc, hdr.tid, &CmMessage::SidrRep(rep));
    };
    let listener = ListenerPin(listener);
    // SAFETY: `wc` outlives the call, which runs in the device's receive work.
    let Ok(av) = (unsafe { Av::from_wc(dev, port_num, wc.wc(), wc.grh()) }).and_then(Av::boxed)
    else {
        return;
    };
    let (Ok(reservation), Ok(mut ev)) = (
        RemoteReservation::<SidrKey>::new(GFP_KERNEL),
        // SAFETY: The receive work owns `wc` until this event is delivered (by `hand_over`,
        // in this work) or dropped; queueing it copies the MAD first.
        unsafe { Event::for_wc(bindings::ib_cm_event_type_IB_CM_SIDR_REQ_RECEIVED, wc) },
    ) else {
        return;
    };
    let sgid_attr = av.sgid_attr();
    let init = Init {
        handler: listener.0.handler(),
        context: listener.0.context(),
        state: State::SidrReqRcvd,
        service_id: sid,
        remote_id: sidr.request_id,
        av: Some(av),
        alt_av: None,
        conn: Conn {
            tid: hdr.tid,
            ..Conn::default()
        },
        remote: Some(RemoteKey::Sidr(key)),
        delivering: true,
    };
    let Ok(id) = CmId::build(dev.clone(), init) else {
        return;
    };
    let refused = dev.inner.lock().remote_sidrs.insert(key, &id, reservation);
    if refused.is_err() {
        drop(refused);
        // Not in SIDR_REQ_RCVD as far as destroy is concerned: a retransmission gets no
        // SIDR_REP REJECT (cm.c checks for duplicates before setting the state).
        {
            let mut g = id.inner.lock();
            g.remote = None;
            id.set_state(State::Idle.raw());
        }
        id.destroy_with(-(bindings::ENOMEM as i32));
        return count_duplicate(dev, port_num, AttrId::SidrReq);
    }
    ev.set_private_data(16);
    // SAFETY: `sidr_req_rcvd` is the union member this event type uses.
    let p = unsafe { ev.ev.param.sidr_req_rcvd.as_mut() };
    p.listen_id = CmId::raw(&listener.0);
    p.service_id = sidr.service_id.to_be();
    p.sgid_attr = sgid_attr;
    p.bth_pkey = bth_pkey(dev, port_num, wc);
    p.port = u8::try_from(port_num).unwrap_or(0);
    p.pkey = sidr.pkey;
    hand_over(id, ev, false);
    drop(listener);
}
