// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The connection messages: REQ (IBTA Table 106), MRA (107), REJ (108), REP (110), RTU (111),
//! DREQ (112), DREP (113). Offsets are payload offsets, fields as in `ibta_vol1_c12.h`.

use super::field::{self, get, narrow, set, Bytes};

/// Private data sizes (`IB_CM_*_PRIVATE_DATA_SIZE`).
pub(crate) const REQ_PRIVATE_DATA: usize = 92;
/// MRA private data.
pub(crate) const MRA_PRIVATE_DATA: usize = 222;
/// REJ private data.
pub(crate) const REJ_PRIVATE_DATA: usize = 148;
/// REJ additional reject information.
pub(crate) const REJ_ARI: usize = 72;
const REJ_ARI_MAX: u8 = 72;
/// REP private data.
pub(crate) const REP_PRIVATE_DATA: usize = 196;
/// RTU private data (and DREP's: the two share [`CommIdsAndData`]).
pub(crate) const RTU_PRIVATE_DATA: usize = 224;
/// DREQ private data.
pub(crate) const DREQ_PRIVATE_DATA: usize = 220;
/// DREP private data (the RTU's layout and size).
pub(crate) const DREP_PRIVATE_DATA: usize = 224;

/// One path of a REQ (primary at 52, alternate at 96) or of a LAP (alternate at 20).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Path {
    /// +0, 16 bits.
    pub(crate) local_lid: u16,
    /// +2, 16 bits.
    pub(crate) remote_lid: u16,
    /// +4, 128 bits.
    pub(crate) local_gid: [u8; 16],
    /// +20, 128 bits.
    pub(crate) remote_gid: [u8; 16],
    /// +36, 20 bits.
    pub(crate) flow_label: u32,
    /// +39 bit 2, 6 bits (REQ layout).
    pub(crate) packet_rate: u8,
    /// +40, 8 bits (REQ layout).
    pub(crate) traffic_class: u8,
    /// +41, 8 bits (REQ layout).
    pub(crate) hop_limit: u8,
    /// +42, 4 bits.
    pub(crate) sl: u8,
    /// +42 bit 4, 1 bit.
    pub(crate) subnet_local: bool,
    /// +43, 5 bits.
    pub(crate) local_ack_timeout: u8,
}

/// Where a path layout puts the three one-byte fields that REQ (Table 106) and LAP
/// (Table 114) order differently, as offsets from the path's start.
#[derive(Clone, Copy)]
struct PathLayout {
    /// Packet rate: 6 bits from bit 2 of this byte.
    rate: usize,
    traffic_class: usize,
    hop_limit: usize,
}

/// REQ: rate at +39, traffic class +40, hop limit +41.
const REQ_PATH: PathLayout = PathLayout {
    rate: 39,
    traffic_class: 40,
    hop_limit: 41,
};
/// LAP: traffic class at +39, hop limit +40, rate +41.
const LAP_PATH: PathLayout = PathLayout {
    rate: 41,
    traffic_class: 39,
    hop_limit: 40,
};

impl Path {
    fn decode(p: &[u8], o: usize, l: PathLayout) -> Self {
        Self {
            local_lid: field::u16_at(p, o),
            remote_lid: field::u16_at(p, o + 2),
            local_gid: field::array(p, o + 4),
            remote_gid: field::array(p, o + 20),
            flow_label: narrow(get(p, o + 36, 0, 20)),
            packet_rate: narrow(get(p, o + l.rate, 2, 6)),
            traffic_class: field::u8_at(p, o + l.traffic_class),
            hop_limit: field::u8_at(p, o + l.hop_limit),
            sl: narrow(get(p, o + 42, 0, 4)),
            subnet_local: get(p, o + 42, 4, 1) != 0,
            local_ack_timeout: narrow(get(p, o + 43, 0, 5)),
        }
    }

    fn encode(&self, p: &mut [u8], o: usize, l: PathLayout) {
        field::put(p, o, &self.local_lid.to_be_bytes());
        field::put(p, o + 2, &self.remote_lid.to_be_bytes());
        field::put(p, o + 4, &self.local_gid);
        field::put(p, o + 20, &self.remote_gid);
        set(p, o + 36, 0, 20, u64::from(self.flow_label));
        set(p, o + l.rate, 2, 6, u64::from(self.packet_rate));
        field::put(p, o + l.traffic_class, &[self.traffic_class]);
        field::put(p, o + l.hop_limit, &[self.hop_limit]);
        set(p, o + 42, 0, 4, u64::from(self.sl));
        set(p, o + 42, 4, 1, u64::from(self.subnet_local));
        set(p, o + 43, 0, 5, u64::from(self.local_ack_timeout));
    }

    /// REQ layout of a path starting at `o` (52 primary, 96 alternate).
    fn decode_req(p: &[u8], o: usize) -> Self {
        Self::decode(p, o, REQ_PATH)
    }

    fn encode_req(&self, p: &mut [u8], o: usize) {
        self.encode(p, o, REQ_PATH)
    }

    /// LAP layout of the alternate path (at 20).
    pub(crate) fn decode_lap(p: &[u8], o: usize) -> Self {
        Self::decode(p, o, LAP_PATH)
    }

    /// Encodes the LAP layout.
    pub(crate) fn encode_lap(&self, p: &mut [u8], o: usize) {
        self.encode(p, o, LAP_PATH)
    }
}

/// REQ (Table 106).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Req<'a> {
    /// 0, 32 bits.
    pub(crate) local_comm_id: u32,
    /// 5, 24 bits.
    pub(crate) vendor_id: u32,
    /// 8, 64 bits.
    pub(crate) service_id: u64,
    /// 16, 64 bits.
    pub(crate) local_ca_guid: u64,
    /// 28, 32 bits.
    pub(crate) local_qkey: u32,
    /// 32, 24 bits.
    pub(crate) local_qpn: u32,
    /// 35, 8 bits.
    pub(crate) responder_resources: u8,
    /// 36, 24 bits.
    pub(crate) local_eecn: u32,
    /// 39, 8 bits.
    pub(crate) initiator_depth: u8,
    /// 40, 24 bits.
    pub(crate) remote_eecn: u32,
    /// 43, 5 bits.
    pub(crate) remote_cm_response_timeout: u8,
    /// 43 bit 5, 2 bits.
    pub(crate) transport_service_type: u8,
    /// 43 bit 7, 1 bit.
    pub(crate) end_to_end_flow_control: bool,
    /// 44, 24 bits.
    pub(crate) starting_psn: u32,
    /// 47, 5 bits.
    pub(crate) local_cm_response_timeout: u8,
    /// 47 bit 5, 3 bits.
    pub(crate) retry_count: u8,
    /// 48, 16 bits.
    pub(crate) pkey: u16,
    /// 50, 4 bits.
    pub(crate) path_mtu: u8,
    /// 50 bit 4, 1 bit.
    pub(crate) rdc_exists: bool,
    /// 50 bit 5, 3 bits.
    pub(crate) rnr_retry_count: u8,
    /// 51, 4 bits.
    pub(crate) max_cm_retries: u8,
    /// 51 bit 4, 1 bit.
    pub(crate) srq: bool,
    /// 51 bit 5, 3 bits.
    pub(crate) extended_transport_type: u8,
    /// 52..95.
    pub(crate) primary: Path,
    /// 96..139.
    pub(crate) alternate: Path,
    /// 139 bit 5, 1 bit.
    pub(crate) sap_supported: bool,
    /// 140, 92 bytes.
    pub(crate) private_data: Bytes<'a, REQ_PRIVATE_DATA>,
}

impl<'a> Req<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self::decode_with(p, Bytes::at(p, 140))
    }

    /// The REQ of payload `p` with `private_data` as its private data (the white-box tests
    /// build REQs from a payload on their stack and data that outlives it).
    pub(crate) fn decode_with(p: &[u8], private_data: Bytes<'a, REQ_PRIVATE_DATA>) -> Self {
        Self::from_view(&ReqView(p), Path::decode_req(p, 96), private_data)
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        set(p, 5, 0, 24, u64::from(self.vendor_id));
        field::put(p, 8, &self.service_id.to_be_bytes());
        field::put(p, 16, &self.local_ca_guid.to_be_bytes());
        field::put(p, 28, &self.local_qkey.to_be_bytes());
        set(p, 32, 0, 24, u64::from(self.local_qpn));
        field::put(p, 35, &[self.responder_resources]);
        set(p, 36, 0, 24, u64::from(self.local_eecn));
        field::put(p, 39, &[self.initiator_depth]);
        set(p, 40, 0, 24, u64::from(self.remote_eecn));
        set(p, 43, 0, 5, u64::from(self.remote_cm_response_timeout));
        set(p, 43, 5, 2, u64::from(self.transport_service_type));
        set(p, 43, 7, 1, u64::from(self.end_to_end_flow_control));
        set(p, 44, 0, 24, u64::from(self.starting_psn));
        set(p, 47, 0, 5, u64::from(self.local_cm_response_timeout));
        set(p, 47, 5, 3, u64::from(self.retry_count));
        field::put(p, 48, &self.pkey.to_be_bytes());
        set(p, 50, 0, 4, u64::from(self.path_mtu));
        set(p, 50, 4, 1, u64::from(self.rdc_exists));
        set(p, 50, 5, 3, u64::from(self.rnr_retry_count));
        set(p, 51, 0, 4, u64::from(self.max_cm_retries));
        set(p, 51, 4, 1, u64::from(self.srq));
        set(p, 51, 5, 3, u64::from(self.extended_transport_type));
        self.primary.encode_req(p, 52);
        // The payload is zeroed: an all-zero alternate (none) leaves nothing to write.
        if self.alternate != Path::default() {
            self.alternate.encode_req(p, 96);
        }
        set(p, 139, 5, 1, u64::from(self.sap_supported));
        self.private_data.put(p, 140);
    }

    /// Whether the REQ carries an alternate path (cm.c: alternate local LID non-zero, or an OPA
    /// GID, which RoCE never uses; see `cm_req_has_alt_path`).
    pub(crate) fn has_alt_path(&self) -> bool {
        carries_alt_path(self.alternate.local_lid, &self.alternate.local_gid)
    }
}

/// [`Req::has_alt_path`] from the alternate path's local LID and GID, the two fields it reads.
fn carries_alt_path(local_lid: u16, local_gid: &[u8; 16]) -> bool {
    local_lid != 0 || is_opa_gid(local_gid)
}

/// An OPA GID: the 0xFF prefix of `OPA_MAKE_ID` in the high bytes of the interface ID.
pub(crate) fn is_opa_gid(gid: &[u8; 16]) -> bool {
    // `ib_is_opa_gid`: interface ID high 24 bits equal OPA_STL_OUI (0x00066A).
    gid[8..11] == [0x00, 0x06, 0x6A]
}

/// Which message an MRA or REJ refers to (2 bits).
pub(crate) const MSG_REQ: u8 = 0;
/// The REP.
// Used by the tests now and by the MRA/REJ handling of the connection state machine.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const MSG_REP: u8 = 1;
/// Anything else (LAP).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const MSG_OTHER: u8 = 2;

/// MRA (Table 107).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Mra<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 8, 2 bits.
    pub(crate) message_mraed: u8,
    /// 9, 5 bits.
    pub(crate) service_timeout: u8,
    /// 10, 222 bytes.
    pub(crate) private_data: Bytes<'a, MRA_PRIVATE_DATA>,
}

impl<'a> Mra<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            local_comm_id: field::u32_at(p, 0),
            remote_comm_id: field::u32_at(p, 4),
            message_mraed: narrow(get(p, 8, 0, 2)),
            service_timeout: narrow(get(p, 9, 0, 5)),
            private_data: Bytes::at(p, 10),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        set(p, 8, 0, 2, u64::from(self.message_mraed));
        set(p, 9, 0, 5, u64::from(self.service_timeout));
        self.private_data.put(p, 10);
    }
}

/// REJ (Table 108).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Rej<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 8, 2 bits.
    pub(crate) message_rejected: u8,
    /// 9, 7 bits; clamped to 72 on decode.
    pub(crate) ari_length: u8,
    /// 10, 16 bits.
    pub(crate) reason: u16,
    /// 12, 72 bytes.
    pub(crate) ari: [u8; REJ_ARI],
    /// 84, 148 bytes.
    pub(crate) private_data: Bytes<'a, REJ_PRIVATE_DATA>,
}

impl<'a> Rej<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            local_comm_id: field::u32_at(p, 0),
            remote_comm_id: field::u32_at(p, 4),
            message_rejected: narrow(get(p, 8, 0, 2)),
            // 7 bits can claim 127; the ARI field holds 72 (spec 7, quirk 8).
            ari_length: narrow::<u8>(get(p, 9, 0, 7)).min(REJ_ARI_MAX),
            reason: field::u16_at(p, 10),
            ari: field::array(p, 12),
            private_data: Bytes::at(p, 84),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        set(p, 8, 0, 2, u64::from(self.message_rejected));
        set(p, 9, 0, 7, u64::from(self.ari_length));
        field::put(p, 10, &self.reason.to_be_bytes());
        field::put(p, 12, &self.ari);
        self.private_data.put(p, 84);
    }
}

/// REP (Table 110).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Rep<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 8.
    pub(crate) local_qkey: u32,
    /// 12, 24 bits.
    pub(crate) local_qpn: u32,
    /// 15 (bits 23:16), 19 (15:8), 23 (7:0): the 24-bit vendor ID.
    pub(crate) vendor_id: u32,
    /// 16, 24 bits (carries the QPN for XRC).
    pub(crate) local_eecn: u32,
    /// 20, 24 bits.
    pub(crate) starting_psn: u32,
    /// 24.
    pub(crate) responder_resources: u8,
    /// 25.
    pub(crate) initiator_depth: u8,
    /// 26, 5 bits.
    pub(crate) target_ack_delay: u8,
    /// 26 bit 5, 2 bits.
    pub(crate) failover_accepted: u8,
    /// 26 bit 7, 1 bit.
    pub(crate) end_to_end_flow_control: bool,
    /// 27, 3 bits.
    pub(crate) rnr_retry_count: u8,
    /// 27 bit 3, 1 bit.
    pub(crate) srq: bool,
    /// 28, 64 bits.
    pub(crate) local_ca_guid: u64,
    /// 36, 196 bytes.
    pub(crate) private_data: Bytes<'a, REP_PRIVATE_DATA>,
}

impl<'a> Rep<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        let v = RepView(p);
        Self {
            local_comm_id: v.local_comm_id(),
            remote_comm_id: v.remote_comm_id(),
            local_qkey: v.local_qkey(),
            local_qpn: v.local_qpn(),
            vendor_id: v.vendor_id(),
            local_eecn: v.local_eecn(),
            starting_psn: v.starting_psn(),
            responder_resources: v.responder_resources(),
            initiator_depth: v.initiator_depth(),
            target_ack_delay: v.target_ack_delay(),
            failover_accepted: v.failover_accepted(),
            end_to_end_flow_control: v.end_to_end_flow_control(),
            rnr_retry_count: v.rnr_retry_count(),
            srq: v.srq(),
            local_ca_guid: v.local_ca_guid(),
            private_data: Bytes::at(p, 36),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        let v = self.vendor_id.to_be_bytes();
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        field::put(p, 8, &self.local_qkey.to_be_bytes());
        set(p, 12, 0, 24, u64::from(self.local_qpn));
        field::put(p, 15, &[v[1]]);
        set(p, 16, 0, 24, u64::from(self.local_eecn));
        field::put(p, 19, &[v[2]]);
        set(p, 20, 0, 24, u64::from(self.starting_psn));
        field::put(p, 23, &[v[3]]);
        field::put(p, 24, &[self.responder_resources, self.initiator_depth]);
        set(p, 26, 0, 5, u64::from(self.target_ack_delay));
        set(p, 26, 5, 2, u64::from(self.failover_accepted));
        set(p, 26, 7, 1, u64::from(self.end_to_end_flow_control));
        set(p, 27, 0, 3, u64::from(self.rnr_retry_count));
        set(p, 27, 3, 1, u64::from(self.srq));
        field::put(p, 28, &self.local_ca_guid.to_be_bytes());
        self.private_data.put(p, 36);
    }
}

/// RTU (Table 111) and DREP (Table 113) share one layout: the two comm IDs and 224 bytes of
/// private data.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct CommIdsAndData<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 8, 224 bytes.
    pub(crate) private_data: Bytes<'a, RTU_PRIVATE_DATA>,
}

/// RTU (Table 111).
pub(crate) type Rtu<'a> = CommIdsAndData<'a>;
/// DREP (Table 113).
pub(crate) type Drep<'a> = CommIdsAndData<'a>;

impl<'a> CommIdsAndData<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            local_comm_id: field::u32_at(p, 0),
            remote_comm_id: field::u32_at(p, 4),
            private_data: Bytes::at(p, 8),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        self.private_data.put(p, 8);
    }
}

/// DREQ (Table 112).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Dreq<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 8, 24 bits.
    pub(crate) remote_qpn_eecn: u32,
    /// 12, 220 bytes.
    pub(crate) private_data: Bytes<'a, DREQ_PRIVATE_DATA>,
}

impl<'a> Dreq<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            local_comm_id: field::u32_at(p, 0),
            remote_comm_id: field::u32_at(p, 4),
            remote_qpn_eecn: narrow(get(p, 8, 0, 24)),
            private_data: Bytes::at(p, 12),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        set(p, 8, 0, 24, u64::from(self.remote_qpn_eecn));
        self.private_data.put(p, 12);
    }
}

/// A received REP read in place (Table 110): each field is read from the payload where it is
/// used, nothing is copied first. [`Rep::decode`] reads through it, so the offsets are written
/// once.
#[derive(Clone, Copy)]
pub(crate) struct RepView<'a>(pub(crate) &'a [u8]);

impl RepView<'_> {
    /// 0.
    pub(crate) fn local_comm_id(&self) -> u32 {
        field::u32_at(self.0, 0)
    }
    /// 4.
    pub(crate) fn remote_comm_id(&self) -> u32 {
        field::u32_at(self.0, 4)
    }
    /// 8.
    pub(crate) fn local_qkey(&self) -> u32 {
        field::u32_at(self.0, 8)
    }
    /// 12, 24 bits.
    pub(crate) fn local_qpn(&self) -> u32 {
        field::u32_at(self.0, 12) >> 8
    }
    /// 15 (bits 23:16), 19 (15:8), 23 (7:0).
    pub(crate) fn vendor_id(&self) -> u32 {
        (u32::from(field::u8_at(self.0, 15)) << 16)
            | (u32::from(field::u8_at(self.0, 19)) << 8)
            | u32::from(field::u8_at(self.0, 23))
    }
    /// 16, 24 bits (carries the QPN for XRC).
    pub(crate) fn local_eecn(&self) -> u32 {
        field::u32_at(self.0, 16) >> 8
    }
    /// 20, 24 bits.
    pub(crate) fn starting_psn(&self) -> u32 {
        field::u32_at(self.0, 20) >> 8
    }
    /// 24.
    pub(crate) fn responder_resources(&self) -> u8 {
        field::u8_at(self.0, 24)
    }
    /// 25.
    pub(crate) fn initiator_depth(&self) -> u8 {
        field::u8_at(self.0, 25)
    }
    /// 26, 5 bits.
    pub(crate) fn target_ack_delay(&self) -> u8 {
        field::u8_at(self.0, 26) >> 3
    }
    /// 26 bit 5, 2 bits.
    pub(crate) fn failover_accepted(&self) -> u8 {
        (field::u8_at(self.0, 26) >> 1) & 3
    }
    /// 26 bit 7, 1 bit.
    pub(crate) fn end_to_end_flow_control(&self) -> bool {
        field::u8_at(self.0, 26) & 1 != 0
    }
    /// 27, 3 bits.
    pub(crate) fn rnr_retry_count(&self) -> u8 {
        field::u8_at(self.0, 27) >> 5
    }
    /// 27 bit 3, 1 bit.
    pub(crate) fn srq(&self) -> bool {
        field::u8_at(self.0, 27) & 0x10 != 0
    }
    /// 28, 64 bits.
    pub(crate) fn local_ca_guid(&self) -> u64 {
        field::u64_at(self.0, 28)
    }
}

/// The two comm IDs every connection message but the REQ starts with, read in place (RTU,
/// DREP, and the DREQ with [`CommIdsView::dreq_remote_qpn`]).
#[derive(Clone, Copy)]
pub(crate) struct CommIdsView<'a>(pub(crate) &'a [u8]);

impl CommIdsView<'_> {
    /// 0: the sender's comm ID.
    pub(crate) fn local_comm_id(&self) -> u32 {
        field::u32_at(self.0, 0)
    }
    /// 4: ours.
    pub(crate) fn remote_comm_id(&self) -> u32 {
        field::u32_at(self.0, 4)
    }
    /// A DREQ's remote QPN/EECN (8, 24 bits).
    pub(crate) fn dreq_remote_qpn(&self) -> u32 {
        field::u32_at(self.0, 8) >> 8
    }
}

/// A received REQ read in place (Table 106). The duplicate and stale checks and the listener
/// lookup read only its keys, so a REQ that makes no connection (a retransmission, a stale one,
/// one for no listener) is never decoded whole; a REQ that finds a listener is read field by
/// field where the passive side uses it ([`ReqFields`]), never copied into a [`Req`].
#[derive(Clone, Copy)]
pub(crate) struct ReqView<'a>(pub(crate) &'a [u8]);

/// The implementations of [`ReqFields`] and `Req::from_view`, from the table of a REQ's scalar
/// fields at the end of this file: name, type, and how to read it from the payload `p`.
macro_rules! req_fields_impls {
    ($($name:ident: $t:ty = $read:expr;)*) => {
        impl ReqFields for Req<'_> {
            fn primary(&self) -> Path {
                self.primary
            }
            fn alternate(&self) -> Option<Path> {
                self.has_alt_path().then_some(self.alternate)
            }
            $(
                #[inline]
                fn $name(&self) -> $t {
                    self.$name
                }
            )*
        }

        impl ReqFields for ReqView<'_> {
            fn primary(&self) -> Path {
                Path::decode_req(self.0, 52)
            }
            fn alternate(&self) -> Option<Path> {
                carries_alt_path(field::u16_at(self.0, 96), &field::array(self.0, 100))
                    .then(|| Path::decode_req(self.0, 96))
            }
            $(
                #[inline]
                fn $name(&self) -> $t {
                    let read: fn(&[u8]) -> $t = $read;
                    read(self.0)
                }
            )*
        }

        impl<'a> Req<'a> {
            /// The REQ in `v`, with `alternate` as its alternate path and `private_data`.
            fn from_view(
                v: &ReqView<'_>,
                alternate: Path,
                private_data: Bytes<'a, REQ_PRIVATE_DATA>,
            ) -> Self {
                Self {
                    $($name: v.$name(),)*
                    primary: v.primary(),
                    alternate,
                    private_data,
                }
            }
        }
    };
}

/// The fields of a REQ, from a decoded [`Req`] or read in place from a [`ReqView`]: what the
/// passive side's logic (`logic::req_event`) takes, so the host tests can give it a `Req` and
/// the kernel a received payload. One table (`req_fields_impls!` below) gives the offsets, both
/// implementations and `Req::from_view`; the declarations here list the same fields.
pub(crate) trait ReqFields {
    /// The primary path (52..95).
    fn primary(&self) -> Path;
    /// The alternate path (96..139) if the REQ carries one ([`Req::has_alt_path`]).
    fn alternate(&self) -> Option<Path>;
    /// `local_comm_id` (0, 32 bits).
    fn local_comm_id(&self) -> u32;
    /// `vendor_id` (5, 24 bits).
    fn vendor_id(&self) -> u32;
    /// `service_id` (8, 64 bits).
    fn service_id(&self) -> u64;
    /// `local_ca_guid` (16, 64 bits).
    fn local_ca_guid(&self) -> u64;
    /// `local_qkey` (28, 32 bits).
    fn local_qkey(&self) -> u32;
    /// `local_qpn` (32, 24 bits).
    fn local_qpn(&self) -> u32;
    /// `responder_resources` (35, 8 bits).
    fn responder_resources(&self) -> u8;
    /// `local_eecn` (36, 24 bits).
    fn local_eecn(&self) -> u32;
    /// `initiator_depth` (39, 8 bits).
    fn initiator_depth(&self) -> u8;
    /// `remote_eecn` (40, 24 bits).
    fn remote_eecn(&self) -> u32;
    /// `remote_cm_response_timeout` (43, 5 bits).
    fn remote_cm_response_timeout(&self) -> u8;
    /// `transport_service_type` (43 bit 5, 2 bits).
    fn transport_service_type(&self) -> u8;
    /// `end_to_end_flow_control` (43 bit 7, 1 bit).
    fn end_to_end_flow_control(&self) -> bool;
    /// `starting_psn` (44, 24 bits).
    fn starting_psn(&self) -> u32;
    /// `local_cm_response_timeout` (47, 5 bits).
    fn local_cm_response_timeout(&self) -> u8;
    /// `retry_count` (47 bit 5, 3 bits).
    fn retry_count(&self) -> u8;
    /// `pkey` (48, 16 bits).
    fn pkey(&self) -> u16;
    /// `path_mtu` (50, 4 bits).
    fn path_mtu(&self) -> u8;
    /// `rdc_exists` (50 bit 4, 1 bit).
    fn rdc_exists(&self) -> bool;
    /// `rnr_retry_count` (50 bit 5, 3 bits).
    fn rnr_retry_count(&self) -> u8;
    /// `max_cm_retries` (51, 4 bits).
    fn max_cm_retries(&self) -> u8;
    /// `srq` (51 bit 4, 1 bit).
    fn srq(&self) -> bool;
    /// `extended_transport_type` (51 bit 5, 3 bits).
    fn extended_transport_type(&self) -> u8;
    /// `sap_supported` (139 bit 5, 1 bit).
    fn sap_supported(&self) -> bool;
}

req_fields_impls! {
    local_comm_id: u32 = |p| field::u32_at(p, 0);
    vendor_id: u32 = |p| narrow(get(p, 5, 0, 24));
    service_id: u64 = |p| field::u64_at(p, 8);
    local_ca_guid: u64 = |p| field::u64_at(p, 16);
    local_qkey: u32 = |p| field::u32_at(p, 28);
    local_qpn: u32 = |p| narrow(get(p, 32, 0, 24));
    responder_resources: u8 = |p| field::u8_at(p, 35);
    local_eecn: u32 = |p| narrow(get(p, 36, 0, 24));
    initiator_depth: u8 = |p| field::u8_at(p, 39);
    remote_eecn: u32 = |p| narrow(get(p, 40, 0, 24));
    remote_cm_response_timeout: u8 = |p| narrow(get(p, 43, 0, 5));
    transport_service_type: u8 = |p| narrow(get(p, 43, 5, 2));
    end_to_end_flow_control: bool = |p| get(p, 43, 7, 1) != 0;
    starting_psn: u32 = |p| narrow(get(p, 44, 0, 24));
    local_cm_response_timeout: u8 = |p| narrow(get(p, 47, 0, 5));
    retry_count: u8 = |p| narrow(get(p, 47, 5, 3));
    pkey: u16 = |p| field::u16_at(p, 48);
    path_mtu: u8 = |p| narrow(get(p, 50, 0, 4));
    rdc_exists: bool = |p| get(p, 50, 4, 1) != 0;
    rnr_retry_count: u8 = |p| narrow(get(p, 50, 5, 3));
    max_cm_retries: u8 = |p| narrow(get(p, 51, 0, 4));
    srq: bool = |p| get(p, 51, 4, 1) != 0;
    extended_transport_type: u8 = |p| narrow(get(p, 51, 5, 3));
    sap_supported: bool = |p| get(p, 139, 5, 1) != 0;
}
