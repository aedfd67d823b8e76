// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The MAD common header (IBTA Vol. 1, 13.4.3; `struct ib_mad_hdr`), filled for CM messages as
//! `cm_format_mad_hdr()` does.

use super::{field, AttrId, WireError, BASE_VERSION, CM_CLASS_VERSION, METHOD_SEND, MGMT_CLASS_CM};

/// Size of a MAD.
pub(crate) const MAD_LEN: usize = 256;
/// Size of the common header.
pub(crate) const MAD_HDR_LEN: usize = 24;
/// Size of a CM message payload (everything after the header).
pub(crate) const PAYLOAD_LEN: usize = MAD_LEN - MAD_HDR_LEN;

/// A received MAD's header, checked once (by [`super::check_header`] in the receive callback)
/// and read where used: the message handlers need only its TID and attribute modifier, so
/// nothing is decoded up front.
#[derive(Clone, Copy)]
pub(crate) struct RecvHdr<'a>(&'a [u8]);

impl<'a> RecvHdr<'a> {
    /// The header of the received MAD `mad`.
    pub(crate) fn of(mad: &'a [u8]) -> Self {
        Self(mad)
    }

    /// The transaction ID.
    pub(crate) fn tid(&self) -> u64 {
        field::u64_at(self.0, 8)
    }

    /// The attribute modifier (the ECE `attr_mod` of a REQ, REP or SIDR_REP).
    pub(crate) fn attr_mod(&self) -> u32 {
        field::u32_at(self.0, 20)
    }
}

/// The MAD common header, every field.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct MadHeader {
    /// Offset 0.
    pub(crate) base_version: u8,
    /// Offset 1.
    pub(crate) mgmt_class: u8,
    /// Offset 2.
    pub(crate) class_version: u8,
    /// Offset 3.
    pub(crate) method: u8,
    /// Offset 4, 16 bits.
    pub(crate) status: u16,
    /// Offset 6, 16 bits.
    pub(crate) class_specific: u16,
    /// Offset 8, 64 bits.
    pub(crate) tid: u64,
    /// Offset 16, 16 bits.
    pub(crate) attr_id: u16,
    /// Offset 18, 16 bits.
    pub(crate) resv: u16,
    /// Offset 20, 32 bits: the ECE `attr_mod` for REQ, REP and SIDR_REP.
    pub(crate) attr_mod: u32,
}

impl MadHeader {
    /// The header of a CM message: base version 1, class 0x07, version 2, method Send.
    pub(crate) fn cm(attr: AttrId, tid: u64, attr_mod: u32) -> Self {
        Self {
            base_version: BASE_VERSION,
            mgmt_class: MGMT_CLASS_CM,
            class_version: CM_CLASS_VERSION,
            method: METHOD_SEND,
            tid,
            attr_id: attr.wire(),
            attr_mod,
            ..Self::default()
        }
    }

    /// Decodes the header; refuses a buffer shorter than a whole MAD.
    pub(crate) fn decode(mad: &[u8]) -> Result<Self, WireError> {
        if mad.len() < MAD_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Self {
            base_version: field::u8_at(mad, 0),
            mgmt_class: field::u8_at(mad, 1),
            class_version: field::u8_at(mad, 2),
            method: field::u8_at(mad, 3),
            status: field::u16_at(mad, 4),
            class_specific: field::u16_at(mad, 6),
            tid: field::u64_at(mad, 8),
            attr_id: field::u16_at(mad, 16),
            resv: field::u16_at(mad, 18),
            attr_mod: field::u32_at(mad, 20),
        })
    }

    /// Encodes the header into the first 24 bytes of `out`.
    pub(crate) fn encode(&self, out: &mut [u8]) {
        field::put(
            out,
            0,
            &[
                self.base_version,
                self.mgmt_class,
                self.class_version,
                self.method,
            ],
        );
        field::put(out, 4, &self.status.to_be_bytes());
        field::put(out, 6, &self.class_specific.to_be_bytes());
        field::put(out, 8, &self.tid.to_be_bytes());
        field::put(out, 16, &self.attr_id.to_be_bytes());
        field::put(out, 18, &self.resv.to_be_bytes());
        field::put(out, 20, &self.attr_mod.to_be_bytes());
    }
}
