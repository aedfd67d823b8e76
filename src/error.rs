// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! errno and `ERR_PTR` conversions shared by everything below the exported edge.

use crate::bindings;
use kernel::prelude::*;

/// `-EOPNOTSUPP`, which 6.12's `kernel::error::code` does not name.
pub(crate) fn eopnotsupp() -> Error {
    // CAST: errno constants are small positive integers.
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `-EISCONN`.
pub(crate) fn eisconn() -> Error {
    // CAST: as above.
    Error::from_errno(-(bindings::EISCONN as i32))
}

/// Whether a pointer a C caller passed (or a C function returned) is NULL or an `ERR_PTR`:
/// `IS_ERR_OR_NULL()`, whose rule (the top `MAX_ERRNO` addresses are errors) is restated here
/// so that every exported call does not pay a function call for it.
#[inline]
pub(crate) fn is_err_or_null<T>(ptr: *const T) -> bool {
    // CAST: `IS_ERR_VALUE()` compares the address as an unsigned long.
    // One compare: NULL wraps to the top, into the error range moved down by one.
    let addr = ptr as usize;
    addr.wrapping_sub(1) >= (MAX_ERRNO as usize).wrapping_neg().wrapping_sub(1)
}

/// `MAX_ERRNO` of `<linux/err.h>`.
const MAX_ERRNO: u32 = kernel::bindings::MAX_ERRNO;

/// The error an ib_core function returned as a pointer (`PTR_ERR`), `if_null` for NULL, or
/// `None` for a valid pointer.
pub(crate) fn ptr_error<T>(ptr: *const T, if_null: Error) -> Option<Error> {
    if !is_err_or_null(ptr) {
        return None;
    }
    // CAST: an ERR_PTR carries a negative errno in the pointer value.
    let e = ptr as isize as i32;
    Some(if e < 0 { Error::from_errno(e) } else { if_null })
}
