// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Field access in IBTA bit numbering: a field of `width` bits starts at bit `bit` (0 = most
//! significant) of byte `byte` and runs on through the following bytes, big-endian, as the
//! `IBA_FIELD*_LOC` tables of `rdma/iba.h` describe. Out-of-range reads give 0 and
//! out-of-range writes are ignored, so no wire input can make these panic.

/// The eight bytes from `byte` on, if the field (`bit`, `width`) fits in them and `buf` has
/// them: the usual case, a field inside a received MAD, read with one big-endian load (as
/// cm.c's `IBA_GET`) instead of byte by byte.
fn word(buf: &[u8], byte: usize, bit: u32, width: u32) -> Option<&[u8; 8]> {
    if width == 0 || bit + width > 64 {
        return None;
    }
    buf.get(byte..)?.first_chunk()
}

/// Reads a field of up to 57 bits.
pub(crate) fn get(buf: &[u8], byte: usize, bit: u32, width: u32) -> u64 {
    if let Some(w) = word(buf, byte, bit, width) {
        return (u64::from_be_bytes(*w) >> (64 - bit - width)) & mask(width);
    }
    get_bytewise(buf, byte, bit, width)
}

/// [`get`] a byte at a time: fields near the end of `buf`, or past it (zeros).
fn get_bytewise(buf: &[u8], byte: usize, bit: u32, width: u32) -> u64 {
    let span = (bit + width).div_ceil(8);
    let mut v: u64 = 0;
    for i in 0..span {
        let b = usize::try_from(i)
            .ok()
            .and_then(|i| buf.get(byte + i))
            .copied()
            .unwrap_or(0);
        v = (v << 8) | u64::from(b);
    }
    (v >> (span * 8 - bit - width)) & mask(width)
}

/// Writes a field of up to 57 bits, leaving the other bits of the touched bytes alone.
/// (Byte by byte: the senders' buffers are arrays, whose fields the compiler already writes
/// with plain stores; a word's read-modify-write measured dearer.)
pub(crate) fn set(buf: &mut [u8], byte: usize, bit: u32, width: u32, value: u64) {
    let span = (bit + width).div_ceil(8);
    let shift = span * 8 - bit - width;
    let m = mask(width) << shift;
    let mut v: u64 = 0;
    for i in 0..span {
        let b = usize::try_from(i)
            .ok()
            .and_then(|i| buf.get(byte + i))
            .copied()
            .unwrap_or(0);
        v = (v << 8) | u64::from(b);
    }
    v = (v & !m) | ((value << shift) & m);
    for i in (0..span).rev() {
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| buf.get_mut(byte + i)) {
            *slot = v.to_be_bytes()[7];
        }
        v >>= 8;
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Reads a byte-aligned 8-bit field.
pub(crate) fn u8_at(buf: &[u8], byte: usize) -> u8 {
    buf.get(byte).copied().unwrap_or(0)
}

/// Reads a byte-aligned big-endian 16-bit field.
pub(crate) fn u16_at(buf: &[u8], byte: usize) -> u16 {
    u16::from_be_bytes(array(buf, byte))
}

/// Reads a byte-aligned big-endian 32-bit field.
pub(crate) fn u32_at(buf: &[u8], byte: usize) -> u32 {
    u32::from_be_bytes(array(buf, byte))
}

/// Reads a byte-aligned big-endian 64-bit field.
pub(crate) fn u64_at(buf: &[u8], byte: usize) -> u64 {
    u64::from_be_bytes(array(buf, byte))
}

/// Copies `N` bytes starting at `byte` (zero-filled past the end of `buf`).
pub(crate) fn array<const N: usize>(buf: &[u8], byte: usize) -> [u8; N] {
    // The usual case, a field inside the MAD: one copy, with no zeroing pass before it.
    if let Some(Ok(whole)) = buf
        .get(byte..byte.saturating_add(N))
        .map(<[u8; N]>::try_from)
    {
        return whole;
    }
    let mut out = [0u8; N];
    // One bounded copy (private data runs to 224 bytes; a byte loop costs per byte).
    let src = buf.get(byte..).unwrap_or(&[]);
    let n = src.len().min(N);
    out[..n].copy_from_slice(&src[..n]);
    out
}

/// Writes `bytes` at `byte` (truncated at the end of `buf`).
pub(crate) fn put(buf: &mut [u8], byte: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(byte..) {
        let n = dst.len().min(bytes.len());
        dst[..n].copy_from_slice(&bytes[..n]);
    }
}

/// A message's private data: the bytes it carries, at most `N`, borrowed from the caller that
/// sends them or from the received MAD, never copied into the message. On the wire the field
/// is always `N` bytes; those past the borrowed ones are zeros (send buffers are zeroed), as
/// cm.c's `cm_format_*` copy only the caller's bytes into the zeroed MAD. Two fields are equal
/// if their wire bytes are.
#[derive(Clone, Copy)]
pub(crate) struct Bytes<'a, const N: usize>(&'a [u8]);

impl<'a, const N: usize> Bytes<'a, N> {
    /// No bytes: an all-zero field.
    pub(crate) const EMPTY: Self = Self(&[]);

    /// `bytes`, cut to `N`.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self(bytes.get(..N).unwrap_or(bytes))
    }

    /// The field at `byte` of `buf` (shorter if `buf` ends first).
    pub(crate) fn at(buf: &'a [u8], byte: usize) -> Self {
        Self::new(buf.get(byte..).unwrap_or(&[]))
    }

    /// The bytes carried (trailing zeros of a decoded field included).
    pub(crate) fn as_slice(&self) -> &'a [u8] {
        self.0
    }

    /// The field's `N` wire bytes.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn to_array(self) -> [u8; N] {
        let mut out = [0u8; N];
        out[..self.0.len()].copy_from_slice(self.0);
        out
    }

    /// Writes the carried bytes at `byte` of a zeroed `buf`.
    pub(crate) fn put(&self, buf: &mut [u8], byte: usize) {
        put(buf, byte, self.0)
    }

    /// The carried bytes without trailing zeros: what decides equality.
    fn significant(&self) -> &'a [u8] {
        let end = self.0.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        &self.0[..end]
    }
}

impl<const N: usize> Default for Bytes<'_, N> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const N: usize> PartialEq for Bytes<'_, N> {
    fn eq(&self, other: &Self) -> bool {
        self.significant() == other.significant()
    }
}

impl<const N: usize> Eq for Bytes<'_, N> {}

/// The tests read single wire bytes: those past the carried ones are zeros.
#[cfg(test)]
impl<const N: usize> core::ops::Index<usize> for Bytes<'_, N> {
    type Output = u8;

    fn index(&self, i: usize) -> &u8 {
        assert!(i < N, "byte {i} of a {N}-byte field");
        self.0.get(i).unwrap_or(&0)
    }
}

impl<const N: usize> core::fmt::Debug for Bytes<'_, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", self.significant())
    }
}

/// Narrows a field value known to fit (its width is at most the target's).
pub(crate) fn narrow<T: TryFrom<u64> + Default>(v: u64) -> T {
    T::try_from(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibta_bit_numbering() {
        let buf = [0b1010_1100, 0b0101_0011, 0xFF];
        // Top 5 bits of byte 0.
        assert_eq!(get(&buf, 0, 0, 5), 0b10101);
        // Byte 0 bits 5..7 (2 bits), as REQ's transport service type.
        assert_eq!(get(&buf, 0, 5, 2), 0b10);
        // A field crossing bytes: bits 4..12.
        assert_eq!(get(&buf, 0, 4, 8), 0b1100_0101);
        assert_eq!(get(&buf, 1, 0, 16), 0x53FF);
        // Past the end reads as 0.
        assert_eq!(get(&buf, 2, 0, 16), 0xFF00);
        assert_eq!(get(&buf, 9, 0, 8), 0);
    }

    #[test]
    fn set_touches_only_its_bits() {
        let mut buf = [0xFFu8; 3];
        set(&mut buf, 0, 5, 2, 0);
        assert_eq!(buf, [0b1111_1001, 0xFF, 0xFF]);
        set(&mut buf, 0, 4, 12, 0xABC);
        assert_eq!(buf, [0b1111_1010, 0xBC, 0xFF]);
        set(&mut buf, 2, 0, 16, 0x1234); // clipped at the end
        assert_eq!(buf[2], 0x12);
    }

    #[test]
    fn array_inside_across_and_past_the_end() {
        let buf = [1u8, 2, 3, 4, 5];
        // Inside: the copy of the fast path.
        assert_eq!(array::<3>(&buf, 1), [2, 3, 4]);
        assert_eq!(array::<5>(&buf, 0), buf);
        // Across the end: the bytes there, then zeros.
        assert_eq!(array::<4>(&buf, 3), [4, 5, 0, 0]);
        // At and past the end, and where `byte + N` would overflow: all zeros.
        assert_eq!(array::<2>(&buf, 5), [0, 0]);
        assert_eq!(array::<2>(&buf, 9), [0, 0]);
        assert_eq!(array::<4>(&buf, usize::MAX - 1), [0; 4]);
    }

    #[test]
    fn bytes_borrow_cut_and_compare_as_wire_fields() {
        let buf = [7u8, 8, 9, 0, 0];
        // Cut to N; a decoded field runs to N or to the end of the buffer.
        assert_eq!(Bytes::<2>::new(&buf).as_slice(), &[7, 8]);
        assert_eq!(Bytes::<4>::at(&buf, 3).as_slice(), &[0, 0]);
        assert_eq!(Bytes::<4>::at(&buf, 9).as_slice(), &[] as &[u8]);
        // Equal when the wire bytes are: trailing zeros do not count.
        assert_eq!(Bytes::<5>::new(&buf), Bytes::<5>::new(&buf[..3]));
        assert_ne!(Bytes::<5>::new(&buf), Bytes::<5>::new(&buf[..2]));
        assert_eq!(Bytes::<4>::at(&buf, 3), Bytes::EMPTY);
        assert_eq!(Bytes::<4>::new(&buf[..2]).to_array(), [7, 8, 0, 0]);
        // Written into a zeroed buffer: only the carried bytes, clipped at its end.
        let mut out = [0u8; 4];
        Bytes::<3>::new(&buf).put(&mut out, 2);
        assert_eq!(out, [0, 0, 7, 8]);
    }

    #[test]
    fn word_read_agrees_with_bytewise() {
        // Every field shape the codecs use (and more), at every offset of a 24-byte buffer:
        // the word read gives what the byte-wise one gives, inside and at the end.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut buf = [0u8; 24];
        for b in buf.iter_mut() {
            *b = next().to_be_bytes()[0];
        }
        for byte in 0..buf.len() + 2 {
            for bit in 0..8 {
                for width in 1..=57 {
                    assert_eq!(
                        get(&buf, byte, bit, width),
                        get_bytewise(&buf, byte, bit, width),
                        "get({byte}, {bit}, {width})"
                    );
                }
            }
        }
    }

    #[test]
    fn set_masks_oversized_values() {
        let mut buf = [0u8; 2];
        set(&mut buf, 0, 0, 4, 0xFF);
        assert_eq!(buf, [0xF0, 0]);
    }
}
