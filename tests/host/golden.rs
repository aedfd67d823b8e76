// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Golden vectors of the 11 CM messages, written by hand from the IBTA Vol. 1 chapter 12
//! field tables (REQ Table 106, MRA 107, REJ 108, REP 110, RTU 111, DREQ 112, DREP 113,
//! LAP 114, APR 115, SIDR_REQ 119, SIDR_REP 120), cross-checked against the kernel's
//! `include/rdma/ibta_vol1_c12.h` (6.12; it labels LAP and APR "Table 115" and "Table 116") and
//! spec section 5.2.
//!
//! Nothing here goes through the codec's field helpers: each vector is a list of
//! (payload offset, bytes) rows, one per table row or per byte shared by bit fields, with the
//! bit packing spelled out in binary. Every field holds a distinct non-zero value, every byte
//! of a multi-byte field is non-zero (so a field read too narrow or from the neighbouring byte
//! changes the value), and each is checked both ways: decode(bytes) == the expected struct, and
//! encode(struct) == the bytes. The reserved bits of each table are listed by hand too; they
//! give the round-trip test in `wire_tests.rs` a defined-bit mask that does not come from the
//! codec under test.
// Binary literals are grouped by field, not by nibble: `0b10110_10_1` is 5 + 2 + 1 bits.
#![allow(clippy::unusual_byte_groupings)]

use crate::logic::wire::{
    conn::*, decode_mad, encode_mad, field::Bytes, lap::*, sidr::*, AttrId, CmMessage, MadHeader,
    MAD_HDR_LEN, MAD_LEN, PAYLOAD_LEN,
};

/// The rows of a golden payload: (payload offset, bytes). Bytes not listed are zero.
type Rows = &'static [(usize, &'static [u8])];

/// The reserved bits of a message: (payload offset, mask of reserved bits in that byte).
type Reserved = &'static [(usize, u8)];

/// A variable-length area (private data, ARI, additional information): where it starts, how
/// long it is, and the salt of its byte pattern.
#[derive(Clone, Copy)]
struct Area {
    at: usize,
    len: usize,
    salt: u8,
}

impl Area {
    const fn new(at: usize, len: usize, salt: u8) -> Self {
        Self { at, len, salt }
    }
}

/// Byte `i` of a pattern area: never zero, and different for every index below 255, so an
/// area read from the wrong offset shows.
fn pattern_byte(i: usize, salt: u8) -> u8 {
    // CAST: the value is in 1..=255.
    ((i * 13 + usize::from(salt)) % 255 + 1) as u8
}

/// The pattern as the fixed-size array a decoded struct holds.
fn pattern<const N: usize>(salt: u8) -> [u8; N] {
    core::array::from_fn(|i| pattern_byte(i, salt))
}

/// The pattern as a message's borrowed private data (leaked: these are tests).
fn pd<const N: usize>(salt: u8) -> Bytes<'static, N> {
    Bytes::new(Box::leak(Box::new(pattern::<N>(salt))))
}

/// Builds the payload of `attr` from its rows and pattern areas, and checks the vector
/// against the hand-written reserved bits of the same table: no byte is listed twice, every
/// byte that holds a defined bit is listed and non-zero in its defined bits, and no reserved
/// bit is set. A golden vector that contradicts itself or its table is a test bug.
fn build(attr: AttrId, rows: Rows, areas: &[Area]) -> [u8; PAYLOAD_LEN] {
    let mut p = [0u8; PAYLOAD_LEN];
    let mut owner: [Option<usize>; PAYLOAD_LEN] = [None; PAYLOAD_LEN];
    let mut claim = |at: usize, what: usize| {
        assert!(owner[at].is_none(), "golden vector: byte {at} listed twice");
        owner[at] = Some(what);
    };
    for (row, (at, bytes)) in rows.iter().enumerate() {
        for (i, b) in bytes.iter().enumerate() {
            claim(at + i, row);
            p[at + i] = *b;
        }
    }
    for (n, a) in areas.iter().enumerate() {
        for i in 0..a.len {
            claim(a.at + i, 1000 + n);
            p[a.at + i] = pattern_byte(i, a.salt);
        }
    }
    let defined = defined_mask(attr);
    for i in 0..PAYLOAD_LEN {
        assert_eq!(
            p[i] & !defined[i],
            0,
            "{attr:?} golden vector: reserved bit set in byte {i}"
        );
        if defined[i] != 0 {
            assert!(
                owner[i].is_some(),
                "{attr:?} golden vector: defined byte {i} not listed"
            );
            assert_ne!(p[i], 0, "{attr:?} golden vector: defined byte {i} is zero");
        } else {
            assert!(
                owner[i].is_none(),
                "{attr:?} golden vector: reserved byte {i} listed"
            );
        }
    }
    p
}

/// Asserts two payloads are equal, naming every differing offset.
fn assert_bytes(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let diffs: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| g != w)
        .map(|(i, (g, w))| format!("byte {i}: got {g:#04x} want {w:#04x}"))
        .collect();
    assert!(diffs.is_empty(), "{what}:\n  {}", diffs.join("\n  "));
}

/// The 24-byte MAD header of a golden MAD as `cm_format_mad_hdr()` fills it, written out.
fn golden_header(attr_id: [u8; 2]) -> [u8; MAD_HDR_LEN] {
    [
        0x01, // base version
        0x07, // management class CM
        0x02, // class version
        0x03, // method Send
        0x00, 0x00, // status
        0x00, 0x00, // class specific
        0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, // TID
        attr_id[0], attr_id[1], // attribute ID
        0x00, 0x00, // reserved
        0x79, 0x7A, 0x7B, 0x7C, // attribute modifier
    ]
}
const GOLDEN_TID: u64 = 0x7172_7374_7576_7778;
const GOLDEN_ATTR_MOD: u32 = 0x797A_7B7C;

/// Checks one golden vector every way the codec can be entered:
/// - decode of the bytes, and of the bytes with every reserved bit set, gives `want`;
/// - encode of `want` (into a dirty buffer: `CmMessage::encode` zeroes it) gives the bytes;
/// - a whole MAD with a hand-written header decodes to `want` and `encode_mad` rebuilds it.
fn check(attr: AttrId, attr_id: [u8; 2], bytes: &[u8; PAYLOAD_LEN], want: &CmMessage) {
    let name = format!("{attr:?}");
    assert_eq!(
        CmMessage::decode(attr, bytes).unwrap(),
        *want,
        "{name}: decode(golden)"
    );

    let mut dirty = *bytes;
    for &(at, mask) in reserved(attr) {
        dirty[at] |= mask;
    }
    assert_eq!(
        CmMessage::decode(attr, &dirty).unwrap(),
        *want,
        "{name}: reserved bits are ignored"
    );

    let mut out = [0xA5u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, bytes, &format!("{name}: encode(expected)"));

    let mut mad = [0u8; MAD_LEN];
    mad[..MAD_HDR_LEN].copy_from_slice(&golden_header(attr_id));
    mad[MAD_HDR_LEN..].copy_from_slice(bytes);
    let (hdr, msg) = decode_mad(&mad).unwrap();
    assert_eq!(msg, *want, "{name}: decode_mad");
    assert_eq!(
        (hdr.tid, hdr.attr_mod),
        (GOLDEN_TID, GOLDEN_ATTR_MOD),
        "{name}: header"
    );
    let mut out = [0u8; MAD_LEN];
    encode_mad(want, GOLDEN_TID, GOLDEN_ATTR_MOD, &mut out);
    assert_bytes(&out, &mad, &format!("{name}: encode_mad"));
}

/// The reserved bits of each message, from the IBTA tables (every bit not listed is a field).
pub(crate) fn reserved(attr: AttrId) -> Reserved {
    match attr {
        // Table 106: 4 reserved; 24..27 reserved; flow label 20 bits then 6 reserved
        // (90[4:4], 91[0:2]) in both paths; 94[5:3], 95[5:3], 138[5:3]; 139[6:2].
        AttrId::Req => &[
            (4, 0xFF),
            (24, 0xFF),
            (25, 0xFF),
            (26, 0xFF),
            (27, 0xFF),
            (90, 0x0F),
            (91, 0xC0),
            (94, 0x07),
            (95, 0x07),
            (134, 0x0F),
            (135, 0xC0),
            (138, 0x07),
            (139, 0x03),
        ],
        // Table 107: 8[2:6], 9[5:3].
        AttrId::Mra => &[(8, 0x3F), (9, 0x07)],
        // Table 108: 8[2:6], 9[7:1].
        AttrId::Rej => &[(8, 0x3F), (9, 0x01)],
        // Table 110: 27[4:4].
        AttrId::Rep => &[(27, 0x0F)],
        // Tables 111 and 113: none.
        AttrId::Rtu | AttrId::Drep => &[],
        // Table 112: 11 (after the 24-bit remote QPN/EECN).
        AttrId::Dreq => &[(11, 0xFF)],
        // Table 114: 8..11; 15[5:3]; 16..19; 58[4:4] (after the flow label); 61[0:2];
        // 62[5:3]; 63[5:3].
        AttrId::Lap => &[
            (8, 0xFF),
            (9, 0xFF),
            (10, 0xFF),
            (11, 0xFF),
            (15, 0x07),
            (16, 0xFF),
            (17, 0xFF),
            (18, 0xFF),
            (19, 0xFF),
            (58, 0x0F),
            (61, 0xC0),
            (62, 0x07),
            (63, 0x07),
        ],
        // Table 115: 10, 11.
        AttrId::Apr => &[(10, 0xFF), (11, 0xFF)],
        // Table 119: 6, 7.
        AttrId::SidrReq => &[(6, 0xFF), (7, 0xFF)],
        // Table 120: none.
        AttrId::SidrRep => &[],
    }
}

/// The defined bits of a message: the complement of [`reserved`], independent of the codec.
pub(crate) fn defined_mask(attr: AttrId) -> [u8; PAYLOAD_LEN] {
    let mut m = [0xFFu8; PAYLOAD_LEN];
    for &(at, mask) in reserved(attr) {
        m[at] &= !mask;
    }
    m
}

// ---------------------------------------------------------------------------------------------
// REQ, Table 106.

/// Primary Local Port GID (the REQ's four GIDs share no byte).
const REQ_PRIMARY_LOCAL_GID: [u8; 16] = [
    0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F,
];
/// Primary Remote Port GID.
const REQ_PRIMARY_REMOTE_GID: [u8; 16] = [
    0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F,
];
/// Alternate Local Port GID.
const REQ_ALT_LOCAL_GID: [u8; 16] = [
    0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x8F,
];
/// Alternate Remote Port GID.
const REQ_ALT_REMOTE_GID: [u8; 16] = [
    0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F,
];

#[rustfmt::skip]
const REQ_ROWS: Rows = &[
    (0, &[0xA1, 0xA2, 0xA3, 0xA4]),  // Local Communication ID
    (5, &[0xB1, 0xB2, 0xB3]),        // Vendor ID (24 bits)
    // Service ID
    (8, &[0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8]),
    // Local CA GUID
    (16, &[0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8]),
    (28, &[0xE1, 0xE2, 0xE3, 0xE4]), // Local Q_Key
    (32, &[0xF1, 0xF2, 0xF3]),       // Local QPN
    (35, &[0x15]),                   // Responder Resources
    (36, &[0x16, 0x17, 0x18]),       // Local EECN
    (39, &[0x19]),                   // Initiator Depth
    (40, &[0x1A, 0x1B, 0x1C]),       // Remote EECN
    // Remote CM Response Timeout 22 | Transport Service Type 2 | End-to-End Flow Control 1
    (43, &[0b10110_10_1]),
    (44, &[0x1D, 0x1E, 0x1F]),       // Starting PSN
    // Local CM Response Timeout 13 | Retry Count 6
    (47, &[0b01101_110]),
    (48, &[0x2B, 0x2C]),             // Partition Key
    // Path Packet Payload MTU 9 | RDC Exists 1 | RNR Retry Count 3
    (50, &[0b1001_1_011]),
    // Max CM Retries 10 | SRQ 1 | Extended Transport Type 4
    (51, &[0b1010_1_100]),
    (52, &[0x31, 0x32]),             // Primary Local Port LID
    (54, &[0x33, 0x34]),             // Primary Remote Port LID
    (56, &REQ_PRIMARY_LOCAL_GID),    // Primary Local Port GID
    (72, &REQ_PRIMARY_REMOTE_GID),   // Primary Remote Port GID
    (88, &[0x6A, 0x6B, 0x60]),       // Primary Flow Label 0x6A6B6 (20 bits), then 4 reserved bits
    (91, &[0b00_101110]),            // reserved | Primary Packet Rate 46
    (92, &[0x6C]),                   // Primary Traffic Class
    (93, &[0x6D]),                   // Primary Hop Limit
    (94, &[0b1101_1_000]),           // Primary SL 13 | Primary Subnet Local 1 | reserved
    (95, &[0b10011_000]),            // Primary Local ACK Timeout 19 | reserved
    (96, &[0x71, 0x72]),             // Alternate Local Port LID
    (98, &[0x73, 0x74]),             // Alternate Remote Port LID
    (100, &REQ_ALT_LOCAL_GID),       // Alternate Local Port GID
    (116, &REQ_ALT_REMOTE_GID),      // Alternate Remote Port GID
    (132, &[0xA5, 0xA6, 0xA0]),      // Alternate Flow Label 0xA5A6A, then 4 reserved bits
    (135, &[0b00_100101]),           // reserved | Alternate Packet Rate 37
    (136, &[0x7A]),                  // Alternate Traffic Class
    (137, &[0x7B]),                  // Alternate Hop Limit
    (138, &[0b0110_1_000]),          // Alternate SL 6 | Alternate Subnet Local 1 | reserved
    (139, &[0b01011_1_00]),          // Alternate Local ACK Timeout 11 | SAP Supported 1 | reserved
];
const REQ_DATA: Area = Area::new(140, 92, 0x11);

fn req_expected() -> Req<'static> {
    Req {
        local_comm_id: 0xA1A2_A3A4,
        vendor_id: 0xB1_B2B3,
        service_id: 0xC1C2_C3C4_C5C6_C7C8,
        local_ca_guid: 0xD1D2_D3D4_D5D6_D7D8,
        local_qkey: 0xE1E2_E3E4,
        local_qpn: 0xF1_F2F3,
        responder_resources: 0x15,
        local_eecn: 0x16_1718,
        initiator_depth: 0x19,
        remote_eecn: 0x1A_1B1C,
        remote_cm_response_timeout: 22,
        transport_service_type: 2,
        end_to_end_flow_control: true,
        starting_psn: 0x1D_1E1F,
        local_cm_response_timeout: 13,
        retry_count: 6,
        pkey: 0x2B2C,
        path_mtu: 9,
        rdc_exists: true,
        rnr_retry_count: 3,
        max_cm_retries: 10,
        srq: true,
        extended_transport_type: 4,
        primary: Path {
            local_lid: 0x3132,
            remote_lid: 0x3334,
            local_gid: REQ_PRIMARY_LOCAL_GID,
            remote_gid: REQ_PRIMARY_REMOTE_GID,
            flow_label: 0x6A6B6,
            packet_rate: 46,
            traffic_class: 0x6C,
            hop_limit: 0x6D,
            sl: 13,
            subnet_local: true,
            local_ack_timeout: 19,
        },
        alternate: Path {
            local_lid: 0x7172,
            remote_lid: 0x7374,
            local_gid: REQ_ALT_LOCAL_GID,
            remote_gid: REQ_ALT_REMOTE_GID,
            flow_label: 0xA5A6A,
            packet_rate: 37,
            traffic_class: 0x7A,
            hop_limit: 0x7B,
            sl: 6,
            subnet_local: true,
            local_ack_timeout: 11,
        },
        sap_supported: true,
        private_data: pd(REQ_DATA.salt),
    }
}

#[test]
fn golden_req_table_106() {
    let bytes = build(AttrId::Req, REQ_ROWS, &[REQ_DATA]);
    let want = req_expected();
    assert_eq!(Req::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Req::encode");
    check(AttrId::Req, [0x00, 0x10], &bytes, &CmMessage::Req(want));
}

// ---------------------------------------------------------------------------------------------
// MRA, Table 107.

#[rustfmt::skip]
const MRA_ROWS: Rows = &[
    (0, &[0x21, 0x22, 0x23, 0x24]), // Local Communication ID
    (4, &[0x25, 0x26, 0x27, 0x28]), // Remote Communication ID
    (8, &[0b01_000000]),            // Message MRAed 1 (REP) | reserved
    (9, &[0b10101_000]),            // Service Timeout 21 | reserved
];
const MRA_DATA: Area = Area::new(10, 222, 0x22);

#[test]
fn golden_mra_table_107() {
    let bytes = build(AttrId::Mra, MRA_ROWS, &[MRA_DATA]);
    let want = Mra {
        local_comm_id: 0x2122_2324,
        remote_comm_id: 0x2526_2728,
        message_mraed: MSG_REP,
        service_timeout: 21,
        private_data: pd(MRA_DATA.salt),
    };
    assert_eq!(want.message_mraed, 1, "MSG_REP is 1 (Table 107)");
    assert_eq!(Mra::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Mra::encode");
    check(AttrId::Mra, [0x00, 0x11], &bytes, &CmMessage::Mra(want));
}

// ---------------------------------------------------------------------------------------------
// REJ, Table 108.

#[rustfmt::skip]
const REJ_ROWS: Rows = &[
    (0, &[0x31, 0x32, 0x33, 0x34]), // Local Communication ID
    (4, &[0x35, 0x36, 0x37, 0x38]), // Remote Communication ID
    (8, &[0b10_000000]),            // Message Rejected 2 (OTHER) | reserved
    (9, &[0b0101101_0]),            // Reject Info Length 45 | reserved
    (10, &[0x3A, 0x3B]),            // Reason
];
const REJ_ARI_AREA: Area = Area::new(12, 72, 0x33);
const REJ_DATA: Area = Area::new(84, 148, 0x44);

#[test]
fn golden_rej_table_108() {
    let bytes = build(AttrId::Rej, REJ_ROWS, &[REJ_ARI_AREA, REJ_DATA]);
    let want = Rej {
        local_comm_id: 0x3132_3334,
        remote_comm_id: 0x3536_3738,
        message_rejected: MSG_OTHER,
        ari_length: 45,
        reason: 0x3A3B,
        ari: pattern(REJ_ARI_AREA.salt),
        private_data: pd(REJ_DATA.salt),
    };
    assert_eq!(
        (MSG_REQ, MSG_REP, MSG_OTHER),
        (0, 1, 2),
        "Table 107/108 message codes"
    );
    assert_eq!(Rej::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Rej::encode");
    check(AttrId::Rej, [0x00, 0x12], &bytes, &CmMessage::Rej(want));
}

// ---------------------------------------------------------------------------------------------
// REP, Table 110. The 24-bit vendor ID is split over bytes 15, 19 and 23.

#[rustfmt::skip]
const REP_ROWS: Rows = &[
    (0, &[0x41, 0x42, 0x43, 0x44]), // Local Communication ID
    (4, &[0x45, 0x46, 0x47, 0x48]), // Remote Communication ID
    (8, &[0x49, 0x4A, 0x4B, 0x4C]), // Local Q_Key
    (12, &[0x4D, 0x4E, 0x4F]),      // Local QPN
    (15, &[0xE7]),                  // Vendor ID [23:16]
    (16, &[0x51, 0x52, 0x53]),      // Local EE Context Number
    (19, &[0xE8]),                  // Vendor ID [15:8]
    (20, &[0x54, 0x55, 0x56]),      // Starting PSN
    (23, &[0xE9]),                  // Vendor ID [7:0]
    (24, &[0x57]),                  // Responder Resources
    (25, &[0x58]),                  // Initiator Depth
    (26, &[0b01001_01_1]),          // Target ACK Delay 9 | Failover Accepted 1 | E2E Flow Control 1
    (27, &[0b101_1_0000]),          // RNR Retry Count 5 | SRQ 1 | reserved
    // Local CA GUID
    (28, &[0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68]),
];
const REP_DATA: Area = Area::new(36, 196, 0x55);

#[test]
fn golden_rep_table_110() {
    let bytes = build(AttrId::Rep, REP_ROWS, &[REP_DATA]);
    let want = Rep {
        local_comm_id: 0x4142_4344,
        remote_comm_id: 0x4546_4748,
        local_qkey: 0x494A_4B4C,
        local_qpn: 0x4D_4E4F,
        vendor_id: 0xE7_E8E9,
        local_eecn: 0x51_5253,
        starting_psn: 0x54_5556,
        responder_resources: 0x57,
        initiator_depth: 0x58,
        target_ack_delay: 9,
        failover_accepted: 1,
        end_to_end_flow_control: true,
        rnr_retry_count: 5,
        srq: true,
        local_ca_guid: 0x6162_6364_6566_6768,
        private_data: pd(REP_DATA.salt),
    };
    assert_eq!(Rep::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Rep::encode");
    check(AttrId::Rep, [0x00, 0x13], &bytes, &CmMessage::Rep(want));
}

// ---------------------------------------------------------------------------------------------
// RTU, Table 111, and DREP, Table 113.

#[rustfmt::skip]
const RTU_ROWS: Rows = &[
    (0, &[0x71, 0x72, 0x73, 0x74]), // Local Communication ID
    (4, &[0x75, 0x76, 0x77, 0x78]), // Remote Communication ID
];
const RTU_DATA: Area = Area::new(8, 224, 0x66);

#[test]
fn golden_rtu_table_111() {
    let bytes = build(AttrId::Rtu, RTU_ROWS, &[RTU_DATA]);
    let want = Rtu {
        local_comm_id: 0x7172_7374,
        remote_comm_id: 0x7576_7778,
        private_data: pd(RTU_DATA.salt),
    };
    assert_eq!(Rtu::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Rtu::encode");
    check(AttrId::Rtu, [0x00, 0x14], &bytes, &CmMessage::Rtu(want));
}

#[rustfmt::skip]
const DREP_ROWS: Rows = &[
    (0, &[0x91, 0x92, 0x93, 0x94]), // Local Communication ID
    (4, &[0x95, 0x96, 0x97, 0x98]), // Remote Communication ID
];
const DREP_DATA: Area = Area::new(8, 224, 0x77);

#[test]
fn golden_drep_table_113() {
    let bytes = build(AttrId::Drep, DREP_ROWS, &[DREP_DATA]);
    let want = Drep {
        local_comm_id: 0x9192_9394,
        remote_comm_id: 0x9596_9798,
        private_data: pd(DREP_DATA.salt),
    };
    assert_eq!(Drep::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Drep::encode");
    check(AttrId::Drep, [0x00, 0x16], &bytes, &CmMessage::Drep(want));
}

// ---------------------------------------------------------------------------------------------
// DREQ, Table 112.

#[rustfmt::skip]
const DREQ_ROWS: Rows = &[
    (0, &[0x81, 0x82, 0x83, 0x84]), // Local Communication ID
    (4, &[0x85, 0x86, 0x87, 0x88]), // Remote Communication ID
    (8, &[0x89, 0x8A, 0x8B]),       // Remote QPN/EECN (24 bits), then reserved
];
const DREQ_DATA: Area = Area::new(12, 220, 0x88);

#[test]
fn golden_dreq_table_112() {
    let bytes = build(AttrId::Dreq, DREQ_ROWS, &[DREQ_DATA]);
    let want = Dreq {
        local_comm_id: 0x8182_8384,
        remote_comm_id: 0x8586_8788,
        remote_qpn_eecn: 0x89_8A8B,
        private_data: pd(DREQ_DATA.salt),
    };
    assert_eq!(Dreq::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Dreq::encode");
    check(AttrId::Dreq, [0x00, 0x15], &bytes, &CmMessage::Dreq(want));
}

// ---------------------------------------------------------------------------------------------
// LAP, Table 114. Its path orders traffic class, hop limit and packet rate unlike REQ's.

/// Alternate Local Port GID.
const LAP_ALT_LOCAL_GID: [u8; 16] = [
    0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF,
];
/// Alternate Remote Port GID.
const LAP_ALT_REMOTE_GID: [u8; 16] = [
    0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0xCF,
];

#[rustfmt::skip]
const LAP_ROWS: Rows = &[
    (0, &[0x13, 0x14, 0x15, 0x16]), // Local Communication ID
    (4, &[0x17, 0x18, 0x19, 0x1A]), // Remote Communication ID
    (12, &[0x1B, 0x1C, 0x1D]),      // Remote QPN/EECN
    (15, &[0b10001_000]),           // Remote CM Response Timeout 17 | reserved
    (20, &[0x21, 0x22]),            // Alternate Local Port LID
    (22, &[0x23, 0x24]),            // Alternate Remote Port LID
    (24, &LAP_ALT_LOCAL_GID),       // Alternate Local Port GID
    (40, &LAP_ALT_REMOTE_GID),      // Alternate Remote Port GID
    (56, &[0x3C, 0x3D, 0x30]),      // Alternate Flow Label 0x3C3D3, then 4 reserved bits
    (59, &[0x3E]),                  // Alternate Traffic Class
    (60, &[0x3F]),                  // Alternate Hop Limit
    (61, &[0b00_101011]),           // reserved | Alternate Packet Rate 43
    (62, &[0b1110_1_000]),          // Alternate SL 14 | Alternate Subnet Local 1 | reserved
    (63, &[0b01111_000]),           // Alternate Local ACK Timeout 15 | reserved
];
const LAP_DATA: Area = Area::new(64, 168, 0x99);

#[test]
fn golden_lap_table_114() {
    let bytes = build(AttrId::Lap, LAP_ROWS, &[LAP_DATA]);
    let want = Lap {
        local_comm_id: 0x1314_1516,
        remote_comm_id: 0x1718_191A,
        remote_qpn_eecn: 0x1B_1C1D,
        remote_cm_response_timeout: 17,
        alternate: Path {
            local_lid: 0x2122,
            remote_lid: 0x2324,
            local_gid: LAP_ALT_LOCAL_GID,
            remote_gid: LAP_ALT_REMOTE_GID,
            flow_label: 0x3C3D3,
            packet_rate: 43,
            traffic_class: 0x3E,
            hop_limit: 0x3F,
            sl: 14,
            subnet_local: true,
            local_ack_timeout: 15,
        },
        private_data: pd(LAP_DATA.salt),
    };
    assert_eq!(Lap::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Lap::encode");
    check(AttrId::Lap, [0x00, 0x19], &bytes, &CmMessage::Lap(want));
}

// ---------------------------------------------------------------------------------------------
// APR, Table 115.

#[rustfmt::skip]
const APR_ROWS: Rows = &[
    (0, &[0x5A, 0x5B, 0x5C, 0x5D]), // Local Communication ID
    (4, &[0x5E, 0x5F, 0x60, 0x61]), // Remote Communication ID
    (8, &[0x33]),                   // Additional Information Length 51
    (9, &[0x5D]),                   // AP Status
];
const APR_INFO_AREA: Area = Area::new(12, 72, 0xAA);
const APR_DATA: Area = Area::new(84, 148, 0xBB);

#[test]
fn golden_apr_table_115() {
    let bytes = build(AttrId::Apr, APR_ROWS, &[APR_INFO_AREA, APR_DATA]);
    let want = Apr {
        local_comm_id: 0x5A5B_5C5D,
        remote_comm_id: 0x5E5F_6061,
        info_length: 51,
        ap_status: 0x5D,
        info: pattern(APR_INFO_AREA.salt),
        private_data: pd(APR_DATA.salt),
    };
    assert_eq!(Apr::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "Apr::encode");
    check(AttrId::Apr, [0x00, 0x1A], &bytes, &CmMessage::Apr(want));
}

// ---------------------------------------------------------------------------------------------
// SIDR_REQ, Table 119.

#[rustfmt::skip]
const SIDR_REQ_ROWS: Rows = &[
    (0, &[0xC1, 0xC2, 0xC3, 0xC4]), // Request ID
    (4, &[0xC5, 0xC6]),             // Partition Key
    // Service ID
    (8, &[0xC7, 0xC8, 0xC9, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE]),
];
const SIDR_REQ_DATA: Area = Area::new(16, 216, 0xCC);

#[test]
fn golden_sidr_req_table_119() {
    let bytes = build(AttrId::SidrReq, SIDR_REQ_ROWS, &[SIDR_REQ_DATA]);
    let want = SidrReq {
        request_id: 0xC1C2_C3C4,
        pkey: 0xC5C6,
        service_id: 0xC7C8_C9CA_CBCC_CDCE,
        private_data: pd(SIDR_REQ_DATA.salt),
    };
    assert_eq!(SidrReq::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "SidrReq::encode");
    check(
        AttrId::SidrReq,
        [0x00, 0x17],
        &bytes,
        &CmMessage::SidrReq(want),
    );
}

// ---------------------------------------------------------------------------------------------
// SIDR_REP, Table 120. The vendor ID's high part is a 16-bit field at 6 (Linux only ever
// puts `(vendor_id >> 8) & 0xFF` in it, spec quirk 3); a peer may fill both bytes, so the
// golden value does.

#[rustfmt::skip]
const SIDR_REP_ROWS: Rows = &[
    (0, &[0xD1, 0xD2, 0xD3, 0xD4]),  // Request ID
    (4, &[0x04]),                    // Status
    (5, &[0x2F]),                    // Additional Information Length 47
    (6, &[0xD6, 0xD7]),              // Vendor ID (high, 16 bits)
    (8, &[0xD8, 0xD9, 0xDA]),        // QPN
    (11, &[0xDB]),                   // Vendor ID (low)
    // Service ID
    (12, &[0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8]),
    (20, &[0xE9, 0xEA, 0xEB, 0xEC]), // Q_Key
];
const SIDR_REP_INFO_AREA: Area = Area::new(24, 72, 0xDD);
const SIDR_REP_DATA: Area = Area::new(96, 136, 0xEE);

#[test]
fn golden_sidr_rep_table_120() {
    let bytes = build(
        AttrId::SidrRep,
        SIDR_REP_ROWS,
        &[SIDR_REP_INFO_AREA, SIDR_REP_DATA],
    );
    let want = SidrRep {
        request_id: 0xD1D2_D3D4,
        status: 0x04,
        info_length: 47,
        vendor_id_h: 0xD6D7,
        qpn: 0xD8_D9DA,
        vendor_id_l: 0xDB,
        service_id: 0xE1E2_E3E4_E5E6_E7E8,
        qkey: 0xE9EA_EBEC,
        info: pattern(SIDR_REP_INFO_AREA.salt),
        private_data: pd(SIDR_REP_DATA.salt),
    };
    assert_eq!(SidrRep::decode(&bytes), want);
    let mut out = [0u8; PAYLOAD_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &bytes, "SidrRep::encode");
    check(
        AttrId::SidrRep,
        [0x00, 0x18],
        &bytes,
        &CmMessage::SidrRep(want),
    );
}

// ---------------------------------------------------------------------------------------------
// The MAD header, the attribute IDs, and the codec's defined bits against the tables.

/// The MAD common header (IBTA 13.4.3) with a distinct non-zero value in every field.
#[test]
fn golden_mad_header_every_field() {
    let mut mad = [0u8; MAD_LEN];
    mad[..MAD_HDR_LEN].copy_from_slice(&[
        0x01, 0x07, 0x02, 0x03, // base version, class, class version, method
        0x81, 0x82, // status
        0x83, 0x84, // class specific
        0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8B, 0x8C, // TID
        0x00, 0x13, // attribute ID
        0x8D, 0x8E, // reserved
        0x8F, 0x90, 0x91, 0x92, // attribute modifier
    ]);
    let want = MadHeader {
        base_version: 1,
        mgmt_class: 7,
        class_version: 2,
        method: 3,
        status: 0x8182,
        class_specific: 0x8384,
        tid: 0x8586_8788_898A_8B8C,
        attr_id: 0x0013,
        resv: 0x8D8E,
        attr_mod: 0x8F90_9192,
    };
    assert_eq!(MadHeader::decode(&mad).unwrap(), want);
    let mut out = [0u8; MAD_HDR_LEN];
    want.encode(&mut out);
    assert_bytes(&out, &mad[..MAD_HDR_LEN], "MadHeader::encode");
    // A CM header from `MadHeader::cm`, as `cm_format_mad_hdr()` builds it.
    let mut out = [0u8; MAD_HDR_LEN];
    MadHeader::cm(AttrId::Lap, GOLDEN_TID, GOLDEN_ATTR_MOD).encode(&mut out);
    assert_bytes(&out, &golden_header([0x00, 0x19]), "MadHeader::cm");
}

/// The attribute IDs of `ib_cm.h` (CM_REQ_ATTR_ID ... CM_APR_ATTR_ID), written out.
#[test]
fn golden_attribute_ids() {
    let table = [
        (0x0010, AttrId::Req),
        (0x0011, AttrId::Mra),
        (0x0012, AttrId::Rej),
        (0x0013, AttrId::Rep),
        (0x0014, AttrId::Rtu),
        (0x0015, AttrId::Dreq),
        (0x0016, AttrId::Drep),
        (0x0017, AttrId::SidrReq),
        (0x0018, AttrId::SidrRep),
        (0x0019, AttrId::Lap),
        (0x001A, AttrId::Apr),
    ];
    for (i, (wire, attr)) in table.into_iter().enumerate() {
        assert_eq!(attr.wire(), wire, "{attr:?}");
        assert_eq!(AttrId::from_wire(wire), Some(attr), "{wire:#x}");
        assert_eq!(attr.counter_index(), i, "{attr:?}");
    }
    for wire in [0x0000, 0x000F, 0x001B, 0x0110, 0x1000, 0xFFFF] {
        assert_eq!(AttrId::from_wire(wire), None, "{wire:#x}");
    }
}

/// Every bit the tables define survives decode+encode and every reserved bit goes out as 0:
/// an all-ones payload (clamped lengths at their maximum of 72) comes back as exactly the
/// hand-written defined mask. Catches a field the codec reads too narrow or not at all, and
/// a reserved bit it leaks, which the golden vectors above (one value per field) might not.
#[test]
fn codec_defines_exactly_the_table_bits() {
    for attr in AttrId::ALL {
        let mut ones = [0xFFu8; PAYLOAD_LEN];
        // Length fields decode clamps to 72: set them to 72 so the clamp keeps every bit.
        let clamped: &[(usize, u8)] = match attr {
            AttrId::Rej => &[(9, (72 << 1) | 1)],
            AttrId::Apr => &[(8, 72)],
            AttrId::SidrRep => &[(5, 72)],
            _ => &[],
        };
        for &(at, v) in clamped {
            ones[at] = v;
        }
        let mut want = defined_mask(attr);
        for &(at, v) in clamped {
            want[at] &= v;
        }
        let mut out = [0u8; PAYLOAD_LEN];
        CmMessage::decode(attr, &ones).unwrap().encode(&mut out);
        assert_bytes(&out, &want, &format!("{attr:?}: defined bits"));
    }
}

/// Each clamped length field, golden: one past the buffer reads as the buffer size.
#[test]
fn golden_length_clamps() {
    let mut p = [0u8; PAYLOAD_LEN];
    p[9] = (73 << 1) | 1; // REJ Reject Info Length 73, reserved bit set
    assert_eq!(Rej::decode(&p).ari_length, 72);
    p[9] = 72 << 1;
    assert_eq!(Rej::decode(&p).ari_length, 72);
    p[9] = 71 << 1;
    assert_eq!(Rej::decode(&p).ari_length, 71);
    let mut p = [0u8; PAYLOAD_LEN];
    p[8] = 73; // APR Additional Information Length
    assert_eq!(Apr::decode(&p).info_length, 72);
    p[8] = 0xFF;
    assert_eq!(Apr::decode(&p).info_length, 72);
    let mut p = [0u8; PAYLOAD_LEN];
    p[5] = 73; // SIDR_REP Additional Information Length
    assert_eq!(SidrRep::decode(&p).info_length, 72);
    p[5] = 71;
    assert_eq!(SidrRep::decode(&p).info_length, 71);
}
