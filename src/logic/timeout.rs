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
