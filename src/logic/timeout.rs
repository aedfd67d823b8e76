// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The CM's timeout arithmetic.
//!
//! Stands for `cm_convert_to_ms()`, `cm_ack_timeout()` and the wait and retry figures that
//! `ib_send_cm_req()`, `cm_req_handler()`, `cm_mra_handler()` and `cm_enter_timewait()` derive
//! from them in cm.c. IBTA times are 5-bit exponents: 4.096 us x 2^t.

/// The wait after which a destroy still waiting for an id's callbacks is reported, for an id
/// with no retry budget of its own (it never sent a tracked MAD: a listener, an idle id).
pub(crate) const DESTROY_WAIT_FLOOR_MS: u32 = 1000;

/// The longest wait before a destroy still waiting is reported: a passive id's retries and
/// timeout come from the peer's REQ, which could otherwise put the report off for 43 hours.
pub(crate) const DESTROY_WAIT_CAP_MS: u32 = 300_000;

/// How long `ib_destroy_cm_id()` waits for an id's callbacks before it reports the wait, and
/// then again between reports: the id's retry budget plus a quarter, `retries x timeout x 5/4`
/// (the rule 6.19 put in place of cm.c's fixed 10 s), but at least [`DESTROY_WAIT_FLOOR_MS`]
/// (6.19's rule gives 0 for an id that never sent, and so a report at every wakeup) and at
/// most [`DESTROY_WAIT_CAP_MS`].
pub(crate) fn destroy_wait_ms(retries: u8, timeout_ms: u32) -> u32 {
    let budget = u64::from(retries) * u64::from(timeout_ms) * 5 / 4;
    u32::try_from(budget)
        .unwrap_or(u32::MAX)
        .clamp(DESTROY_WAIT_FLOOR_MS, DESTROY_WAIT_CAP_MS)
}

/// Milliseconds of an IBTA time exponent, as cm.c approximates it: `2^max(t - 8, 0)`.
pub(crate) fn conv_ms(t: u8) -> u32 {
    // A 5-bit field on the wire; larger values only come from callers. Cap the shift so the
    // result stays representable (cm.c would shift an int by up to 247 here).
    1u32 << u32::from(t.saturating_sub(8)).min(31)
}

/// The local ACK timeout to advertise for a path (`cm_ack_timeout`): the larger of the CA's
/// ACK delay and the round trip `packet_life_time + 1`, rounded up by one when the other is
/// within a factor of two, capped at 31.
pub(crate) fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let life = i32::from(packet_life_time) + 1;
    let delay = i32::from(ca_ack_delay);
    let t = if life >= delay {
        life + i32::from(delay >= life - 1)
    } else {
        delay + i32::from(life >= delay - 1)
    };
    // CAST-free narrowing: `t` is at most 256 + 1 and is capped below.
    u8::try_from(t.min(31)).unwrap_or(31)
}

/// How long an active side waits for an answer to its REQ before each retry:
/// `2 * conv(packet_life_time) + conv(remote_cm_response_timeout)` (`ib_send_cm_req`).
pub(crate) fn req_wait_ms(packet_life_time: u8, remote_cm_response_timeout: u8) -> u32 {
    conv_ms(packet_life_time)
        .saturating_mul(2)
        .saturating_add(conv_ms(remote_cm_response_timeout))
}

/// The wait after an MRA: the service timeout it announces plus the path's ACK timeout
/// (`cm_mra_handler`).
pub(crate) fn mra_wait_ms(service_timeout: u8, av_timeout: u8) -> u32 {
    conv_ms(service_timeout).saturating_add(conv_ms(av_timeout))
}

/// The ACK timeout of an address once the peer's REP told its target ACK delay
/// (`cm_rep_handler`): `cm_ack_timeout(target_ack_delay, av.timeout - 1)`, with cm.c's u8
/// arithmetic (a timeout of 0 wraps to 255 before the cap).
pub(crate) fn after_rep(target_ack_delay: u8, av_timeout: u8) -> u8 {
    ack_timeout(target_ack_delay, av_timeout.wrapping_sub(1))
}

/// The ACK timeout an address built from a path record gets: `packet_life_time + 1`
/// (`cm_init_av_by_path`).
pub(crate) fn av_timeout(packet_life_time: u8) -> u8 {
    packet_life_time.wrapping_add(1)
}

/// The packet life time a passive side reads from a REQ path's local ACK timeout
/// (`cm_format_path_from_req`: minus one, if above zero).
pub(crate) fn life_from_ack(local_ack_timeout: u8) -> u8 {
    local_ack_timeout.saturating_sub(1)
}

/// The retry policy an administrator may choose (module parameters `mra_wait_once` and
/// `retry_backoff_after`). The default is cm.c's: an MRA's wait applies to every remaining
/// retry, and every retry waits the message's own timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// An MRA stretches only the wait it interrupts; later retries wait the message's own
    /// timeout again.
    pub(crate) mra_once: bool,
    /// After this many retries at the message's own timeout, each further retry waits twice
    /// as long as the one before ([`backoff_wait_ms`]); `None`: never.
    pub(crate) backoff_after: Option<u8>,
}

/// The longest single wait exponential backoff makes (5 minutes), unless the message's own
/// timeout is longer already.
pub(crate) const BACKOFF_MAX_MS: u32 = 300_000;

impl RetryPolicy {
    /// How many of a message's `max_retries` retries the MAD layer makes by itself, at the
    /// message's own timeout; the CM makes the rest ([`Self::reposts`]).
    pub(crate) fn linear_retries(&self, max_retries: u8) -> u8 {
        match self.backoff_after {
            Some(n) => n.min(max_retries),
            None => max_retries,
        }
    }

    /// The retries the CM makes itself, each by posting the message again once the MAD
    /// layer's own ran out: the part of `max_retries` beyond [`Self::linear_retries`].
    pub(crate) fn reposts(&self, max_retries: u8) -> u8 {
        max_retries - self.linear_retries(max_retries)
    }
}

/// The wait of a retry the CM makes itself, after a wait of `prev_ms`: twice as long, at most
/// [`BACKOFF_MAX_MS`] (or `prev_ms`, if longer already).
pub(crate) fn backoff_wait_ms(prev_ms: u32) -> u32 {
    prev_ms.saturating_mul(2).min(BACKOFF_MAX_MS.max(prev_ms))
}

/// Bounds an administrator may put on the CM response timeouts and retry counts that
/// callers pass (module parameters `cm_response_timeout_floor`/`_cap` and
/// `cm_retries_floor`/`_cap`). The default, no bounds, keeps every value as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Least CM response timeout exponent (0: none).
    pub(crate) timeout_floor: u8,
    /// Greatest CM response timeout exponent (31: none).
    pub(crate) timeout_cap: u8,
    /// Least retry count (0: none).
    pub(crate) retries_floor: u8,
    /// Greatest retry count (15: none).
    pub(crate) retries_cap: u8,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            timeout_floor: 0,
            timeout_cap: 31,
            retries_floor: 0,
            retries_cap: 15,
        }
    }
}

/// `v` raised to `floor` and, if there is a cap, lowered to it (the cap wins).
fn bound<T: Ord>(v: T, floor: T, cap: Option<T>) -> T {
    let v = v.max(floor);
    match cap {
        Some(cap) => v.min(cap),
        None => v,
    }
}

impl Bounds {
    /// The timeout cap, unless it is the 5-bit field's largest value (no cap).
    fn timeout_cap(&self) -> Option<u8> {
        (self.timeout_cap < 31).then_some(self.timeout_cap)
    }

    /// A CM response timeout exponent within the bounds. A value above the 5-bit range
    /// stays as given when there is no cap (cm.c masks it on the wire).
    pub(crate) fn timeout(&self, t: u8) -> u8 {
        bound(t, self.timeout_floor, self.timeout_cap())
    }

    /// A timeout in milliseconds (a SIDR_REQ's) within the bounds, as the exponents give
    /// them (a floor of 0 gives 1 ms, below any non-zero timeout). Zero (no wait, no retries)
    /// stays zero.
    pub(crate) fn timeout_ms(&self, ms: u32) -> u32 {
        if ms == 0 {
            return 0;
        }
        bound(
            ms,
            conv_ms(self.timeout_floor),
            self.timeout_cap().map(conv_ms),
        )
    }

    /// A retry count within the bounds. A value above the 4-bit range stays as given when
    /// there is no cap.
    pub(crate) fn retries(&self, n: u8) -> u8 {
        bound(
            n,
            self.retries_floor,
            (self.retries_cap < 15).then_some(self.retries_cap),
        )
    }
}
