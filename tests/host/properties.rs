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

/// Model: a device's live set of listeners; random allocations and random removals, with
/// some IDs of the 0x02 range already live ahead of the allocator (as if taken by an earlier
/// allocator of the same device), which it must step over. Each assigned ID is the lowest one
/// above the previous that is not live (the allocator's contract), so: unique among live IDs,
/// inside the 0x02 range, strictly increasing (never reused, never wrapped); and exhaustion is
/// reported exactly when every ID left in the range is live.
#[test]
fn allocator_is_unique_monotonic_and_in_range() {
    let mut skipped = 0u32;
    for seed in 1..100u64 {
        let mut rng = Rng::new(seed);
        let start = if seed % 2 == 0 {
            ASSIGN.get()
        } else {
            ASSIGN_LAST.get() - 300
        };
        let mut alloc = AssignAllocator::starting_at(ServiceId::new(start));
        let mut live: BTreeSet<u64> = BTreeSet::new();
        for _ in 0..40 {
            let v = start + rng.next() % 500;
            if v <= ASSIGN_LAST.get() {
                live.insert(v);
            }
        }
        // The last ID handed out, or the one before the allocator's start.
        let mut prev = start - 1;
        let mut exhausted = false;
        for _ in 0..600 {
            match rng.next() % 3 {
                0 | 1 => match alloc.allocate(|s| live.contains(&s.get())) {
                    Ok(s) => {
                        let s = s.get();
                        assert!(!exhausted, "seed {seed}: allocation after exhaustion");
                        assert!(
                            s >= ASSIGN.get() && s <= ASSIGN_LAST.get(),
                            "seed {seed}: {s:#x}"
                        );
                        assert!(s > prev, "seed {seed}: {s:#x} not above {prev:#x}");
                        assert!(
                            (prev + 1..s).all(|v| live.contains(&v)),
                            "seed {seed}: {s:#x} skipped a free ID above {prev:#x}"
                        );
                        skipped += u32::try_from(s - prev - 1).unwrap();
                        assert!(live.insert(s), "seed {seed}: {s:#x} handed out while live");
                        prev = s;
                    }
                    Err(ServiceIdError::Exhausted) => {
                        assert!(
                            ASSIGN_LAST.get() - prev < 1000,
                            "seed {seed}: exhausted with most of the range unused"
                        );
                        assert!(
                            (prev + 1..=ASSIGN_LAST.get()).all(|v| live.contains(&v)),
                            "seed {seed}: exhausted with a free ID left above {prev:#x}"
                        );
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
    assert!(
        skipped > 0,
        "no sequence made the allocator step over a live ID"
    );
}

// The sharing rule (`on_collision`) is tested through its outcomes, as sequences of listen,
// insert-listen and destroy calls, in `listen_sharing.rs`.
