// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Seeded randomized property tests of the listen-path rules (no external crates: a small
//! xorshift generator keeps the runs reproducible; a failure prints its seed).

use crate::logic::service_id::*;
use std::collections::BTreeSet;

/// xorshift64*: deterministic, good enough to explore input spaces.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Random service IDs biased toward the interesting top bytes (0x00, 0x01, 0x02, 0x03, 0xFF).
fn sid(rng: &mut Rng) -> ServiceId {
    let top = [0x00u64, 0x01, 0x02, 0x03, 0xFF][(rng.next() % 5) as usize];
    let low = match rng.next() % 4 {
        0 => 0,
        1 => 0x00FF_FFFF_FFFF_FFFF,
        _ => rng.next() & 0x00FF_FFFF_FFFF_FFFF,
    };
    ServiceId::new(top << 56 | low)
}

#[test]
fn listen_target_partitions_the_id_space() {
    for seed in 1..200u64 {
        let mut rng = Rng::new(seed);
        for _ in 0..500 {
            let s = sid(&mut rng);
            match listen_target(s) {
                Ok(ListenTarget::Assign) => assert_eq!(s, ASSIGN, "seed {seed}"),
                Ok(ListenTarget::Fixed(f)) => {
                    assert_eq!(f, s, "seed {seed}");
                    assert_ne!(s.get() >> 56, 0x02, "seed {seed}: {s:?}");
                }
                Err(ServiceIdError::Reserved) => {
                    assert_eq!(s.get() >> 56, 0x02, "seed {seed}");
                    assert_ne!(s, ASSIGN);
                }
                Err(e) => panic!("seed {seed}: unexpected {e:?}"),
            }
        }
    }
}

/// Model: a device's live set of listeners; random inserts of fixed and assigned IDs and
/// random removals. Assigned IDs are unique among live IDs, inside the 0x02 range, and
/// strictly increasing (never reused, never wrapped).
#[test]
fn allocator_is_unique_monotonic_and_in_range() {
    for seed in 1..100u64 {
        let mut rng = Rng::new(seed);
        let start = if seed % 2 == 0 { ASSIGN.get() } else { ASSIGN_LAST.get() - 300 };
        let mut alloc = AssignAllocator::starting_at(ServiceId::new(start));
        let mut live: BTreeSet<u64> = BTreeSet::new();
        let mut last: Option<u64> = None;
        let mut exhausted = false;
        for _ in 0..600 {
            match rng.next() % 3 {
                0 | 1 => match alloc.allocate(|s| live.contains(&s.get())) {
                    Ok(s) => {
                        assert!(!exhausted, "seed {seed}: allocation after exhaustion");
                        assert!(s >= ASSIGN && s <= ASSIGN_LAST, "seed {seed}: {s:?}");
                        assert!(last.map_or(true, |l| s.get() > l), "seed {seed}: not increasing");
                        assert!(live.insert(s.get()), "seed {seed}: {s:?} handed out twice");
                        last = Some(s.get());
                    }
                    Err(ServiceIdError::Exhausted) => {
                        assert_eq!(last, Some(ASSIGN_LAST.get()), "seed {seed}");
                        exhausted = true;
                    }
                    Err(e) => panic!("seed {seed}: {e:?}"),
                },
                _ => {
                    if let Some(&v) = live.iter().nth((rng.next() as usize) % (live.len().max(1))) {
                        live.remove(&v);
                    }
                }
            }
        }
    }
}

#[test]
fn collision_is_share_only_for_same_handler_and_null_context() {
    let mut rng = Rng::new(7);
    for _ in 0..10_000 {
        let have = (rng.next() % 2 == 0).then(|| rng.next() % 3);
        let want = (rng.next() % 4 != 0).then(|| rng.next() % 3);
        let null_ctx = rng.next() % 2 == 0;
        let got = on_collision(have, null_ctx, want);
        let expect = match want {
            None => Collision::Busy,
            Some(w) if have == Some(w) && null_ctx => Collision::Share,
            Some(_) => Collision::Mismatch,
        };
        assert_eq!(got, expect, "{have:?} {null_ctx} {want:?}");
    }
}
