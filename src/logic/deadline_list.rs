// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A doubly linked list of nodes kept in deadline order: the policy of a device's timewait
//! queue (`timewait.rs`), where one timer per device serves every id in timewait instead of
//! one timer per id.
//!
//! The links live in the nodes (intrusive: no allocation per entry), reached through
//! [`Links`], so the kernel side keeps them in its ids under the device lock and the host tests
//! keep them in an array. Deadlines are tick counts (`jiffies`) that wrap: `a` is before `b`
//! when `b - a` (wrapping) is below half the counter's range, as the kernel's `time_before`.
//! Most ids of a device wait the same time, so a new deadline is usually the latest: insertion
//! walks from the tail and is O(1) then; removal is always O(1). Equal deadlines keep their
//! insertion order.

/// Access to the links and deadline of the nodes, by handle.
pub(crate) trait Links {
    /// A node handle.
    type Node: Copy + Eq;
    /// The node's predecessor.
    fn prev(&self, n: Self::Node) -> Option<Self::Node>;
    /// The node's successor.
    fn next(&self, n: Self::Node) -> Option<Self::Node>;
    /// Sets both links of `n`.
    fn set(&mut self, n: Self::Node, prev: Option<Self::Node>, next: Option<Self::Node>);
    /// Sets the predecessor of `n`.
    fn set_prev(&mut self, n: Self::Node, prev: Option<Self::Node>);
    /// Sets the successor of `n`.
    fn set_next(&mut self, n: Self::Node, next: Option<Self::Node>);
    /// The node's deadline.
    fn deadline(&self, n: Self::Node) -> usize;
    /// Sets the node's deadline.
    fn set_deadline(&mut self, n: Self::Node, at: usize);
}

/// Whether tick `a` comes strictly before tick `b` (wrap-safe).
pub(crate) fn before(a: usize, b: usize) -> bool {
    // CAST: the wrapped difference read as signed is the kernel's `time_before` rule.
    (b.wrapping_sub(a) as isize) > 0
}

/// The ticks from `now` until `at`, 0 if `at` has come.
pub(crate) fn until(now: usize, at: usize) -> usize {
    if before(now, at) {
        at.wrapping_sub(now)
    } else {
        0
    }
}

/// The list: its first and last node.
pub(crate) struct DeadlineList<N> {
    head: Option<N>,
    tail: Option<N>,
}

impl<N: Copy + Eq> DeadlineList<N> {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        Self {
            head: None,
            tail: None,
        }
    }

    /// The node with the earliest deadline.
    pub(crate) fn first(&self) -> Option<N> {
        self.head
    }

    /// Whether the list is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Whether `n` is on this list (given that a node is on this list or on none, with both
    /// links cleared when on none).
    pub(crate) fn contains<L: Links<Node = N>>(&self, l: &L, n: N) -> bool {
        l.prev(n).is_some() || self.head == Some(n)
    }

    /// Inserts `n` (on no list) with deadline `at`, after every node whose deadline is not
    /// later. Returns whether `n` is now first (the owner's timer must then be moved up).
    pub(crate) fn insert<L: Links<Node = N>>(&mut self, l: &mut L, n: N, at: usize) -> bool {
        l.set_deadline(n, at);
        let mut after = self.tail;
        while let Some(p) = after {
            if !before(at, l.deadline(p)) {
                break;
            }
            after = l.prev(p);
        }
        match after {
            Some(p) => {
                let next = l.next(p);
                l.set(n, Some(p), next);
                l.set_next(p, Some(n));
                match next {
                    Some(x) => l.set_prev(x, Some(n)),
                    None => self.tail = Some(n),
                }
                false
            }
            None => {
                let old = self.head;
                l.set(n, None, old);
                match old {
                    Some(x) => l.set_prev(x, Some(n)),
                    None => self.tail = Some(n),
                }
                self.head = Some(n);
                true
            }
        }
    }

    /// Takes `n` off the list if it is on it; returns whether it was.
    pub(crate) fn remove<L: Links<Node = N>>(&mut self, l: &mut L, n: N) -> bool {
        if !self.contains(l, n) {
            return false;
        }
        let (prev, next) = (l.prev(n), l.next(n));
        match prev {
            Some(p) => l.set_next(p, next),
            None => self.head = next,
        }
        match next {
            Some(x) => l.set_prev(x, prev),
            None => self.tail = prev,
        }
        l.set(n, None, None);
        true
    }

    /// Takes the first node off if its deadline has come at `now`, or whatever its deadline
    /// if `all` (the owner is shutting down).
    pub(crate) fn pop_due<L: Links<Node = N>>(
        &mut self,
        l: &mut L,
        now: usize,
        all: bool,
    ) -> Option<N> {
        let n = self.head?;
        if !all && before(now, l.deadline(n)) {
            return None;
        }
        self.remove(l, n);
        Some(n)
    }

    /// Ticks from `now` until the first deadline, `None` if the list is empty.
    pub(crate) fn next_delay<L: Links<Node = N>>(&self, l: &L, now: usize) -> Option<usize> {
        self.head.map(|n| until(now, l.deadline(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes in an array, handles are indices.
    struct Arena {
        links: [(Option<usize>, Option<usize>, usize); 8],
    }

    impl Arena {
        fn new() -> Self {
            Self {
                links: [(None, None, 0); 8],
            }
        }
    }

    impl Links for Arena {
        type Node = usize;
        fn prev(&self, n: usize) -> Option<usize> {
            self.links[n].0
        }
        fn next(&self, n: usize) -> Option<usize> {
            self.links[n].1
        }
        fn set(&mut self, n: usize, prev: Option<usize>, next: Option<usize>) {
            self.links[n].0 = prev;
            self.links[n].1 = next;
        }
        fn set_prev(&mut self, n: usize, prev: Option<usize>) {
            self.links[n].0 = prev;
        }
        fn set_next(&mut self, n: usize, next: Option<usize>) {
            self.links[n].1 = next;
        }
        fn deadline(&self, n: usize) -> usize {
            self.links[n].2
        }
        fn set_deadline(&mut self, n: usize, at: usize) {
            self.links[n].2 = at;
        }
    }

    /// The nodes from head to tail, checking the back links and the tail on the way.
    fn walk(list: &DeadlineList<usize>, a: &Arena) -> Vec<usize> {
        let mut out = Vec::new();
        let mut prev = None;
        let mut cur = list.head;
        while let Some(n) = cur {
            assert_eq!(a.prev(n), prev, "back link of {n}");
            out.push(n);
            prev = Some(n);
            cur = a.next(n);
        }
        assert_eq!(list.tail, prev);
        out
    }

    #[test]
    fn keeps_deadline_order_and_fifo_for_equal_deadlines() {
        let (mut a, mut l) = (Arena::new(), DeadlineList::new());
        assert!(l.insert(&mut a, 0, 100));
        assert!(!l.insert(&mut a, 1, 300));
        assert!(!l.insert(&mut a, 2, 200));
        assert!(!l.insert(&mut a, 3, 300));
        assert!(l.insert(&mut a, 4, 50));
        assert!(!l.insert(&mut a, 5, 100));
        assert_eq!(walk(&l, &a), [4, 0, 5, 2, 1, 3]);
    }

    #[test]
    fn remove_head_middle_tail_and_absent() {
        let (mut a, mut l) = (Arena::new(), DeadlineList::new());
        for (n, at) in [(0, 10), (1, 20), (2, 30), (3, 40)] {
            l.insert(&mut a, n, at);
        }
        assert!(!l.remove(&mut a, 7));
        assert!(l.remove(&mut a, 2));
        assert!(!l.remove(&mut a, 2));
        assert_eq!(walk(&l, &a), [0, 1, 3]);
        assert!(l.remove(&mut a, 0));
        assert_eq!(walk(&l, &a), [1, 3]);
        assert!(l.remove(&mut a, 3));
        assert_eq!(walk(&l, &a), [1]);
        assert!(l.remove(&mut a, 1));
        assert!(l.is_empty() && walk(&l, &a).is_empty());
        // A removed node can go back on.
        assert!(l.insert(&mut a, 2, 5));
        assert_eq!(walk(&l, &a), [2]);
    }

    #[test]
    fn pops_only_what_is_due_unless_all() {
        let (mut a, mut l) = (Arena::new(), DeadlineList::new());
        for (n, at) in [(0, 10), (1, 20), (2, 30)] {
            l.insert(&mut a, n, at);
        }
        assert_eq!(l.pop_due(&mut a, 9, false), None);
        assert_eq!(l.next_delay(&a, 9), Some(1));
        assert_eq!(l.pop_due(&mut a, 10, false), Some(0));
        assert_eq!(l.pop_due(&mut a, 25, false), Some(1));
        assert_eq!(l.pop_due(&mut a, 25, false), None);
        assert_eq!(l.next_delay(&a, 25), Some(5));
        assert_eq!(l.pop_due(&mut a, 0, true), Some(2));
        assert_eq!(l.pop_due(&mut a, 0, true), None);
        assert_eq!(l.next_delay(&a, 0), None);
    }

    #[test]
    fn wraparound_of_the_tick_counter() {
        let (mut a, mut l) = (Arena::new(), DeadlineList::new());
        let now = usize::MAX - 5;
        l.insert(&mut a, 0, now.wrapping_add(10)); // after the wrap
        l.insert(&mut a, 1, now.wrapping_add(2)); // before it
        assert_eq!(walk(&l, &a), [1, 0]);
        assert_eq!(l.next_delay(&a, now), Some(2));
        assert_eq!(l.pop_due(&mut a, now.wrapping_add(3), false), Some(1));
        assert_eq!(l.pop_due(&mut a, now.wrapping_add(3), false), None);
        assert_eq!(l.next_delay(&a, now.wrapping_add(3)), Some(7));
        assert_eq!(l.pop_due(&mut a, now.wrapping_add(10), false), Some(0));
        // A deadline that has passed: no delay.
        assert_eq!(until(20, 10), 0);
        assert!(before(usize::MAX, 0) && !before(0, usize::MAX));
    }

    #[test]
    fn random_operations_match_a_sorted_model() {
        // A small linear congruential generator: deterministic, no dependency.
        let mut seed = 0x2545_f491_u64;
        let mut rnd = move |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // CAST: test randomness, 31 bits fit.
            (seed >> 33) as usize % m
        };
        for _ in 0..200 {
            let (mut a, mut l) = (Arena::new(), DeadlineList::new());
            let mut model: Vec<(usize, usize, usize)> = Vec::new(); // (deadline, order, node)
            let mut order = 0;
            for _ in 0..60 {
                let n = rnd(8);
                if model.iter().any(|m| m.2 == n) {
                    assert!(l.remove(&mut a, n));
                    model.retain(|m| m.2 != n);
                } else {
                    let at = rnd(16);
                    let first = l.insert(&mut a, n, at);
                    model.push((at, order, n));
                    order += 1;
                    model.sort();
                    assert_eq!(first, model[0].2 == n);
                }
                let want: Vec<usize> = model.iter().map(|m| m.2).collect();
                assert_eq!(walk(&l, &a), want);
            }
        }
    }
}
