// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! SIDR_REQ (IBTA Table 119) and SIDR_REP (Table 120). Offsets are payload offsets.

use super::field::{self, narrow, Bytes};

/// Private data of a SIDR_REQ.
pub(crate) const SIDR_REQ_PRIVATE_DATA: usize = 216;
/// Private data of a SIDR_REP.
pub(crate) const SIDR_REP_PRIVATE_DATA: usize = 136;
/// Additional information of a SIDR_REP.
pub(crate) const SIDR_REP_INFO: usize = 72;
/// The same, as the type of the length field.
const SIDR_REP_INFO_MAX: u8 = 72;

/// SIDR_REQ.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SidrReq<'a> {
    /// 0, 32 bits.
    pub(crate) request_id: u32,
    /// 4, 16 bits.
    pub(crate) pkey: u16,
    /// 8, 64 bits.
    pub(crate) service_id: u64,
    /// 16, 216 bytes.
    pub(crate) private_data: Bytes<'a, SIDR_REQ_PRIVATE_DATA>,
}

impl<'a> SidrReq<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            request_id: field::u32_at(p, 0),
            pkey: field::u16_at(p, 4),
            service_id: field::u64_at(p, 8),
            private_data: Bytes::at(p, 16),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.request_id.to_be_bytes());
        field::put(p, 4, &self.pkey.to_be_bytes());
        field::put(p, 8, &self.service_id.to_be_bytes());
        self.private_data.put(p, 16);
    }
}

/// SIDR_REP.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SidrRep<'a> {
    /// 0, 32 bits.
    pub(crate) request_id: u32,
    /// 4, 8 bits (`enum ib_cm_sidr_status`).
    pub(crate) status: u8,
    /// 5, 8 bits, clamped to 72 on decode. Linux never sets it (cm.c quirk 3).
    pub(crate) info_length: u8,
    /// 6, 16 bits: the vendor ID's upper part. Linux writes `(vendor_id >> 8) & 0xFF` here.
    pub(crate) vendor_id_h: u16,
    /// 8, 24 bits.
    pub(crate) qpn: u32,
    /// 11, 8 bits.
    pub(crate) vendor_id_l: u8,
    /// 12, 64 bits.
    pub(crate) service_id: u64,
    /// 20, 32 bits.
    pub(crate) qkey: u32,
    /// 24, 72 bytes.
    pub(crate) info: [u8; SIDR_REP_INFO],
    /// 96, 136 bytes.
    pub(crate) private_data: Bytes<'a, SIDR_REP_PRIVATE_DATA>,
}

impl<'a> SidrRep<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            request_id: field::u32_at(p, 0),
            status: field::u8_at(p, 4),
            // The info buffer is 72 bytes whatever the peer claims (spec 7, quirk 8).
            info_length: field::u8_at(p, 5).min(SIDR_REP_INFO_MAX),
            vendor_id_h: field::u16_at(p, 6),
            qpn: narrow(field::get(p, 8, 0, 24)),
            vendor_id_l: field::u8_at(p, 11),
            service_id: field::u64_at(p, 12),
            qkey: field::u32_at(p, 20),
            info: field::array(p, 24),
            private_data: Bytes::at(p, 96),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.request_id.to_be_bytes());
        field::put(p, 4, &[self.status, self.info_length]);
        field::put(p, 6, &self.vendor_id_h.to_be_bytes());
        field::set(p, 8, 0, 24, u64::from(self.qpn));
        field::put(p, 11, &[self.vendor_id_l]);
        field::put(p, 12, &self.service_id.to_be_bytes());
        field::put(p, 20, &self.qkey.to_be_bytes());
        field::put(p, 24, &self.info);
        self.private_data.put(p, 96);
    }
}
