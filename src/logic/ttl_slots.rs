// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A fixed set of slots whose entries expire a fixed time after they were stored: the slot and
//! eviction policy of the reply-address cache (`reply_ah.rs`).
//!
//! Times are tick counts (`jiffies`) that wrap: an entry born at `born` is fresh at `now` while
//! `now - born` (wrapping) is below the TTL. That reading is only right while an entry is
//! younger than half the counter's range, so expired entries must not linger. Lookups skip
//! them and inserts reuse their slots first; [`TtlSlots::expire`] removes them, and
//! [`TtlSlots::next_expiry`] tells the owner when to come back for that (the cache's sweep
//! work, armed whenever an entry is stored). Lookups and inserts do not evict: they run on the
//! receive path, where handing back an array of evicted entries costs a copy of the whole set.

/// Up to `N` entries of type `T`, each stale once `ttl` ticks have passed since it was stored:
/// skipped by lookups, replaced first by inserts, removed by [`TtlSlots::expire`].
pub(crate) struct TtlSlots<T, const N: usize> {
    slots: [Option<(usize, T)>; N],
    /// The slot the next entry replaces when every slot holds a fresh entry.
    next: usize,
    ttl: usize,
}

/// Whether an entry born at `born` is still fresh at `now` (wrap-safe, see the module docs).
fn fresh(born: usize, now: usize, ttl: usize) -> bool {
    now.wrapping_sub(born) < ttl
}

/// The entries an operation removed, for the caller to drop after it unlocks.
pub(crate) type Evicted<T, const N: usize> = [Option<T>; N];

impl<T, const N: usize> TtlSlots<T, N> {
    /// Empty slots whose entries live `ttl` ticks.
    pub(crate) const fn new(ttl: usize) -> Self {
        Self {
            slots: [const { None }; N],
            next: 0,
            ttl,
        }
    }

    /// How long an entry lives, in ticks.
    pub(crate) fn ttl(&self) -> usize {
        self.ttl
    }

    /// Removes every entry that has expired at `now`, handing back what `keep` takes of each
    /// (what the caller must drop after it unlocks: only that part is copied out).
    pub(crate) fn expire<U>(&mut self, now: usize, keep: impl Fn(T) -> U) -> Evicted<U, N> {
        let ttl = self.ttl;
        let mut out = [const { None }; N];
        for (o, s) in out.iter_mut().zip(self.slots.iter_mut()) {
            if matches!(s, Some((born, _)) if !fresh(*born, now, ttl)) {
                *o = s.take().map(|(_, t)| keep(t));
            }
        }
        out
    }

    /// The first fresh entry at `now` that `matches` accepts.
    pub(crate) fn find(&self, now: usize, matches: impl Fn(&T) -> bool) -> Option<&T> {
        self.slots
            .iter()
            .flatten()
            .find_map(|(born, t)| (fresh(*born, now, self.ttl) && matches(t)).then_some(t))
    }

    /// Stores `item` born at `now`: in an empty or expired slot if there is one, else in place
    /// of the fresh entries in turn (round robin over the slots). Returns the entry it
    /// replaced.
    pub(crate) fn insert(&mut self, now: usize, item: T) -> Option<T> {
        let ttl = self.ttl;
        let free = self
            .slots
            .iter()
            .position(|s| !matches!(s, Some((born, _)) if fresh(*born, now, ttl)));
        let i = free.unwrap_or_else(|| {
            let i = self.next;
            self.next = (i + 1) % N;
            i
        });
        self.slots[i].replace((now, item)).map(|(_, t)| t)
    }

    /// Ticks from `now` until the next fresh entry expires (at least 1), or `None` when no
    /// fresh entry is left.
    pub(crate) fn next_expiry(&self, now: usize) -> Option<usize> {
        self.slots
            .iter()
            .flatten()
            .filter(|(born, _)| fresh(*born, now, self.ttl))
            .map(|(born, _)| self.ttl - now.wrapping_sub(*born))
            .min()
    }

    /// Removes every entry, handing back what `keep` takes of each (as [`TtlSlots::expire`]).
    pub(crate) fn take_all<U>(&mut self, keep: impl Fn(T) -> U) -> Evicted<U, N> {
        let mut out = [const { None }; N];
        for (o, s) in out.iter_mut().zip(self.slots.iter_mut()) {
            *o = s.take().map(|(_, t)| keep(t));
        }
        out
    }

    /// Every stored entry, fresh or not (for the tests).
    #[cfg(any(test, ibcm_kunit))]
    pub(crate) fn entries(&self) -> impl Iterator<Item = Option<&T>> {
        self.slots.iter().map(|s| s.as_ref().map(|(_, t)| t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: usize = 250;

    fn count<T, const N: usize>(e: &Evicted<T, N>) -> usize {
        e.iter().flatten().count()
    }

    fn live<const N: usize>(s: &TtlSlots<u32, N>) -> [u32; N] {
        let mut out = [0; N];
        for (o, e) in out.iter_mut().zip(s.entries()) {
            *o = e.copied().unwrap_or(0);
        }
        out
    }

    #[test]
    fn entries_expire_exactly_at_ttl() {
        let mut s = TtlSlots::<u32, 4>::new(TTL);
        assert!(s.insert(1000, 7).is_none());
        assert_eq!(s.find(1000 + TTL - 1, |&v| v == 7), Some(&7));
        assert_eq!(s.find(1000 + TTL, |&v| v == 7), None);
        assert_eq!(count(&s.expire(1000 + TTL - 1, |t| t)), 0);
        assert_eq!(count(&s.expire(1000 + TTL, |t| t)), 1);
        assert_eq!(live(&s), [0; 4]);
        assert_eq!(s.next_expiry(1000 + TTL), None);
    }

    #[test]
    fn wraparound_of_the_tick_counter() {
        let mut s = TtlSlots::<u32, 4>::new(TTL);
        let born = usize::MAX - 10;
        s.insert(born, 1);
        // 20 ticks later the counter has wrapped: still fresh, 230 ticks to go.
        let now = born.wrapping_add(20);
        assert!(now < born);
        assert_eq!(s.find(now, |_| true), Some(&1));
        assert_eq!(s.next_expiry(now), Some(TTL - 20));
        assert_eq!(count(&s.expire(now, |t| t)), 0);
        // And it expires on time after the wrap.
        let later = born.wrapping_add(TTL);
        assert_eq!(s.find(later, |_| true), None);
        assert_eq!(count(&s.expire(later, |t| t)), 1);
    }

    #[test]
    fn expired_slots_are_reused_before_fresh_ones() {
        let mut s = TtlSlots::<u32, 3>::new(TTL);
        s.insert(0, 1);
        s.insert(100, 2);
        s.insert(200, 3);
        // At 260 the first entry has expired: its slot takes the new one, and it is handed back.
        assert_eq!(s.insert(260, 4), Some(1));
        assert_eq!(live(&s), [4, 2, 3]);
    }

    #[test]
    fn a_full_set_of_fresh_entries_is_replaced_in_turn() {
        let mut s = TtlSlots::<u32, 3>::new(TTL);
        for v in 1..=3 {
            assert!(s.insert(10, v).is_none());
        }
        assert_eq!(s.insert(11, 4), Some(1));
        assert_eq!(s.insert(12, 5), Some(2));
        assert_eq!(s.insert(13, 6), Some(3));
        assert_eq!(s.insert(14, 7), Some(4));
        assert_eq!(live(&s), [7, 5, 6]);
    }

    #[test]
    fn next_expiry_is_the_soonest_fresh_entry() {
        let mut s = TtlSlots::<u32, 4>::new(TTL);
        assert_eq!(s.next_expiry(0), None);
        s.insert(100, 1);
        s.insert(150, 2);
        assert_eq!(s.next_expiry(150), Some(200));
        // After the first expires, the second is next; an expired entry never counts.
        assert_eq!(s.next_expiry(360), Some(40));
        assert_eq!(s.next_expiry(400), None);
        // Never 0 for a fresh entry, so a timer armed with it always makes progress.
        assert_eq!(s.next_expiry(399), Some(1));
    }

    #[test]
    fn find_skips_expired_and_rejected_entries() {
        let mut s = TtlSlots::<u32, 4>::new(TTL);
        s.insert(0, 5);
        s.insert(200, 5);
        s.insert(200, 6);
        // The first 5 expired at 250; the second is found.
        assert_eq!(s.find(300, |&v| v == 5), Some(&5));
        assert_eq!(s.find(300, |&v| v == 8), None);
        assert_eq!(count(&s.expire(300, |t| t)), 1);
        assert_eq!(live(&s), [0, 5, 6, 0]);
    }

    #[test]
    fn take_all_empties() {
        let mut s = TtlSlots::<u32, 2>::new(TTL);
        s.insert(0, 1);
        s.insert(0, 2);
        assert_eq!(count(&s.take_all(|t| t)), 2);
        assert_eq!(live(&s), [0, 0]);
        assert_eq!(s.next_expiry(0), None);
    }
}
