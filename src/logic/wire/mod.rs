// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! CM MAD wire formats: the MAD common header and the 11 CM messages (IBTA Vol. 1, ch. 12).
//!
//! Stands for `cm_msgs.h`, `ibta_vol1_c12.h` and the `cm_format_*` helpers of cm.c. Every field
//! of every message is decoded from and encoded to big-endian bytes through the field helpers in
//! `field.rs`, at the offsets of the IBTA tables (cited per message). Decoders never trust a
//! length read from the wire: short buffers are refused and length fields are clamped to the
//! size of the buffer they describe.

pub(crate) mod conn;
pub(crate) mod field;
pub(crate) mod lap;
pub(crate) mod mad;
pub(crate) mod sidr;

pub(crate) use mad::{MadHeader, RecvHdr, MAD_HDR_LEN, MAD_LEN, PAYLOAD_LEN};

/// Why a MAD was dropped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WireError {
    /// Fewer bytes than the MAD header plus the message need.
    Truncated,
    /// Not management class 0x07 (CM).
    WrongClass,
    /// Not CM class version 2.
    WrongClassVersion,
    /// Not base version 1.
    WrongBaseVersion,
    /// A method other than Send (0x03).
    WrongMethod,
    /// An attribute ID that is not one of the 11 CM messages.
    UnknownAttribute,
}

/// `IB_MGMT_CLASS_CM`.
pub(crate) const MGMT_CLASS_CM: u8 = 0x07;
/// `IB_CM_CLASS_VERSION`.
pub(crate) const CM_CLASS_VERSION: u8 = 2;
/// `IB_MGMT_BASE_VERSION`.
pub(crate) const BASE_VERSION: u8 = 1;
/// `IB_MGMT_METHOD_SEND`: every CM message is sent with it.
pub(crate) const METHOD_SEND: u8 = 0x03;

/// The CM attribute IDs (`ib_cm.h`), in counter order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u16)]
pub(crate) enum AttrId {
    /// Connection request.
    Req = 0x10,
    /// Message receipt acknowledgement.
    Mra = 0x11,
    /// Reject.
    Rej = 0x12,
    /// Reply to a REQ.
    Rep = 0x13,
    /// Ready to use.
    Rtu = 0x14,
    /// Disconnect request.
    Dreq = 0x15,
    /// Disconnect reply.
    Drep = 0x16,
    /// Service ID resolution request.
    SidrReq = 0x17,
    /// Service ID resolution reply.
    SidrRep = 0x18,
    /// Load alternate path.
    Lap = 0x19,
    /// Alternate path response.
    Apr = 0x1A,
}

/// Number of CM attributes, the size of each counter group.
pub(crate) const ATTR_COUNT: usize = 11;

impl AttrId {
    /// All attributes, in counter order (`attr_id - 0x10`).
    pub(crate) const ALL: [AttrId; ATTR_COUNT] = [
        AttrId::Req,
        AttrId::Mra,
        AttrId::Rej,
        AttrId::Rep,
        AttrId::Rtu,
        AttrId::Dreq,
        AttrId::Drep,
        AttrId::SidrReq,
        AttrId::SidrRep,
        AttrId::Lap,
        AttrId::Apr,
    ];

    /// The attribute for a wire value, if it is a CM message.
    pub(crate) fn from_wire(v: u16) -> Option<Self> {
        let index = usize::from(v.checked_sub(0x10)?);
        Self::ALL.get(index).copied()
    }

    /// The wire value.
    pub(crate) fn wire(self) -> u16 {
        // CAST: a fieldless `repr(u16)` enum to its discriminant.
        self as u16
    }

    /// Index into a counter group (`attr_id - 0x10`).
    pub(crate) fn counter_index(self) -> usize {
        usize::from(self.wire() - 0x10)
    }
}

/// A CM message, decoded from a MAD or to be encoded into one; its private data is
/// borrowed (from the MAD, or from the caller that sends it). `repr(u8)`: a plain tag byte,
/// which the sender's matches (attribute, encoder) read directly, where the compiler's own
/// layout hid the variant in a niche of the REQ and decoded it at each match.
#[derive(Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum CmMessage<'a> {
    /// REQ.
    Req(conn::Req<'a>),
    /// MRA.
    Mra(conn::Mra<'a>),
    /// REJ.
    Rej(conn::Rej<'a>),
    /// REP.
    Rep(conn::Rep<'a>),
    /// RTU.
    Rtu(conn::Rtu<'a>),
    /// DREQ.
    Dreq(conn::Dreq<'a>),
    /// DREP.
    Drep(conn::Drep<'a>),
    /// SIDR_REQ.
    SidrReq(sidr::SidrReq<'a>),
    /// SIDR_REP.
    SidrRep(sidr::SidrRep<'a>),
    /// LAP.
    Lap(lap::Lap<'a>),
    /// APR.
    Apr(lap::Apr<'a>),
}

impl<'a> CmMessage<'a> {
    /// The attribute ID this message is sent with.
    pub(crate) fn attr_id(&self) -> AttrId {
        match self {
            CmMessage::Req(_) => AttrId::Req,
            CmMessage::Mra(_) => AttrId::Mra,
            CmMessage::Rej(_) => AttrId::Rej,
            CmMessage::Rep(_) => AttrId::Rep,
            CmMessage::Rtu(_) => AttrId::Rtu,
            CmMessage::Dreq(_) => AttrId::Dreq,
            CmMessage::Drep(_) => AttrId::Drep,
            CmMessage::SidrReq(_) => AttrId::SidrReq,
            CmMessage::SidrRep(_) => AttrId::SidrRep,
            CmMessage::Lap(_) => AttrId::Lap,
            CmMessage::Apr(_) => AttrId::Apr,
        }
    }

    /// Decodes the payload (the 232 bytes after the MAD header) of attribute `attr`. The
    /// module's receive path decodes the one message it gets in place instead; the white-box
    /// and host tests use this.
    #[cfg_attr(not(ibcm_kunit), allow(dead_code))]
    pub(crate) fn decode(attr: AttrId, payload: &'a [u8]) -> Result<Self, WireError> {
        let p = payload.get(..PAYLOAD_LEN).ok_or(WireError::Truncated)?;
        Ok(match attr {
            AttrId::Req => CmMessage::Req(conn::Req::decode(p)),
            AttrId::Mra => CmMessage::Mra(conn::Mra::decode(p)),
            AttrId::Rej => CmMessage::Rej(conn::Rej::decode(p)),
            AttrId::Rep => CmMessage::Rep(conn::Rep::decode(p)),
            AttrId::Rtu => CmMessage::Rtu(conn::Rtu::decode(p)),
            AttrId::Dreq => CmMessage::Dreq(conn::Dreq::decode(p)),
            AttrId::Drep => CmMessage::Drep(conn::Drep::decode(p)),
            AttrId::SidrReq => CmMessage::SidrReq(sidr::SidrReq::decode(p)),
            AttrId::SidrRep => CmMessage::SidrRep(sidr::SidrRep::decode(p)),
            AttrId::Lap => CmMessage::Lap(lap::Lap::decode(p)),
            AttrId::Apr => CmMessage::Apr(lap::Apr::decode(p)),
        })
    }

    /// Encodes the payload into `p` (zeroed first, as cm.c's send buffers are). The module
    /// sends with [`CmMessage::encode_zeroed`]; the host tests check one against the other.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn encode(&self, p: &mut [u8; PAYLOAD_LEN]) {
        p.fill(0);
        self.encode_zeroed(p);
    }

    /// [`CmMessage::encode`] into a payload that is already all zeros, without clearing it
    /// again: the same bytes (fields are written whole or bit-masked into zeros).
    pub(crate) fn encode_zeroed(&self, p: &mut [u8; PAYLOAD_LEN]) {
        match self {
            CmMessage::Req(m) => m.encode(p),
            CmMessage::Mra(m) => m.encode(p),
            CmMessage::Rej(m) => m.encode(p),
            CmMessage::Rep(m) => m.encode(p),
            CmMessage::Rtu(m) => m.encode(p),
            CmMessage::Dreq(m) => m.encode(p),
            CmMessage::Drep(m) => m.encode(p),
            CmMessage::SidrReq(m) => m.encode(p),
            CmMessage::SidrRep(m) => m.encode(p),
            CmMessage::Lap(m) => m.encode(p),
            CmMessage::Apr(m) => m.encode(p),
        }
    }
}

/// Checks a received MAD's header (base version, class, class version, method, attribute)
/// and returns it with the attribute and the payload (the 232 bytes after the header), so a
/// receiver can decode the one message it names in place.
pub(crate) fn decode_header(mad: &[u8]) -> Result<(MadHeader, AttrId, &[u8]), WireError> {
    let attr = check_header(mad)?;
    Ok((MadHeader::decode(mad)?, attr, payload(mad)))
}

/// Checks a received MAD's header as [`decode_header`] does and returns its attribute,
/// reading only the fields it checks (the receive callback: the handlers then read the rest
/// where they use it, through [`mad::RecvHdr`]).
pub(crate) fn check_header(mad: &[u8]) -> Result<AttrId, WireError> {
    let b = mad.get(..MAD_LEN).ok_or(WireError::Truncated)?;
    if b[0] != BASE_VERSION {
        return Err(WireError::WrongBaseVersion);
    }
    if b[1] != MGMT_CLASS_CM {
        return Err(WireError::WrongClass);
    }
    if b[2] != CM_CLASS_VERSION {
        return Err(WireError::WrongClassVersion);
    }
    if b[3] != METHOD_SEND {
        return Err(WireError::WrongMethod);
    }
    AttrId::from_wire(field::u16_at(b, 16)).ok_or(WireError::UnknownAttribute)
}

/// The payload of a MAD [`check_header`] accepted (empty for a shorter buffer).
pub(crate) fn payload(mad: &[u8]) -> &[u8] {
    mad.get(MAD_HDR_LEN..MAD_LEN).unwrap_or(&[])
}

/// Decodes a whole received MAD: [`decode_header`], then the message (for the tests, as
/// [`CmMessage::decode`]).
#[cfg_attr(not(ibcm_kunit), allow(dead_code))]
pub(crate) fn decode_mad(mad: &[u8]) -> Result<(MadHeader, CmMessage<'_>), WireError> {
    let (hdr, attr, payload) = decode_header(mad)?;
    Ok((hdr, CmMessage::decode(attr, payload)?))
}

// A MAD is its header and the payload, exactly.
const _: () = assert!(MAD_LEN == MAD_HDR_LEN + PAYLOAD_LEN);

/// Encodes a whole CM MAD (header for `tid` and `attr_mod`, then the message) into `mad`, in
/// place, whatever `mad` held before (the send path, whose buffers are zeroed, uses
/// [`encode_zeroed_mad`]).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn encode_mad(msg: &CmMessage<'_>, tid: u64, attr_mod: u32, mad: &mut [u8; MAD_LEN]) {
    // The header is written whole; the payload is cleared first.
    mad[MAD_HDR_LEN..].fill(0);
    encode_zeroed_mad(msg, tid, attr_mod, mad);
}

/// [`encode_mad`] into a MAD that is all zeros: a fresh send buffer, which
/// `ib_create_send_mad()` allocates zeroed. Clearing its payload again would cost a pass over
/// 232 bytes per send.
pub(crate) fn encode_zeroed_mad(
    msg: &CmMessage<'_>,
    tid: u64,
    attr_mod: u32,
    mad: &mut [u8; MAD_LEN],
) {
    let hdr = MadHeader::cm(msg.attr_id(), tid, attr_mod);
    let (h, p) = mad.split_at_mut(MAD_HDR_LEN);
    hdr.encode(h);
    if let Ok(p) = <&mut [u8; PAYLOAD_LEN]>::try_from(p) {
        msg.encode_zeroed(p);
    }
}
