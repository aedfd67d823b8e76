// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! What a received REQ or SIDR_REQ turns into, as values: the path records, the scalar fields
//! of `ib_cm_req_event_param`, the replies built without an id.
//!
//! Stands for `cm_format_paths_from_req()`, `cm_format_req_event()`, `cm_req_get_qp_type()`,
//! the REQ field copies of `cm_req_handler()`, and the message parts of `cm_issue_rej()` and
//! of the SIDR_REP sent for an unknown service in cm.c. The kernel side copies these values
//! into the C structs.

use super::wire::conn::{is_opa_gid, Path, Rej, ReqFields, MSG_REQ, REJ_ARI};
use super::wire::field::Bytes;
use super::wire::sidr::{SidrRep, SIDR_REP_INFO};

/// `IB_SA_EQ`: the selectors of a path built from a REQ.
pub(crate) const SA_EQ: u8 = 2;
/// `IB_CM_REJ_INVALID_SERVICE_ID`.
pub(crate) const REJ_INVALID_SERVICE_ID: u16 = 8;
/// `IB_CM_REJ_CONSUMER_DEFINED`.
pub(crate) const REJ_CONSUMER_DEFINED: u16 = 28;
/// `IB_SIDR_UNSUPPORTED`.
pub(crate) const SIDR_UNSUPPORTED: u8 = 1;
/// `IB_SIDR_REJECT`.
pub(crate) const SIDR_REJECT: u8 = 2;

/// A path record as the passive side sees it (`struct sa_path_rec`, CPU byte order).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct PathRecord {
    /// The requester's GID (the REQ's local GID).
    pub(crate) dgid: [u8; 16],
    /// Our GID (the REQ's remote GID).
    pub(crate) sgid: [u8; 16],
    /// Flow label, 20 bits.
    pub(crate) flow_label: u32,
    /// Hop limit (the kernel side replaces the primary's with the received GRH's).
    pub(crate) hop_limit: u8,
    /// Traffic class.
    pub(crate) traffic_class: u8,
    /// Always 1.
    pub(crate) reversible: u8,
    /// The REQ's P_Key.
    pub(crate) pkey: u16,
    /// Service level.
    pub(crate) sl: u8,
    /// The REQ's path MTU.
    pub(crate) mtu: u8,
    /// Packet rate.
    pub(crate) rate: u8,
    /// The REQ's local ACK timeout minus one (if above zero).
    pub(crate) packet_life_time: u8,
    /// The REQ's service ID.
    pub(crate) service_id: u64,
    /// The record is OPA (`SA_PATH_REC_TYPE_OPA`; otherwise IB, or RoCE as the kernel side
    /// decides from the address).
    pub(crate) opa: bool,
    /// `dlid`: the requester's LID.
    pub(crate) dlid: u32,
    /// `slid`: our LID.
    pub(crate) slid: u32,
}

/// What the receiving port and the work completion add to a REQ's path records.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct RecvPort {
    /// The reply address is RoCE (`RDMA_AH_ATTR_TYPE_ROCE`).
    pub(crate) roce: bool,
    /// The port uses OPA addressing (`rdma_cap_opa_ah()`).
    pub(crate) opa: bool,
    /// The work completion's source LID.
    pub(crate) wc_slid: u32,
    /// Its service level.
    pub(crate) wc_sl: u8,
    /// Its destination LID path bits.
    pub(crate) wc_dlid_path_bits: u8,
}

/// `IB_LID_PERMISSIVE`.
const LID_PERMISSIVE: u16 = 0xFFFF;

/// `cm_process_routed_req()` (IB only) for one path: a path that is not subnet-local takes a
/// permissive local LID (and the SL with it) from the work completion's source, and a
/// permissive remote LID from its path bits.
fn route_path(p: &mut Path, port: &RecvPort) {
    if p.subnet_local {
        return;
    }
    if p.local_lid == LID_PERMISSIVE {
        // CAST: cm.c stores the completion's LID through a 16-bit field.
        p.local_lid = port.wc_slid as u16;
        p.sl = port.wc_sl & 0xF;
    }
    if p.remote_lid == LID_PERMISSIVE {
        p.remote_lid = u16::from(port.wc_dlid_path_bits);
    }
}

/// The passive id's datapath DLID (`av.dlid_datapath`, InfiniBand): the REQ's primary local
/// LID as `cm_req_handler` reads it, after `cm_process_routed_req()` (IB only).
pub(crate) fn datapath_dlid(req: &impl ReqFields, port: &RecvPort) -> u16 {
    routed(req.primary(), port).local_lid
}

/// `p` after `cm_process_routed_req()`, which only InfiniBand applies.
fn routed(mut p: Path, port: &RecvPort) -> Path {
    if !port.roce {
        route_path(&mut p, port);
    }
    p
}

/// `opa_get_lid_from_gid()`: the low 32 bits of the interface ID.
fn opa_lid(gid: &[u8; 16]) -> u32 {
    u32::from_be_bytes([gid[12], gid[13], gid[14], gid[15]])
}

fn path_from(req: &impl ReqFields, p: &Path, opa: bool) -> PathRecord {
    record_of(p, req.pkey(), req.path_mtu(), req.service_id(), opa)
}

/// The path record of a LAP's alternate path (`cm_path_set_rec_type()` and
/// `cm_format_path_from_lap()`): the P_Key and MTU are the id's, the service ID is left 0,
/// and the record is OPA when the port uses OPA addressing (`port_opa`) and the path's local
/// GID is an OPA GID.
pub(crate) fn lap_path(alt: &Path, pkey: u16, mtu: u8, port_opa: bool) -> PathRecord {
    record_of(alt, pkey, mtu, 0, port_opa && is_opa_gid(&alt.local_gid))
}

/// A received path seen from our side: the sender's local fields are the destination.
fn record_of(p: &Path, pkey: u16, mtu: u8, service_id: u64, opa: bool) -> PathRecord {
    PathRecord {
        dgid: p.local_gid,
        sgid: p.remote_gid,
        flow_label: p.flow_label,
        hop_limit: p.hop_limit,
        traffic_class: p.traffic_class,
        reversible: 1,
        pkey,
        sl: p.sl,
        mtu,
        rate: p.packet_rate,
        packet_life_time: super::timeout::life_from_ack(p.local_ack_timeout),
        service_id,
        opa,
        dlid: if opa {
            opa_lid(&p.local_gid)
        } else {
            u32::from(p.local_lid)
        },
        slid: if opa {
            opa_lid(&p.remote_gid)
        } else {
            u32::from(p.remote_lid)
        },
    }
}

/// The primary and alternate path records of a REQ received on `port`
/// (`cm_process_routed_req()` on IB, `cm_path_set_rec_type()`, `cm_format_paths_from_req()`):
/// OPA records when the port uses OPA addressing and the primary local GID is an OPA GID (the
/// alternate takes the primary's type), LIDs then from the GIDs; otherwise the primary's
/// `dlid` is the work completion's source LID.
pub(crate) fn req_paths(req: &impl ReqFields, port: &RecvPort) -> (PathRecord, Option<PathRecord>) {
    let first = routed(req.primary(), port);
    let opa = !port.roce && port.opa && is_opa_gid(&first.local_gid);
    let mut primary = path_from(req, &first, opa);
    if !opa {
        primary.dlid = port.wc_slid;
    }
    let alternate = req
        .alternate()
        .map(|alt| path_from(req, &routed(alt, port), opa));
    (primary, alternate)
}

/// `cm_opa_to_ib_sgid()`: whether an event's path must show the port's GID 0 instead of its
/// OPA source GID.
fn wants_ib_sgid(path: &PathRecord, port: &RecvPort) -> bool {
    port.opa && is_opa_gid(&path.sgid)
}

/// Which of a REQ event's (primary, alternate) paths get the port's GID 0 as source GID: cm.c
/// rewrites both (`cm_req_handler()` calls `cm_opa_to_ib_sgid()` for the alternate too).
pub(crate) fn ib_sgid_rewrites(
    primary: &PathRecord,
    alternate: Option<&PathRecord>,
    port: &RecvPort,
) -> [bool; 2] {
    [
        wants_ib_sgid(primary, port),
        alternate.is_some_and(|alt| wants_ib_sgid(alt, port)),
    ]
}

/// `enum ib_qp_type` values the REQ can ask for.
pub(crate) const QPT_RC: u32 = 2;
/// UC.
pub(crate) const QPT_UC: u32 = 3;
/// XRC target.
pub(crate) const QPT_XRC_TGT: u32 = 10;

/// `cm_req_get_qp_type()`: transport 0 is RC, 1 UC, 3 with extended type 1 XRC target, and
/// anything else gives 0, as in C.
pub(crate) fn qp_type(req: &impl ReqFields) -> u32 {
    match (req.transport_service_type(), req.extended_transport_type()) {
        (0, _) => QPT_RC,
        (1, _) => QPT_UC,
        (3, 1) => QPT_XRC_TGT,
        _ => 0,
    }
}

/// The scalar fields of `ib_cm_req_event_param` (everything but pointers and the P_Key of the
/// BTH), with the initiator/responder swaps of `cm_format_req_event()`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ReqParams {
    /// `remote_ca_guid` (CPU order).
    pub(crate) remote_ca_guid: u64,
    /// `remote_qkey`.
    pub(crate) remote_qkey: u32,
    /// `remote_qpn`.
    pub(crate) remote_qpn: u32,
    /// `qp_type`.
    pub(crate) qp_type: u32,
    /// `starting_psn`.
    pub(crate) starting_psn: u32,
    /// `responder_resources`: the REQ's initiator depth.
    pub(crate) responder_resources: u8,
    /// `initiator_depth`: the REQ's responder resources.
    pub(crate) initiator_depth: u8,
    /// `local_cm_response_timeout`: the REQ's remote CM response timeout.
    pub(crate) local_cm_response_timeout: u8,
    /// `flow_control`.
    pub(crate) flow_control: bool,
    /// `remote_cm_response_timeout`: the REQ's local CM response timeout.
    pub(crate) remote_cm_response_timeout: u8,
    /// `retry_count`.
    pub(crate) retry_count: u8,
    /// `rnr_retry_count`.
    pub(crate) rnr_retry_count: u8,
    /// `srq`.
    pub(crate) srq: bool,
    /// `ece.vendor_id`.
    pub(crate) ece_vendor_id: u32,
    /// `ece.attr_mod`.
    pub(crate) ece_attr_mod: u32,
}

/// The event fields of a REQ received with MAD header `attr_mod`.
pub(crate) fn req_params(req: &impl ReqFields, attr_mod: u32) -> ReqParams {
    ReqParams {
        remote_ca_guid: req.local_ca_guid(),
        remote_qkey: req.local_qkey(),
        remote_qpn: req.local_qpn(),
        qp_type: qp_type(req),
        starting_psn: req.starting_psn(),
        responder_resources: req.initiator_depth(),
        initiator_depth: req.responder_resources(),
        local_cm_response_timeout: req.remote_cm_response_timeout(),
        flow_control: req.end_to_end_flow_control(),
        remote_cm_response_timeout: req.local_cm_response_timeout(),
        retry_count: req.retry_count(),
        rnr_retry_count: req.rnr_retry_count(),
        srq: req.srq(),
        ece_vendor_id: req.vendor_id(),
        ece_attr_mod: attr_mod,
    }
}

/// `IB_CM_REJ_STALE_CONN`.
pub(crate) const REJ_STALE_CONN: u16 = 10;

/// The REJ `cm_issue_rej()` sends for a REQ it refuses without an id (INVALID_SERVICE_ID when
/// nobody listens, STALE_CONN when the peer's QP already has a request pending): message REQ,
/// remote comm ID = the REQ's local comm ID, and (cm.c quirk, spec 5.3) local comm ID = bytes
/// 4-7 of the REQ (reserved byte and vendor ID).
pub(crate) fn issued_rej(req_payload: &[u8], reason: u16, message_rejected: u8) -> Rej<'static> {
    let word = |o: usize| {
        let mut b = [0u8; 4];
        for (i, x) in b.iter_mut().enumerate() {
            *x = req_payload.get(o + i).copied().unwrap_or(0);
        }
        u32::from_be_bytes(b)
    };
    Rej {
        local_comm_id: word(4),
        remote_comm_id: word(0),
        message_rejected,
        ari_length: 0,
        reason,
        ari: [0; REJ_ARI],
        private_data: Bytes::EMPTY,
    }
}

/// A REJ of a REQ we hold an id for, in REQ_RCVD (local comm ID 0, spec 5.1) or later.
pub(crate) fn rej_of_req<'a>(
    local_comm_id: u32,
    remote_comm_id: u32,
    reason: u16,
    ari: &[u8],
    private_data: &'a [u8],
) -> Rej<'a> {
    let mut rej = Rej {
        local_comm_id,
        remote_comm_id,
        message_rejected: MSG_REQ,
        ari_length: 0,
        reason,
        ari: [0; REJ_ARI],
        private_data: Bytes::new(private_data),
    };
    let n = ari.len().min(REJ_ARI);
    rej.ari[..n].copy_from_slice(&ari[..n]);
    rej.ari_length = u8::try_from(n).unwrap_or(0);
    rej
}

/// The values of a SIDR_REP (`cm_format_sidr_rep`): only 16 bits of the vendor ID and no
/// additional-information length on the wire, as cm.c (quirk 3).
pub(crate) struct SidrReply<'a> {
    /// The SIDR_REQ's request ID.
    pub(crate) request_id: u32,
    /// `enum ib_cm_sidr_status`.
    pub(crate) status: u8,
    /// QPN.
    pub(crate) qpn: u32,
    /// Q_Key.
    pub(crate) qkey: u32,
    /// Service ID, echoed.
    pub(crate) service_id: u64,
    /// ECE vendor ID.
    pub(crate) vendor_id: u32,
    /// Additional information (at most 72 bytes are sent).
    pub(crate) info: &'a [u8],
    /// Private data (at most 136 bytes are sent).
    pub(crate) private_data: &'a [u8],
}

/// Builds the SIDR_REP message.
pub(crate) fn sidr_rep<'a>(r: &SidrReply<'a>) -> SidrRep<'a> {
    let mut rep = SidrRep {
        request_id: r.request_id,
        status: r.status,
        info_length: 0,
        vendor_id_h: u16::from(r.vendor_id.to_be_bytes()[2]),
        qpn: r.qpn & 0x00FF_FFFF,
        vendor_id_l: r.vendor_id.to_be_bytes()[3],
        service_id: r.service_id,
        qkey: r.qkey,
        info: [0; SIDR_REP_INFO],
        private_data: Bytes::new(r.private_data),
    };
    let n = r.info.len().min(SIDR_REP_INFO);
    rep.info[..n].copy_from_slice(&r.info[..n]);
    rep
}

/// Receiving ports for the tests (here and in `tests/host`).
#[cfg(test)]
pub(crate) mod test_ports {
    use super::RecvPort;

    /// A RoCE port.
    pub(crate) const ROCE: RecvPort = RecvPort {
        roce: true,
        opa: false,
        wc_slid: 0,
        wc_sl: 0,
        wc_dlid_path_bits: 0,
    };
    /// An InfiniBand port.
    pub(crate) const IB: RecvPort = RecvPort {
        roce: false,
        opa: false,
        wc_slid: 0x1234,
        wc_sl: 0x1B,
        wc_dlid_path_bits: 5,
    };
    /// A port with OPA addressing.
    pub(crate) const OPA: RecvPort = RecvPort {
        roce: false,
        opa: true,
        wc_slid: 0x99,
        wc_sl: 2,
        wc_dlid_path_bits: 1,
    };
}

#[cfg(test)]
mod tests {
    use super::test_ports::{IB, ROCE};
    use super::*;
    use crate::logic::wire::conn::Req;

    fn req() -> Req<'static> {
        let mut p = [0u8; 232];
        p[0..4].copy_from_slice(&0x1111_2222u32.to_be_bytes());
        p[4..8].copy_from_slice(&[0, 0xAA, 0xBB, 0xCC]);
        p[8..16].copy_from_slice(&0x0106_1C06u64.to_be_bytes());
        p[16..24].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        p[32..35].copy_from_slice(&[0, 0, 0x11]);
        p[35] = 4; // responder resources
        p[39] = 7; // initiator depth
        p[43] = (20 << 3) | 1; // remote CM timeout 20, RC, flow control
        p[47] = (18 << 3) | 6;
        p[48..50].copy_from_slice(&0xFFFFu16.to_be_bytes());
        p[50] = (3 << 4) | 7;
        p[54..56].copy_from_slice(&0x0022u16.to_be_bytes());
        p[56] = 0xAB; // local GID
        p[72] = 0xCD; // remote GID
        p[95] = 17 << 3;
        // The decoded REQ borrows its private data from the payload: kept for the test.
        Req::decode(Box::leak(Box::new(p)))
    }

    #[test]
    fn primary_path_swaps_gids_and_decrements_life_time() {
        let r = req();
        let (p, alt) = req_paths(&r, &ROCE);
        assert_eq!((p.dgid[0], p.sgid[0]), (0xAB, 0xCD));
        assert_eq!(
            (p.pkey, p.mtu, p.reversible, p.packet_life_time),
            (0xFFFF, 3, 1, 16)
        );
        assert_eq!(p.service_id, 0x0106_1C06);
        assert_eq!((p.slid, p.dlid, p.opa), (0x22, 0, false));
        assert!(alt.is_none());
    }

    #[test]
    fn zero_ack_timeout_stays_zero() {
        let mut r = req();
        r.primary.local_ack_timeout = 0;
        assert_eq!(req_paths(&r, &ROCE).0.packet_life_time, 0);
    }

    #[test]
    fn ib_primary_dlid_is_the_senders_lid() {
        let (p, _) = req_paths(&req(), &IB);
        assert_eq!((p.dlid, p.slid, p.sl, p.opa), (0x1234, 0x22, 0, false));
    }

    #[test]
    fn datapath_dlid_is_the_routed_primary_local_lid() {
        let mut r = req();
        let lid = r.primary.local_lid;
        assert_eq!(datapath_dlid(&r, &IB), lid);
        // Routed with a permissive local LID: the completion's source LID, as the REQ
        // `cm_process_routed_req()` rewrote; subnet-local or RoCE: the LID as sent.
        r.primary.subnet_local = false;
        r.primary.local_lid = 0xFFFF;
        assert_eq!(datapath_dlid(&r, &IB), 0x1234);
        assert_eq!(datapath_dlid(&r, &ROCE), 0xFFFF);
        r.primary.subnet_local = true;
        assert_eq!(datapath_dlid(&r, &IB), 0xFFFF);
    }

    #[test]
    fn routed_ib_paths_take_permissive_lids_from_the_completion() {
        let mut r = req();
        r.primary.subnet_local = false;
        r.primary.local_lid = 0xFFFF;
        r.primary.remote_lid = 0xFFFF;
        r.alternate = r.primary;
        r.alternate.local_gid[0] = 0xEE;
        let (p, alt) = req_paths(&r, &IB);
        // Local LID and SL from the completion (SL cut to 4 bits), remote LID its path bits.
        assert_eq!((p.dlid, p.slid, p.sl), (0x1234, 5, 0xB));
        let alt = alt.expect("alternate");
        assert_eq!(
            (alt.dlid, alt.slid, alt.sl, alt.dgid[0]),
            (0x1234, 5, 0xB, 0xEE)
        );
        // Subnet-local paths and RoCE keep what the REQ says.
        r.primary.subnet_local = true;
        assert_eq!(req_paths(&r, &IB).0.slid, 0xFFFF);
        r.primary.subnet_local = false;
        assert_eq!(req_paths(&r, &ROCE).0.slid, 0xFFFF);
    }

    #[test]
    fn opa_paths_take_lids_from_gids() {
        let mut r = req();
        let opa_gid = |lid: u32| {
            let mut g = [0u8; 16];
            g[0] = 0xFE;
            g[8..11].copy_from_slice(&[0x00, 0x06, 0x6A]);
            g[12..16].copy_from_slice(&lid.to_be_bytes());
            g
        };
        r.primary.local_gid = opa_gid(0x0001_0203);
        r.primary.remote_gid = opa_gid(0x0004_0506);
        // The alternate is present because its local GID is an OPA GID (LID 0).
        r.alternate.local_gid = opa_gid(0x0007_0809);
        r.alternate.remote_gid = opa_gid(0x000A_0B0C);
        let port = RecvPort { opa: true, ..IB };
        let (p, alt) = req_paths(&r, &port);
        assert_eq!((p.opa, p.dlid, p.slid), (true, 0x0001_0203, 0x0004_0506));
        let alt = alt.expect("alternate");
        assert_eq!(
            (alt.opa, alt.dlid, alt.slid),
            (true, 0x0007_0809, 0x000A_0B0C)
        );
        // Both paths' OPA source GIDs are rewritten, as cm.c does.
        assert_eq!(ib_sgid_rewrites(&p, Some(&alt), &port), [true, true]);
        assert_eq!(ib_sgid_rewrites(&p, None, &port), [true, false]);
        // An alternate whose source GID is not an OPA GID keeps it.
        let mut ib_alt = alt;
        ib_alt.sgid = [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(ib_sgid_rewrites(&p, Some(&ib_alt), &port), [true, false]);
        // Not an OPA port: plain IB records, and the sgids stay.
        let (p, alt) = req_paths(&r, &IB);
        assert_eq!((p.opa, p.dlid), (false, 0x1234));
        assert_eq!(ib_sgid_rewrites(&p, alt.as_ref(), &IB), [false, false]);
    }

    #[test]
    fn params_swap_depth_and_timeouts() {
        let p = req_params(&req(), 0xABCD);
        assert_eq!((p.responder_resources, p.initiator_depth), (7, 4));
        assert_eq!(
            (p.local_cm_response_timeout, p.remote_cm_response_timeout),
            (20, 18)
        );
        assert_eq!(
            (p.remote_qpn, p.qp_type, p.retry_count, p.rnr_retry_count),
            (0x11, QPT_RC, 6, 7)
        );
        assert!(p.flow_control);
        assert_eq!((p.ece_vendor_id, p.ece_attr_mod), (0xAABBCC, 0xABCD));
        assert_eq!(p.remote_ca_guid, 0x0102_0304_0506_0708);
    }

    #[test]
    fn qp_types_as_c() {
        let mut r = req();
        for (t, x, want) in [
            (0, 0, QPT_RC),
            (1, 0, QPT_UC),
            (3, 1, QPT_XRC_TGT),
            (3, 0, 0),
            (2, 0, 0),
        ] {
            r.transport_service_type = t;
            r.extended_transport_type = x;
            assert_eq!(qp_type(&r), want, "{t} {x}");
        }
    }

    #[test]
    fn rej_for_unknown_service_mirrors_cm_issue_rej() {
        let mut p = [0u8; 232];
        p[0..4].copy_from_slice(&0x1111_2222u32.to_be_bytes());
        p[4..8].copy_from_slice(&[0, 0xAA, 0xBB, 0xCC]);
        let rej = issued_rej(&p, REJ_INVALID_SERVICE_ID, MSG_REQ);
        assert_eq!(
            (rej.local_comm_id, rej.remote_comm_id),
            (0x00AA_BBCC, 0x1111_2222)
        );
        assert_eq!(
            (rej.reason, rej.message_rejected, rej.ari_length),
            (8, MSG_REQ, 0)
        );
        assert_eq!(issued_rej(&p, REJ_STALE_CONN, MSG_REQ).reason, 10);
    }

    #[test]
    fn rej_clamps_ari_and_private_data() {
        let rej = rej_of_req(0, 5, REJ_CONSUMER_DEFINED, &[1; 100], &[2; 200]);
        assert_eq!(rej.ari_length, 72);
        assert_eq!((rej.ari[71], rej.private_data[147]), (1, 2));
    }

    #[test]
    fn sidr_rep_keeps_c_vendor_quirk() {
        let rep = sidr_rep(&SidrReply {
            request_id: 9,
            status: SIDR_UNSUPPORTED,
            qpn: 0xFF00_0042,
            qkey: 0,
            service_id: 0x0111_0001,
            vendor_id: 0x00AB_CDEF,
            info: &[],
            private_data: &[],
        });
        assert_eq!(
            (rep.vendor_id_h, rep.vendor_id_l, rep.qpn, rep.info_length),
            (0xCD, 0xEF, 0x42, 0)
        );
    }

    #[test]
    fn lap_alternate_path_takes_the_ids_pkey_and_mtu() {
        let mut alt = req().primary;
        alt.local_lid = 0x31;
        alt.remote_lid = 0x32;
        alt.local_ack_timeout = 9;
        alt.subnet_local = false;
        let p = lap_path(&alt, 0x8001, 4, false);
        assert_eq!((p.dgid[0], p.sgid[0]), (0xAB, 0xCD));
        // No routed-path rewrite and no completion LID: the LAP's own LIDs.
        assert_eq!((p.dlid, p.slid, p.opa), (0x31, 0x32, false));
        assert_eq!(
            (
                p.pkey,
                p.mtu,
                p.packet_life_time,
                p.service_id,
                p.reversible
            ),
            (0x8001, 4, 8, 0, 1)
        );
        // OPA only on a port with OPA addressing and an OPA local GID; LIDs from the GIDs.
        alt.local_gid = [
            0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x06, 0x6A, 0, 0, 0x12, 0x34, 0x56,
        ];
        alt.remote_gid = alt.local_gid;
        alt.remote_gid[15] = 0x57;
        assert!(!lap_path(&alt, 0, 4, false).opa);
        let p = lap_path(&alt, 0, 4, true);
        assert_eq!((p.opa, p.dlid, p.slid), (true, 0x12_3456, 0x12_3457));
    }
}
