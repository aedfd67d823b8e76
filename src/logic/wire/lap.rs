// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! LAP (IBTA Table 114) and APR (Table 115). Linux 6.12 never sends either; received ones are
//! decoded so they can be counted, and handled as cm.c does.

use super::conn::Path;
use super::field::{self, get, narrow, set, Bytes};

/// LAP private data.
pub(crate) const LAP_PRIVATE_DATA: usize = 168;
/// APR private data.
pub(crate) const APR_PRIVATE_DATA: usize = 148;
/// APR additional information.
pub(crate) const APR_INFO: usize = 72;
const APR_INFO_MAX: u8 = 72;

/// LAP.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Lap<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 12, 24 bits.
    pub(crate) remote_qpn_eecn: u32,
    /// 15, 5 bits.
    pub(crate) remote_cm_response_timeout: u8,
    /// 20..63: the alternate path.
    pub(crate) alternate: Path,
    /// 64, 168 bytes.
    pub(crate) private_data: Bytes<'a, LAP_PRIVATE_DATA>,
}

impl<'a> Lap<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            local_comm_id: field::u32_at(p, 0),
            remote_comm_id: field::u32_at(p, 4),
            remote_qpn_eecn: narrow(get(p, 12, 0, 24)),
            remote_cm_response_timeout: narrow(get(p, 15, 0, 5)),
            alternate: Path::decode_lap(p, 20),
            private_data: Bytes::at(p, 64),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        set(p, 12, 0, 24, u64::from(self.remote_qpn_eecn));
        set(p, 15, 0, 5, u64::from(self.remote_cm_response_timeout));
        self.alternate.encode_lap(p, 20);
        self.private_data.put(p, 64);
    }
}

/// APR.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Apr<'a> {
    /// 0.
    pub(crate) local_comm_id: u32,
    /// 4.
    pub(crate) remote_comm_id: u32,
    /// 8, 8 bits; clamped to 72 on decode.
    pub(crate) info_length: u8,
    /// 9, 8 bits.
    pub(crate) ap_status: u8,
    /// 12, 72 bytes.
    pub(crate) info: [u8; APR_INFO],
    /// 84, 148 bytes.
    pub(crate) private_data: Bytes<'a, APR_PRIVATE_DATA>,
}

impl<'a> Apr<'a> {
    /// Decodes a payload of at least 232 bytes.
    pub(crate) fn decode(p: &'a [u8]) -> Self {
        Self {
            local_comm_id: field::u32_at(p, 0),
            remote_comm_id: field::u32_at(p, 4),
            info_length: field::u8_at(p, 8).min(APR_INFO_MAX),
            ap_status: field::u8_at(p, 9),
            info: field::array(p, 12),
            private_data: Bytes::at(p, 84),
        }
    }

    /// Encodes into a zeroed payload.
    pub(crate) fn encode(&self, p: &mut [u8]) {
        field::put(p, 0, &self.local_comm_id.to_be_bytes());
        field::put(p, 4, &self.remote_comm_id.to_be_bytes());
        field::put(p, 8, &[self.info_length, self.ap_status]);
        field::put(p, 12, &self.info);
        self.private_data.put(p, 84);
    }
}
