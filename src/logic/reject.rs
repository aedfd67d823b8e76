// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REJ reason strings: what `ibcm_reject_msg()` (cm.c) returns.
//!
//! The table is indexed by the IBTA REJ reason code (`enum ib_cm_rej_reason`, 1..=35). Code 34
//! has no name in IBTA nor in `<rdma/ib_cm.h>`; it and every out-of-range value give the same
//! fallback string as the C CM.

use core::ffi::CStr;

/// Returned for 0, 34, negative and too-large reason codes.
pub(crate) const UNRECOGNIZED: &CStr = c"unrecognized reason";

/// Reason strings, index = reason code. `None` marks codes without a name.
const REASONS: [Option<&CStr>; 36] = [
    None,
    Some(c"no QP"),
    Some(c"no EEC"),
    Some(c"no resources"),
    Some(c"timeout"),
    Some(c"unsupported"),
    Some(c"invalid comm ID"),
    Some(c"invalid comm instance"),
    Some(c"invalid service ID"),
    Some(c"invalid transport type"),
    Some(c"stale conn"),
    Some(c"RDC not exist"),
    Some(c"invalid GID"),
    Some(c"invalid LID"),
    Some(c"invalid SL"),
    Some(c"invalid traffic class"),
    Some(c"invalid hop limit"),
    Some(c"invalid packet rate"),
    Some(c"invalid alt GID"),
    Some(c"invalid alt LID"),
    Some(c"invalid alt SL"),
    Some(c"invalid alt traffic class"),
    Some(c"invalid alt hop limit"),
    Some(c"invalid alt packet rate"),
    Some(c"port CM redirect"),
    Some(c"port redirect"),
    Some(c"invalid MTU"),
    Some(c"insufficient resp resources"),
    Some(c"consumer defined"),
    Some(c"invalid RNR retry"),
    Some(c"duplicate local comm ID"),
    Some(c"invalid class version"),
    Some(c"invalid flow label"),
    Some(c"invalid alt flow label"),
    None,
    Some(c"vendor option is not supported"),
];

/// The human-readable name of REJ reason `reason`, as `ibcm_reject_msg()` gives it.
pub(crate) fn reason_str(reason: i32) -> &'static CStr {
    usize::try_from(reason)
        .ok()
        .and_then(|i| REASONS.get(i).copied().flatten())
        .unwrap_or(UNRECOGNIZED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_reasons() {
        assert_eq!(reason_str(1), c"no QP");
        assert_eq!(reason_str(8), c"invalid service ID");
        assert_eq!(reason_str(28), c"consumer defined");
        assert_eq!(reason_str(33), c"invalid alt flow label");
        assert_eq!(reason_str(35), c"vendor option is not supported");
    }

    #[test]
    fn unknown_reasons_fall_back() {
        for r in [i32::MIN, -1, 0, 34, 36, 1000, i32::MAX] {
            assert_eq!(reason_str(r), UNRECOGNIZED, "reason {r}");
        }
    }

    #[test]
    fn every_named_code_is_distinct() {
        for a in 1..=35 {
            for b in (a + 1)..=35 {
                if reason_str(a) != UNRECOGNIZED {
                    assert_ne!(reason_str(a), reason_str(b), "{a} vs {b}");
                }
            }
        }
    }
}
