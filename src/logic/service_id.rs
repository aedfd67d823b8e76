// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Service-ID rules of the listen path.
//!
//! Stands for `cm_init_listen()` (validation and `IB_CM_ASSIGN_SERVICE_ID` allocation) and for
//! the sharing test inside `cm_insert_listen()` in cm.c. Deliberate improvements over C, each
//! covered by a test below and documented in `Documentation/design.rst`:
//! - the allocator is advanced under the owner's lock (C increments a global counter with no
//!   lock held);
//! - it never hands out an ID that is live on the device;
//! - it never leaves the 0x02 range: exhaustion is an error, not a wrap into other ranges.

/// A service ID in CPU byte order. The ABI carries it as `__be64`; conversion happens only at
/// the ABI edge ([`ServiceId::from_be`], [`ServiceId::to_be`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub(crate) struct ServiceId(u64);

impl ServiceId {
    /// Wraps a CPU-order value.
    pub(crate) const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The CPU-order value.
    pub(crate) const fn get(self) -> u64 {
        self.0
    }

    /// Converts the raw bits of a `__be64` as stored in memory.
    pub(crate) const fn from_be(raw: u64) -> Self {
        Self(u64::from_be(raw))
    }

    /// The raw bits of the `__be64` representation.
    pub(crate) const fn to_be(self) -> u64 {
        self.0.to_be()
    }
}

/// `IB_SERVICE_ID_AGN_MASK`: the administratively-governed top byte.
pub(crate) const AGN_MASK: u64 = 0xFF00_0000_0000_0000;
/// `IB_CM_ASSIGN_SERVICE_ID`: "assign me one"; also the top byte reserved for assigned IDs.
pub(crate) const ASSIGN: ServiceId = ServiceId(0x0200_0000_0000_0000);
/// The last ID of the assignment range.
pub(crate) const ASSIGN_LAST: ServiceId = ServiceId(0x02FF_FFFF_FFFF_FFFF);

/// Why a service ID cannot be listened on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ServiceIdError {
    /// In the CM-assigned range (top byte 0x02) but not exactly `IB_CM_ASSIGN_SERVICE_ID`.
    Reserved,
    /// Every ID of the assignment range has been handed out.
    Exhausted,
}

/// What a listen request asks for, once validated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ListenTarget {
    /// Allocate an ID from the 0x02 range.
    Assign,
    /// Listen on exactly this ID.
    Fixed(ServiceId),
}

/// Validates the service ID passed to `ib_cm_listen()` / `ib_cm_insert_listen()`.
pub(crate) fn listen_target(sid: ServiceId) -> Result<ListenTarget, ServiceIdError> {
    if sid == ASSIGN {
        Ok(ListenTarget::Assign)
    } else if sid.0 & AGN_MASK == ASSIGN.0 {
        Err(ServiceIdError::Reserved)
    } else {
        Ok(ListenTarget::Fixed(sid))
    }
}

/// The allocator behind `IB_CM_ASSIGN_SERVICE_ID`: counts up from 0x0200000000000000, as C.
///
/// # Invariants
///
/// `next`, when `Some`, lies in `ASSIGN..=ASSIGN_LAST`; `None` means the range is used up.
#[derive(Debug)]
pub(crate) struct AssignAllocator {
    next: Option<u64>,
}

impl Default for AssignAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl AssignAllocator {
    /// A fresh allocator: the first ID it hands out equals `IB_CM_ASSIGN_SERVICE_ID`.
    pub(crate) const fn new() -> Self {
        Self {
            next: Some(ASSIGN.0),
        }
    }

    /// An allocator whose next candidate is `next` (for tests of the range end).
    #[cfg(any(test, ibcm_kunit))]
    pub(crate) const fn starting_at(next: ServiceId) -> Self {
        Self { next: Some(next.0) }
    }

    /// Hands out the lowest not-yet-issued ID for which `is_live` is false.
    ///
    /// The caller holds the lock that protects both this allocator and the set `is_live`
    /// looks at, so the ID is still free when it is inserted.
    pub(crate) fn allocate(
        &mut self,
        mut is_live: impl FnMut(ServiceId) -> bool,
    ) -> Result<ServiceId, ServiceIdError> {
        loop {
            let candidate = self.next.ok_or(ServiceIdError::Exhausted)?;
            // INVARIANT: advance within the range, or mark it used up at its end.
            self.next = if candidate < ASSIGN_LAST.0 {
                Some(candidate + 1)
            } else {
                None
            };
            if !is_live(ServiceId(candidate)) {
                return Ok(ServiceId(candidate));
            }
        }
    }
}

/// Outcome of a listen request that found a listener with the same (device, service ID).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Collision {
    /// `ib_cm_insert_listen()` may share the existing listener.
    Share,
    /// `ib_cm_insert_listen()` with a different handler, or a listener that has a context
    /// (or no handler): `-EINVAL`.
    Mismatch,
    /// `ib_cm_listen()` never shares: `-EBUSY`.
    Busy,
}

/// The sharing rule of `cm_insert_listen()`: share only with the same non-NULL handler and
/// a NULL context on the existing listener. `requested` is `None` for `ib_cm_listen()`.
pub(crate) fn on_collision<H: PartialEq>(
    existing_handler: Option<H>,
    existing_context_is_null: bool,
    requested: Option<H>,
) -> Collision {
    match (existing_handler, requested) {
        (_, None) => Collision::Busy,
        (Some(have), Some(want)) if have == want && existing_context_is_null => Collision::Share,
        _ => Collision::Mismatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_constant_means_assign() {
        assert_eq!(listen_target(ASSIGN), Ok(ListenTarget::Assign));
    }

    #[test]
    fn rest_of_0x02_range_is_reserved() {
        for v in [
            0x0200_0000_0000_0001,
            0x0212_3456_789A_BCDE,
            ASSIGN_LAST.get(),
        ] {
            assert_eq!(
                listen_target(ServiceId::new(v)),
                Err(ServiceIdError::Reserved),
                "{v:#x}"
            );
        }
    }

    #[test]
    fn other_ranges_are_taken_as_is() {
        // rdma_cm's TCP port space 0x0106, port 7174 (rping's default).
        let rping = ServiceId::new(0x0000_0000_0106_1C06);
        for sid in [
            ServiceId::new(0),
            rping,
            ServiceId::new(0x0100_0000_0000_0000),
            ServiceId::new(0x01FF_FFFF_FFFF_FFFF),
            ServiceId::new(0x0300_0000_0000_0000),
            ServiceId::new(u64::MAX),
        ] {
            assert_eq!(listen_target(sid), Ok(ListenTarget::Fixed(sid)));
        }
    }

    #[test]
    fn be_round_trip() {
        let sid = ServiceId::new(0x0102_0304_0506_0708);
        assert_eq!(sid.to_be().to_ne_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(ServiceId::from_be(sid.to_be()), sid);
    }

    #[test]
    fn allocator_counts_up_from_assign_like_c() {
        let mut a = AssignAllocator::new();
        assert_eq!(a.allocate(|_| false), Ok(ASSIGN));
        assert_eq!(
            a.allocate(|_| false),
            Ok(ServiceId::new(0x0200_0000_0000_0001))
        );
        assert_eq!(
            a.allocate(|_| false),
            Ok(ServiceId::new(0x0200_0000_0000_0002))
        );
    }

    #[test]
    fn allocator_skips_live_ids() {
        let mut a = AssignAllocator::new();
        let live = |s: ServiceId| s.get() < 0x0200_0000_0000_0003;
        assert_eq!(a.allocate(live), Ok(ServiceId::new(0x0200_0000_0000_0003)));
        assert_eq!(a.allocate(live), Ok(ServiceId::new(0x0200_0000_0000_0004)));
    }

    #[test]
    fn allocator_never_leaves_the_range() {
        let mut a = AssignAllocator::starting_at(ServiceId::new(ASSIGN_LAST.get() - 1));
        assert_eq!(
            a.allocate(|_| false),
            Ok(ServiceId::new(ASSIGN_LAST.get() - 1))
        );
        assert_eq!(a.allocate(|_| false), Ok(ASSIGN_LAST));
        assert_eq!(a.allocate(|_| false), Err(ServiceIdError::Exhausted));
        assert_eq!(a.allocate(|_| false), Err(ServiceIdError::Exhausted));
    }

    #[test]
    fn allocator_exhausts_when_rest_is_live() {
        let mut a = AssignAllocator::starting_at(ServiceId::new(ASSIGN_LAST.get() - 3));
        assert_eq!(a.allocate(|_| true), Err(ServiceIdError::Exhausted));
    }

    #[test]
    fn collision_rules_mirror_cm_insert_listen() {
        // Same handler, NULL context: share.
        assert_eq!(on_collision(Some(1), true, Some(1)), Collision::Share);
        // Different handler, or a context on the existing listener: -EINVAL.
        assert_eq!(on_collision(Some(1), true, Some(2)), Collision::Mismatch);
        assert_eq!(on_collision(Some(1), false, Some(1)), Collision::Mismatch);
        // An existing listener without a handler is never shared (C WARNs).
        assert_eq!(on_collision(None, true, Some(1)), Collision::Mismatch);
        // ib_cm_listen(): always -EBUSY.
        assert_eq!(on_collision(Some(1), true, None), Collision::Busy);
        assert_eq!(on_collision::<u8>(None, true, None), Collision::Busy);
    }
}
