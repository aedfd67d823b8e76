// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Host tests of the CM wire codecs: spot checks of single fields and of decode_mad's header
//! checks, round-trip properties over random payloads, and the bounded fuzz driver that
//! `make check` runs (`make fuzz` runs it long, with `IBCM_FUZZ_ITERS`). The full golden
//! vectors of the 11 messages, and the hand-written reserved-bit masks the round trip checks
//! against, are in `golden.rs`.

use crate::golden::defined_mask;
use crate::logic::req_event::{
    datapath_dlid, qp_type, req_params, req_paths,
    test_ports::{IB, OPA, ROCE},
};
use crate::logic::wire::{
    check_header, conn::*, decode_mad, encode_mad, encode_zeroed_mad, lap::*,
    payload as payload_of, sidr::*, AttrId, CmMessage, MadHeader, RecvHdr, WireError, MAD_HDR_LEN,
    MAD_LEN, PAYLOAD_LEN,
};
use crate::properties::Rng;

fn payload() -> [u8; PAYLOAD_LEN] {
    [0u8; PAYLOAD_LEN]
}

fn mad_with(attr: u16, p: &[u8; PAYLOAD_LEN]) -> [u8; MAD_LEN] {
    let mut m = [0u8; MAD_LEN];
    m[0] = 1; // base version
    m[1] = 0x07; // class CM
    m[2] = 2; // class version
    m[3] = 0x03; // Send
    m[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m[20..24].copy_from_slice(&0xCAFE_F00Du32.to_be_bytes());
    m[MAD_HDR_LEN..].copy_from_slice(p);
    m
}

#[test]
fn golden_mad_header() {
    let m = mad_with(0x0010, &payload());
    let h = MadHeader::decode(&m).unwrap();
    assert_eq!(
        h,
        MadHeader {
            base_version: 1,
            mgmt_class: 7,
            class_version: 2,
            method: 3,
            status: 0,
            class_specific: 0,
            tid: 0x1122_3344_5566_7788,
            attr_id: 0x10,
            resv: 0,
            attr_mod: 0xCAFE_F00D
        }
    );
    let mut out = [0u8; MAD_HDR_LEN];
    h.encode(&mut out);
    assert_eq!(out[..], m[..MAD_HDR_LEN]);
}

/// REQ, Table 106: each field at its byte, with distinct values.
#[test]
fn golden_req() {
    let mut p = payload();
    p[0..4].copy_from_slice(&[0xDE, 0xAD, 0xBE, 0xEF]); // local comm id
    p[5..8].copy_from_slice(&[0x12, 0x34, 0x56]); // vendor id (24 bits at 5)
    p[8..16].copy_from_slice(&0x0000_0000_0106_1C06u64.to_be_bytes()); // service id
    p[16..24].copy_from_slice(&0x0002_C903_0000_0001u64.to_be_bytes()); // local CA GUID
    p[28..32].copy_from_slice(&0x8001_0000u32.to_be_bytes()); // local Q_Key
    p[32..35].copy_from_slice(&[0x00, 0x00, 0x11]); // local QPN 0x11
    p[35] = 0x04; // responder resources
    p[36..39].copy_from_slice(&[0x0A, 0x0B, 0x0C]); // local EECN
    p[39] = 0x05; // initiator depth
    p[40..43].copy_from_slice(&[0x0D, 0x0E, 0x0F]); // remote EECN
    p[43] = (20 << 3) | (0b01 << 1) | 1; // remote CM timeout 20, transport 1 (UC), flow ctl
    p[44..47].copy_from_slice(&[0xAB, 0xCD, 0xEF]); // starting PSN
    p[47] = (18 << 3) | 7; // local CM timeout 18, retry count 7
    p[48..50].copy_from_slice(&0xFFFFu16.to_be_bytes()); // P_Key
    p[50] = (5 << 4) | (1 << 3) | 6; // MTU 5 (4096), RDC exists, RNR retry 6
    p[51] = (15 << 4) | (1 << 3) | 1; // max CM retries 15, SRQ, ext transport 1
    p[52..54].copy_from_slice(&0x0001u16.to_be_bytes()); // primary local LID
    p[54..56].copy_from_slice(&0x0002u16.to_be_bytes()); // primary remote LID
    p[56..72].copy_from_slice(&[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    p[72..88].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 2]);
    p[88..91].copy_from_slice(&[0x12, 0x34, 0x50]); // flow label 0x12345 (20 bits)
    p[91] = 0x3F; // packet rate 63 (6 low bits)
    p[92] = 0x88; // traffic class
    p[93] = 0x40; // hop limit
    p[94] = (9 << 4) | (1 << 3); // SL 9, subnet local
    p[95] = 17 << 3; // local ACK timeout 17
    p[96..98].copy_from_slice(&0x0003u16.to_be_bytes()); // alt local LID
    p[139] = (14 << 3) | (1 << 2); // alt ACK timeout 14, SAP supported
    for (i, b) in p[140..232].iter_mut().enumerate() {
        *b = i as u8 ^ 0x5A;
    }
    let m = Req::decode(&p);
    assert_eq!(m.local_comm_id, 0xDEAD_BEEF);
    assert_eq!(m.vendor_id, 0x12_3456);
    assert_eq!(m.service_id, 0x0106_1C06);
    assert_eq!(m.local_ca_guid, 0x0002_C903_0000_0001);
    assert_eq!(m.local_qkey, 0x8001_0000);
    assert_eq!(m.local_qpn, 0x11);
    assert_eq!(m.responder_resources, 4);
    assert_eq!(m.local_eecn, 0x0A0B0C);
    assert_eq!(m.initiator_depth, 5);
    assert_eq!(m.remote_eecn, 0x0D0E0F);
    assert_eq!(m.remote_cm_response_timeout, 20);
    assert_eq!(m.transport_service_type, 1);
    assert!(m.end_to_end_flow_control);
    assert_eq!(m.starting_psn, 0xABCDEF);
    assert_eq!(m.local_cm_response_timeout, 18);
    assert_eq!(m.retry_count, 7);
    assert_eq!(m.pkey, 0xFFFF);
    assert_eq!(m.path_mtu, 5);
    assert!(m.rdc_exists);
    assert_eq!(m.rnr_retry_count, 6);
    assert_eq!(m.max_cm_retries, 15);
    assert!(m.srq);
    assert_eq!(m.extended_transport_type, 1);
    assert_eq!(m.primary.local_lid, 1);
    assert_eq!(m.primary.remote_lid, 2);
    assert_eq!(m.primary.local_gid[..2], [0xFE, 0x80]);
    assert_eq!(m.primary.remote_gid[10..], [0xFF, 0xFF, 10, 0, 0, 2]);
    assert_eq!(m.primary.flow_label, 0x12345);
    assert_eq!(m.primary.packet_rate, 63);
    assert_eq!(m.primary.traffic_class, 0x88);
    assert_eq!(m.primary.hop_limit, 0x40);
    assert_eq!(m.primary.sl, 9);
    assert!(m.primary.subnet_local);
    assert_eq!(m.primary.local_ack_timeout, 17);
    assert_eq!(m.alternate.local_lid, 3);
    assert!(m.has_alt_path());
    assert_eq!(m.alternate.local_ack_timeout, 14);
    assert!(m.sap_supported);
    assert_eq!(m.private_data[0], 0x5A);
    assert_eq!(m.private_data[91], 91 ^ 0x5A);
    let mut out = payload();
    m.encode(&mut out);
    assert_eq!(out, p, "REQ encode must reproduce the golden bytes");
}

#[test]
fn golden_rej_and_ari_clamp() {
    let mut p = payload();
    p[0..4].copy_from_slice(&0u32.to_be_bytes());
    p[4..8].copy_from_slice(&0x0102_0304u32.to_be_bytes());
    p[8] = 0 << 6; // message rejected: REQ
    p[9] = 16 << 1; // ARI length 16 (7 bits)
    p[10..12].copy_from_slice(&8u16.to_be_bytes()); // reason 8: invalid service ID
    p[12] = 0xAA;
    p[84] = 0xBB;
    p[231] = 0xCC;
    let m = Rej::decode(&p);
    assert_eq!((m.local_comm_id, m.remote_comm_id), (0, 0x0102_0304));
    assert_eq!(m.message_rejected, MSG_REQ);
    assert_eq!(m.ari_length, 16);
    assert_eq!(m.reason, 8);
    assert_eq!(
        (m.ari[0], m.private_data[0], m.private_data[147]),
        (0xAA, 0xBB, 0xCC)
    );
    let mut out = payload();
    m.encode(&mut out);
    assert_eq!(out, p);
    // A peer claiming 127 bytes of ARI gets the 72 the field holds.
    p[9] = 127 << 1;
    assert_eq!(Rej::decode(&p).ari_length, 72);
}

#[test]
fn golden_mra_rtu_dreq_drep() {
    let mut p = payload();
    p[0..4].copy_from_slice(&1u32.to_be_bytes());
    p[4..8].copy_from_slice(&2u32.to_be_bytes());
    p[8] = (MSG_REP) << 6;
    p[9] = 24 << 3;
    p[10] = 0x77;
    let m = Mra::decode(&p);
    assert_eq!(
        (
            m.local_comm_id,
            m.remote_comm_id,
            m.message_mraed,
            m.service_timeout
        ),
        (1, 2, 1, 24)
    );
    assert_eq!(m.private_data[0], 0x77);
    let mut out = payload();
    m.encode(&mut out);
    assert_eq!(out, p);

    let mut p = payload();
    p[0..8].copy_from_slice(&[0, 0, 0, 9, 0, 0, 0, 10]);
    p[8] = 0x42;
    let r = Rtu::decode(&p);
    assert_eq!(
        (r.local_comm_id, r.remote_comm_id, r.private_data[0]),
        (9, 10, 0x42)
    );
    let d = Drep::decode(&p);
    assert_eq!(
        (d.local_comm_id, d.remote_comm_id, d.private_data[0]),
        (9, 10, 0x42)
    );

    let mut p = payload();
    p[0..8].copy_from_slice(&[0, 0, 0, 9, 0, 0, 0, 10]);
    p[8..11].copy_from_slice(&[0x00, 0x12, 0x34]);
    p[12] = 0x99;
    let q = Dreq::decode(&p);
    assert_eq!((q.remote_qpn_eecn, q.private_data[0]), (0x1234, 0x99));
    let mut out = payload();
    q.encode(&mut out);
    assert_eq!(out, p);
}

#[test]
fn golden_rep_vendor_id_is_split() {
    let mut p = payload();
    p[12..15].copy_from_slice(&[0x00, 0x00, 0x22]); // QPN
    p[15] = 0xAB; // vendor 23:16
    p[16..19].copy_from_slice(&[0, 0, 0x33]); // EECN
    p[19] = 0xCD; // vendor 15:8
    p[20..23].copy_from_slice(&[0x01, 0x02, 0x03]); // PSN
    p[23] = 0xEF; // vendor 7:0
    p[24] = 3;
    p[25] = 4;
    p[26] = (15 << 3) | (0b10 << 1) | 1; // target ACK delay 15, failover 2, flow control
    p[27] = (7 << 5) | (1 << 4); // RNR retry 7, SRQ
    p[28..36].copy_from_slice(&0xAABB_CCDD_EEFF_0011u64.to_be_bytes());
    let m = Rep::decode(&p);
    assert_eq!(m.vendor_id, 0xAB_CDEF);
    assert_eq!(
        (m.local_qpn, m.local_eecn, m.starting_psn),
        (0x22, 0x33, 0x010203)
    );
    assert_eq!((m.responder_resources, m.initiator_depth), (3, 4));
    assert_eq!(
        (
            m.target_ack_delay,
            m.failover_accepted,
            m.end_to_end_flow_control
        ),
        (15, 2, true)
    );
    assert_eq!((m.rnr_retry_count, m.srq), (7, true));
    assert_eq!(m.local_ca_guid, 0xAABB_CCDD_EEFF_0011);
    let mut out = payload();
    m.encode(&mut out);
    assert_eq!(out, p);
}

#[test]
fn golden_sidr() {
    let mut p = payload();
    p[0..4].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    p[4..6].copy_from_slice(&0xFFFFu16.to_be_bytes());
    p[8..16].copy_from_slice(&0x0000_0000_0111_0001u64.to_be_bytes());
    p[16] = 0x01;
    let q = SidrReq::decode(&p);
    assert_eq!(
        (q.request_id, q.pkey, q.service_id, q.private_data[0]),
        (0x1234_5678, 0xFFFF, 0x0111_0001, 1)
    );
    let mut out = payload();
    q.encode(&mut out);
    assert_eq!(out, p);

    let mut p = payload();
    p[0..4].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    p[4] = 1; // UNSUPPORTED
    p[5] = 200; // info length, clamped
    p[6..8].copy_from_slice(&0x00ABu16.to_be_bytes());
    p[8..11].copy_from_slice(&[0, 0, 0x42]);
    p[11] = 0xCD;
    p[12..20].copy_from_slice(&0x0111_0001u64.to_be_bytes());
    p[20..24].copy_from_slice(&0x1111_2222u32.to_be_bytes());
    p[24] = 0x5C;
    p[96] = 0x6D;
    let r = SidrRep::decode(&p);
    assert_eq!(
        (r.request_id, r.status, r.info_length),
        (0x1234_5678, 1, 72)
    );
    assert_eq!((r.vendor_id_h, r.qpn, r.vendor_id_l), (0xAB, 0x42, 0xCD));
    assert_eq!(
        (r.service_id, r.qkey, r.info[0], r.private_data[0]),
        (0x0111_0001, 0x1111_2222, 0x5C, 0x6D)
    );
}

#[test]
fn golden_lap_apr() {
    let mut p = payload();
    p[0..8].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]);
    p[12..15].copy_from_slice(&[0, 0, 0x77]);
    p[15] = 19 << 3;
    p[20..22].copy_from_slice(&5u16.to_be_bytes());
    p[56..59].copy_from_slice(&[0xFE, 0xDC, 0xB0]); // flow label 0xFEDCB
    p[59] = 0x10; // traffic class
    p[60] = 0x20; // hop limit
    p[61] = 0x15; // packet rate 21
    p[62] = (3 << 4) | (1 << 3); // SL 3, subnet local
    p[63] = 12 << 3; // ACK timeout
    p[64] = 0xEE;
    let l = Lap::decode(&p);
    assert_eq!(
        (l.remote_qpn_eecn, l.remote_cm_response_timeout),
        (0x77, 19)
    );
    assert_eq!(l.alternate.local_lid, 5);
    assert_eq!(l.alternate.flow_label, 0xFEDCB);
    assert_eq!(
        (
            l.alternate.traffic_class,
            l.alternate.hop_limit,
            l.alternate.packet_rate
        ),
        (0x10, 0x20, 21)
    );
    assert_eq!(
        (
            l.alternate.sl,
            l.alternate.subnet_local,
            l.alternate.local_ack_timeout
        ),
        (3, true, 12)
    );
    assert_eq!(l.private_data[0], 0xEE);
    let mut out = payload();
    l.encode(&mut out);
    assert_eq!(out, p);

    let mut p = payload();
    p[8] = 80; // info length, clamped to 72
    p[9] = 2;
    let a = Apr::decode(&p);
    assert_eq!((a.info_length, a.ap_status), (72, 2));
}

#[test]
fn decode_mad_checks_the_header() {
    let p = payload();
    assert!(matches!(
        decode_mad(&mad_with(0x10, &p)),
        Ok((_, CmMessage::Req(_)))
    ));
    assert_eq!(
        decode_mad(&mad_with(0x10, &p)[..255]).unwrap_err(),
        WireError::Truncated
    );
    assert_eq!(
        decode_mad(&mad_with(0x1B, &p)).unwrap_err(),
        WireError::UnknownAttribute
    );
    assert_eq!(
        decode_mad(&mad_with(0x0F, &p)).unwrap_err(),
        WireError::UnknownAttribute
    );
    let mut m = mad_with(0x10, &p);
    m[2] = 1;
    assert_eq!(decode_mad(&m).unwrap_err(), WireError::WrongClassVersion);
    let mut m = mad_with(0x10, &p);
    m[1] = 0x04;
    assert_eq!(decode_mad(&m).unwrap_err(), WireError::WrongClass);
    let mut m = mad_with(0x10, &p);
    m[3] = 0x01;
    assert_eq!(decode_mad(&m).unwrap_err(), WireError::WrongMethod);
    let mut m = mad_with(0x10, &p);
    m[0] = 2;
    assert_eq!(decode_mad(&m).unwrap_err(), WireError::WrongBaseVersion);
}

#[test]
fn every_truncation_of_every_message_is_refused() {
    let p = payload();
    for attr in 0x10..=0x1Au16 {
        let m = mad_with(attr, &p);
        for len in 0..MAD_LEN {
            assert_eq!(
                decode_mad(&m[..len]).unwrap_err(),
                WireError::Truncated,
                "attr {attr:#x} len {len}"
            );
        }
    }
}

#[test]
fn attr_ids_and_counter_names() {
    for (i, a) in AttrId::ALL.iter().enumerate() {
        assert_eq!(a.counter_index(), i);
        assert_eq!(AttrId::from_wire(a.wire()), Some(*a));
    }
}

/// Puts length fields that decode clamps into their valid range.
fn sanitize(attr: AttrId, p: &mut [u8; PAYLOAD_LEN]) {
    match attr {
        AttrId::Rej => p[9] = (p[9] & 0x01) | (((p[9] >> 1) % 73) << 1),
        AttrId::Apr => p[8] %= 73,
        AttrId::SidrRep => p[5] %= 73,
        _ => {}
    }
}

/// A payload of random bytes for `attr`, its must-be-valid fields made valid (`sanitize`).
fn random_payload(rng: &mut Rng, attr: AttrId) -> [u8; PAYLOAD_LEN] {
    let mut p = payload();
    for b in p.iter_mut() {
        *b = rng.next() as u8;
    }
    sanitize(attr, &mut p);
    p
}

#[test]
fn round_trip_random_payloads() {
    for seed in 1..60u64 {
        let mut rng = Rng::new(seed);
        for attr in AttrId::ALL {
            // The defined bits from the IBTA tables, written by hand (not derived from the
            // codec, which would let an offset that is wrong both ways pass).
            let mask = defined_mask(attr);
            for _ in 0..50 {
                let p = random_payload(&mut rng, attr);
                let m = CmMessage::decode(attr, &p).unwrap();
                assert_eq!(m.attr_id(), attr);
                let mut out = payload();
                m.encode(&mut out);
                // Every defined bit survives; reserved bits are sent as zero.
                for i in 0..PAYLOAD_LEN {
                    assert_eq!(out[i], p[i] & mask[i], "seed {seed} {attr:?} byte {i}");
                }
                assert_eq!(
                    CmMessage::decode(attr, &out).unwrap(),
                    m,
                    "seed {seed} {attr:?}"
                );
            }
        }
    }
}

#[test]
fn encoding_into_zeros_gives_the_same_bytes() {
    let mut rng = Rng::new(7);
    for attr in AttrId::ALL {
        for _ in 0..20 {
            let p = random_payload(&mut rng, attr);
            let msg = CmMessage::decode(attr, &p).unwrap();
            // A dirty buffer for the clearing encoder, zeros for the other.
            let mut cleared = [0xA5u8; MAD_LEN];
            encode_mad(&msg, 0x1234, 3, &mut cleared);
            let mut zeroed = [0u8; MAD_LEN];
            encode_zeroed_mad(&msg, 0x1234, 3, &mut zeroed);
            assert_eq!(cleared, zeroed, "{attr:?}");
        }
    }
}

#[test]
fn whole_mad_round_trip() {
    let mut rng = Rng::new(99);
    for attr in AttrId::ALL {
        let p = random_payload(&mut rng, attr);
        let msg = CmMessage::decode(attr, &p).unwrap();
        let mut mad = [0u8; MAD_LEN];
        encode_mad(&msg, 0xABCD, 7, &mut mad);
        let (h, back) = decode_mad(&mad).unwrap();
        assert_eq!((h.tid, h.attr_mod, h.attr_id), (0xABCD, 7, attr.wire()));
        assert_eq!(back, msg);
    }
}

/// The fuzz driver: arbitrary lengths and bytes, biased toward valid headers so the message
/// decoders are reached. Decoding must never panic and anything accepted must round-trip.
pub(crate) fn fuzz(iterations: u64, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut buf = vec![0u8; 320];
    for i in 0..iterations {
        let len = (rng.next() % 320) as usize;
        for b in buf.iter_mut() {
            *b = rng.next() as u8;
        }
        if rng.next() % 4 != 0 {
            buf[0] = 1;
            buf[1] = 7;
            buf[2] = if rng.next() % 8 == 0 { 1 } else { 2 };
            buf[3] = 3;
            buf[16] = 0;
            buf[17] = 0x0E + (rng.next() % 14) as u8;
        }
        match decode_mad(&buf[..len]) {
            Ok((hdr, msg)) => {
                assert!(len >= MAD_LEN, "iteration {i}: accepted {len} bytes");
                let mut out = [0u8; MAD_LEN];
                encode_mad(&msg, hdr.tid, hdr.attr_mod, &mut out);
                assert_eq!(
                    decode_mad(&out).unwrap().1,
                    msg,
                    "iteration {i} seed {seed}"
                );
            }
            Err(WireError::Truncated) => assert!(len < MAD_LEN, "iteration {i}"),
            Err(_) => {}
        }
    }
}

#[test]
fn fuzz_smoke() {
    let iterations = std::env::var("IBCM_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let seed = std::env::var("IBCM_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x1BC0);
    fuzz(iterations, seed);
}

/// The receive callback's one header check (`check_header`, then `RecvHdr` and `payload` where
/// the handlers read) against a reference written here from IBTA 13.4.3 (offsets and values by
/// hand, not from the codec): the same verdict, attribute, TID, attribute modifier and payload
/// on every MAD. Headers are random around valid ones (each checked byte valid half the time),
/// lengths around a whole MAD.
#[test]
fn header_checked_once_matches_the_ibta_header() {
    fn reference(b: &[u8]) -> Result<(u16, u64, u32, &[u8]), WireError> {
        if b.len() < 256 {
            return Err(WireError::Truncated);
        }
        let checks = [
            (b[0], 1, WireError::WrongBaseVersion),
            (b[1], 0x07, WireError::WrongClass),
            (b[2], 2, WireError::WrongClassVersion),
            (b[3], 0x03, WireError::WrongMethod),
        ];
        for (got, want, err) in checks {
            if got != want {
                return Err(err);
            }
        }
        let attr = u16::from_be_bytes([b[16], b[17]]);
        if !(0x0010..=0x001A).contains(&attr) {
            return Err(WireError::UnknownAttribute);
        }
        let tid = u64::from_be_bytes(b[8..16].try_into().unwrap());
        let attr_mod = u32::from_be_bytes(b[20..24].try_into().unwrap());
        Ok((attr, tid, attr_mod, &b[24..256]))
    }
    let mut rng = Rng::new(7);
    for _ in 0..20_000 {
        let mut m = [0u8; MAD_LEN];
        for b in m.iter_mut() {
            *b = rng.next() as u8;
        }
        for (i, v) in [1u8, 0x07, 2, 0x03].iter().enumerate() {
            if rng.next() % 2 == 0 {
                m[i] = *v;
            }
        }
        if rng.next() % 2 == 0 {
            m[16] = 0;
            m[17] = 0x10 + (rng.next() % 12) as u8;
        }
        let len = match rng.next() % 4 {
            0 => (rng.next() % MAD_LEN as u64) as usize,
            _ => MAD_LEN,
        };
        let buf = &m[..len];
        match (check_header(buf), reference(buf)) {
            (Ok(a), Ok((attr, tid, attr_mod, p))) => {
                assert_eq!(a.wire(), attr);
                assert_eq!(RecvHdr::of(buf).tid(), tid);
                assert_eq!(RecvHdr::of(buf).attr_mod(), attr_mod);
                assert_eq!(payload_of(buf), p);
            }
            (Err(e), Err(f)) => assert_eq!(e, f),
            (x, y) => panic!("check_header {x:?}, reference {:?}", y.map(|t| t.0)),
        }
    }
}

#[test]
fn views_read_what_the_decoders_read() {
    // `Rep::decode` reads through the REP view (the golden vectors check it); the comm-ID
    // and REQ views must agree with the RTU, DREP, DREQ and REQ decoders on random payloads.
    let mut rng = Rng::new(0x5eed_0fca_11);
    for _ in 0..2000 {
        let mut p = payload();
        for b in p.iter_mut() {
            *b = rng.next() as u8;
        }
        // Now and then OPA local GIDs (primary at 56, alternate at 100) and permissive LIDs
        // (primary local at 52, remote at 54), which random bytes almost never give.
        let pick = rng.next();
        if pick & 1 != 0 {
            p[64..67].copy_from_slice(&[0x00, 0x06, 0x6A]);
            p[108..111].copy_from_slice(&[0x00, 0x06, 0x6A]);
        }
        if pick & 2 != 0 {
            p[52..56].fill(0xFF);
        }
        let v = CommIdsView(&p);
        let d = Dreq::decode(&p);
        assert_eq!(
            (v.local_comm_id(), v.remote_comm_id(), v.dreq_remote_qpn()),
            (d.local_comm_id, d.remote_comm_id, d.remote_qpn_eecn)
        );
        let r = Drep::decode(&p);
        assert_eq!(
            (v.local_comm_id(), v.remote_comm_id()),
            (r.local_comm_id, r.remote_comm_id)
        );
        let q = ReqView(&p);
        let req = Req::decode(&p);
        // The REQ encoded again by the encoder (its own offsets), read in place.
        let mut again = payload();
        req.encode(&mut again);
        let v = ReqView(&again);
        let read = (
            (
                v.local_comm_id(),
                v.vendor_id(),
                v.service_id(),
                v.local_ca_guid(),
            ),
            (
                v.local_qkey(),
                v.local_qpn(),
                v.responder_resources(),
                v.local_eecn(),
            ),
            (
                v.initiator_depth(),
                v.remote_eecn(),
                v.remote_cm_response_timeout(),
            ),
            (
                v.transport_service_type(),
                v.end_to_end_flow_control(),
                v.starting_psn(),
            ),
            (
                v.local_cm_response_timeout(),
                v.retry_count(),
                v.pkey(),
                v.path_mtu(),
            ),
            (
                v.rdc_exists(),
                v.rnr_retry_count(),
                v.max_cm_retries(),
                v.srq(),
            ),
            (v.extended_transport_type(), v.sap_supported(), v.primary()),
        );
        let want = (
            (
                req.local_comm_id,
                req.vendor_id,
                req.service_id,
                req.local_ca_guid,
            ),
            (
                req.local_qkey,
                req.local_qpn,
                req.responder_resources,
                req.local_eecn,
            ),
            (
                req.initiator_depth,
                req.remote_eecn,
                req.remote_cm_response_timeout,
            ),
            (
                req.transport_service_type,
                req.end_to_end_flow_control,
                req.starting_psn,
            ),
            (
                req.local_cm_response_timeout,
                req.retry_count,
                req.pkey,
                req.path_mtu,
            ),
            (
                req.rdc_exists,
                req.rnr_retry_count,
                req.max_cm_retries,
                req.srq,
            ),
            (req.extended_transport_type, req.sap_supported, req.primary),
        );
        assert_eq!(read, want);
        // The alternate path only when the REQ carries one, as `Req::has_alt_path` says.
        let alt = req.has_alt_path().then_some(req.alternate);
        assert_eq!(q.alternate(), alt);
        assert_eq!(ReqFields::alternate(&req), alt);
        let mut no_alt = p;
        no_alt[96..98].fill(0);
        no_alt[108..111].fill(0);
        assert!(!Req::decode(&no_alt).has_alt_path());
        assert_eq!(ReqView(&no_alt).alternate(), None);
        // The passive side's logic reads the same from the view as from the decoded REQ.
        for port in [ROCE, IB, OPA] {
            assert_eq!(req_paths(&q, &port), req_paths(&req, &port));
            assert_eq!(datapath_dlid(&q, &port), datapath_dlid(&req, &port));
        }
        assert_eq!(req_params(&q, 7), req_params(&req, 7));
        assert_eq!(qp_type(&q), qp_type(&req));
    }
}
