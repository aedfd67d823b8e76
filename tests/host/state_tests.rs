// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The connection state machine against the transition lists of cm.c (one table per input,
//! written from `ib_send_cm_*()`, the `cm_*_handler()`s and `cm_destroy_id()`), over every
//! (state, LAP state, input) pair: an input accepted in a state must land where cm.c lands
//! and do what cm.c does, and every other pair must be refused the way cm.c refuses it.

use crate::logic::qp_attr::{self, Facts, QpType, Target};
use crate::logic::state::{Event, Input, Lap, MsgKind, Out, Refusal, State};
use crate::logic::table::{step, Action, OnFail};
use crate::logic::timeout;
use State::*;

/// All inputs with every flag combination.
pub(crate) fn inputs() -> Vec<Input> {
    let mut v = vec![
        Input::SendReq,
        Input::SendRep,
        Input::SendRtu,
        Input::SendDreq,
        Input::SendDrep,
        Input::SendRej,
        Input::SendMra { delay: false },
        Input::SendMra { delay: true },
        Input::SendSidrReq,
        Input::SendSidrRep,
        Input::NotifyEstablished,
        Input::NotifyPathMig,
        Input::UserEstablished,
        Input::RecvRep,
        Input::RecvDupRep,
        Input::RecvDupReq,
        Input::RecvRtu,
        Input::RecvDreq,
        Input::RecvDrep,
        Input::RecvRej { stale: false },
        Input::RecvRej { stale: true },
        Input::RecvMra {
            mraed: MsgKind::Req,
        },
        Input::RecvMra {
            mraed: MsgKind::Rep,
        },
        Input::RecvMra {
            mraed: MsgKind::Other,
        },
        Input::RecvSidrRep,
        Input::RecvLap,
        Input::RecvApr,
        Input::TimewaitExpired,
    ];
    for e in [false, true] {
        for x in [false, true] {
            v.push(Input::Destroy {
                enomem: e,
                xrc_tgt: x,
            });
        }
    }
    for s in State::ALL {
        v.push(Input::SendFailed { sent_in: s });
    }
    v
}

/// What cm.c does, written out per input: `Some(next state)` where the input is accepted
/// (LAP state UNINIT), or the refusal.
fn expected(state: State, input: Input) -> Result<State, Refusal> {
    use Refusal::*;
    let api = |ok: &[State], next: State| {
        if ok.contains(&state) {
            Ok(next)
        } else {
            Err(Invalid)
        }
    };
    match input {
        Input::SendReq => api(&[Idle], ReqSent),
        Input::SendRep => api(&[ReqRcvd, MraReqSent], RepSent),
        Input::SendRtu => api(&[RepRcvd, MraRepSent], Established),
        Input::SendDreq => api(&[Established], DreqSent),
        Input::SendDrep => api(&[DreqRcvd], Timewait),
        Input::SendRej => match state {
            ReqSent | MraReqRcvd | ReqRcvd | MraReqSent | RepRcvd | MraRepSent => Ok(Idle),
            RepSent | MraRepRcvd => Ok(Timewait),
            _ => Err(Invalid),
        },
        Input::SendMra { .. } => match state {
            ReqRcvd => Ok(MraReqSent),
            RepRcvd => Ok(MraRepSent),
            _ => Err(Invalid),
        },
        Input::SendSidrReq => api(&[Idle], SidrReqSent),
        Input::SendSidrRep => api(&[SidrReqRcvd], Idle),
        Input::NotifyEstablished => match state {
            RepSent | MraRepRcvd => Ok(Established),
            Established => Err(IsConn),
            _ => Err(Invalid),
        },
        Input::NotifyPathMig => api(&[Established], Established),
        Input::UserEstablished => {
            if state == Established {
                Ok(Established)
            } else {
                Err(Ignore)
            }
        }
        Input::Destroy { .. } => Ok(Idle),
        Input::RecvRep => match state {
            ReqSent | MraReqRcvd => Ok(RepRcvd),
            _ => Err(Ignore),
        },
        Input::RecvDupRep => match state {
            Established | MraRepSent => Ok(state),
            _ => Err(Duplicate),
        },
        Input::RecvDupReq => match state {
            MraReqSent | Timewait => Ok(state),
            _ => Err(Duplicate),
        },
        Input::RecvRtu => match state {
            RepSent | MraRepRcvd => Ok(Established),
            _ => Err(Duplicate),
        },
        Input::RecvDreq => match state {
            RepSent | DreqSent | MraRepRcvd | Established => Ok(DreqRcvd),
            Timewait => Ok(Timewait),
            DreqRcvd => Err(Duplicate),
            _ => Err(Ignore),
        },
        Input::RecvDrep => match state {
            DreqSent | DreqRcvd => Ok(Timewait),
            _ => Err(Ignore),
        },
        Input::RecvRej { stale } => match state {
            ReqSent | MraReqRcvd | RepSent | MraRepRcvd | ReqRcvd | MraReqSent => {
                Ok(if stale { Timewait } else { Idle })
            }
            DreqSent | RepRcvd | MraRepSent | Established => Ok(Timewait),
            _ => Err(Ignore),
        },
        Input::RecvMra { mraed } => match (state, mraed) {
            (ReqSent, MsgKind::Req) => Ok(MraReqRcvd),
            (RepSent, MsgKind::Rep) => Ok(MraRepRcvd),
            (MraReqRcvd | MraRepRcvd, _) => Err(Duplicate),
            _ => Err(Ignore),
        },
        Input::RecvSidrRep => {
            if state == SidrReqSent {
                Ok(Idle)
            } else {
                Err(Ignore)
            }
        }
        Input::RecvLap => {
            if state == Established {
                Ok(Established)
            } else {
                Err(Ignore)
            }
        }
        // Only an id with a LAP outstanding takes an APR, and no LAP can be sent.
        Input::RecvApr => Err(Ignore),
        Input::SendFailed { sent_in } if sent_in != state => Err(Ignore),
        Input::SendFailed { .. } => match state {
            ReqSent | MraReqRcvd | RepSent | MraRepRcvd | SidrReqSent => Ok(Idle),
            DreqSent => Ok(Timewait),
            _ => Err(Ignore),
        },
        Input::TimewaitExpired => {
            if state == Timewait {
                Ok(Idle)
            } else {
                Err(Ignore)
            }
        }
    }
}

#[test]
fn every_state_and_input_pair_matches_cm_c() {
    let mut checked = 0;
    for s in State::ALL {
        for i in inputs() {
            let got = step(s, Lap::Uninit, i).map(|st| st.next);
            assert_eq!(got, expected(s, i), "state {s:?}, input {i:?}");
            checked += 1;
        }
    }
    assert_eq!(checked, 16 * (28 + 4 + 16));
}

fn actions(s: State, i: Input) -> Vec<Action> {
    step(s, Lap::Uninit, i).unwrap().actions.iter().collect()
}

#[test]
fn the_events_delivered_are_cm_c_s() {
    let ev = |s, i| {
        actions(s, i).into_iter().find_map(|a| match a {
            Action::Deliver(e) => Some(e),
            _ => None,
        })
    };
    assert_eq!(ev(ReqSent, Input::RecvRep), Some(Event::RepReceived));
    assert_eq!(ev(RepSent, Input::RecvRtu), Some(Event::RtuReceived));
    assert_eq!(ev(Established, Input::RecvDreq), Some(Event::DreqReceived));
    assert_eq!(ev(DreqSent, Input::RecvDrep), Some(Event::DrepReceived));
    assert_eq!(
        ev(Timewait, Input::TimewaitExpired),
        Some(Event::TimewaitExit)
    );
    assert_eq!(
        ev(
            ReqSent,
            Input::RecvMra {
                mraed: MsgKind::Req
            }
        ),
        Some(Event::MraReceived)
    );
    assert_eq!(
        ev(RepRcvd, Input::RecvRej { stale: false }),
        Some(Event::RejReceived)
    );
    assert_eq!(
        ev(SidrReqSent, Input::RecvSidrRep),
        Some(Event::SidrRepReceived)
    );
    assert_eq!(
        ev(ReqSent, Input::SendFailed { sent_in: ReqSent }),
        Some(Event::ReqError)
    );
    assert_eq!(
        ev(
            MraRepRcvd,
            Input::SendFailed {
                sent_in: MraRepRcvd
            }
        ),
        Some(Event::RepError)
    );
    assert_eq!(
        ev(DreqSent, Input::SendFailed { sent_in: DreqSent }),
        Some(Event::DreqError)
    );
    assert_eq!(
        ev(
            SidrReqSent,
            Input::SendFailed {
                sent_in: SidrReqSent
            }
        ),
        Some(Event::SidrReqError)
    );
    assert_eq!(
        ev(Established, Input::UserEstablished),
        Some(Event::UserEstablished)
    );
    // The ABI values of enum ib_cm_event_type.
    assert_eq!(
        [
            Event::ReqError,
            Event::RepError,
            Event::DreqReceived,
            Event::SidrRepReceived
        ]
        .map(Event::raw),
        [0, 2, 7, 17]
    );
    // API calls never deliver events.
    for s in State::ALL {
        for i in [
            Input::SendReq,
            Input::SendRep,
            Input::SendRtu,
            Input::SendDreq,
            Input::SendDrep,
            Input::SendRej,
        ] {
            if let Ok(st) = step(s, Lap::Uninit, i) {
                assert!(
                    !st.actions.iter().any(|a| matches!(a, Action::Deliver(_))),
                    "{s:?} {i:?}"
                );
            }
        }
    }
}

#[test]
fn destroy_sends_what_cm_destroy_id_sends() {
    let d = Input::Destroy {
        enomem: false,
        xrc_tgt: false,
    };
    let sends = |s| -> Vec<Out> {
        actions(s, d)
            .into_iter()
            .filter_map(|a| {
                if let Action::Send(o) = a {
                    Some(o)
                } else {
                    None
                }
            })
            .collect()
    };
    // REQ_SENT: cancel, then REJ TIMEOUT (message OTHER, our comm ID).
    assert_eq!(actions(ReqSent, d)[0], Action::Cancel);
    assert_eq!(
        sends(ReqSent),
        [Out::Rej {
            msg: MsgKind::Other,
            zero_local_id: false
        }]
    );
    assert_eq!(
        sends(ReqRcvd),
        [Out::Rej {
            msg: MsgKind::Req,
            zero_local_id: true
        }]
    );
    assert_eq!(
        sends(MraReqSent),
        [Out::Rej {
            msg: MsgKind::Req,
            zero_local_id: false
        }]
    );
    assert_eq!(
        sends(RepRcvd),
        [Out::Rej {
            msg: MsgKind::Rep,
            zero_local_id: false
        }]
    );
    assert_eq!(
        sends(RepSent),
        [Out::Rej {
            msg: MsgKind::Other,
            zero_local_id: false
        }]
    );
    assert!(actions(RepSent, d).contains(&Action::EnterTimewait));
    assert_eq!(sends(Established), [Out::Dreq]);
    assert_eq!(
        actions(Established, d),
        [
            Action::Send(Out::Dreq),
            Action::Cancel,
            Action::EnterTimewait
        ]
    );
    assert_eq!(sends(DreqRcvd), [Out::Drep]);
    assert_eq!(sends(SidrReqRcvd), [Out::SidrRep]);
    assert_eq!(actions(SidrReqSent, d), [Action::Cancel]);
    assert!(sends(Timewait).is_empty() && sends(Idle).is_empty() && sends(DreqSent).is_empty());
    // -ENOMEM from a REQ handler: no REJ, so the peer retries.
    assert_eq!(
        actions(
            ReqRcvd,
            Input::Destroy {
                enomem: true,
                xrc_tgt: false
            }
        ),
        [Action::ResetRemote]
    );
    // An established XRC target goes to IDLE silently.
    assert!(actions(
        Established,
        Input::Destroy {
            enomem: false,
            xrc_tgt: true
        }
    )
    .is_empty());
}

#[test]
fn failure_policies_follow_cm_c() {
    let pol = |s, i| step(s, Lap::Uninit, i).unwrap().on_fail;
    // The state changes only once the MAD is posted.
    for (s, i) in [
        (Idle, Input::SendReq),
        (ReqRcvd, Input::SendRep),
        (RepRcvd, Input::SendRtu),
        (ReqRcvd, Input::SendMra { delay: false }),
        (SidrReqRcvd, Input::SendSidrRep),
        (Idle, Input::SendSidrReq),
    ] {
        assert_eq!(pol(s, i), OnFail::Keep, "{s:?} {i:?}");
    }
    // REJ and DREP change state first; a DREQ that cannot be posted enters timewait.
    assert_eq!(pol(ReqRcvd, Input::SendRej), OnFail::Proceed);
    assert_eq!(pol(DreqRcvd, Input::SendDrep), OnFail::Proceed);
    assert_eq!(pol(Established, Input::SendDreq), OnFail::Timewait);
    // The delayed MRA sends nothing but still changes state.
    assert!(actions(ReqRcvd, Input::SendMra { delay: true }).is_empty());
}

/// `cm_lap_handler()` and `cm_apr_handler()` over every (state, LAP state) pair.
#[test]
fn lap_and_apr_over_every_state_and_lap_state() {
    for s in State::ALL {
        for l in Lap::ALL {
            let lap = step(s, l, Input::RecvLap);
            match (s, l) {
                (Established, Lap::Uninit | Lap::Idle) => {
                    let st = lap.unwrap();
                    assert_eq!((st.next, st.lap), (Established, Lap::Rcvd));
                    let a: Vec<Action> = st.actions.iter().collect();
                    assert_eq!(a, [Action::SaveTid, Action::Deliver(Event::LapReceived)]);
                }
                (Established, Lap::MraLapSent) => {
                    let st = lap.unwrap();
                    assert_eq!((st.next, st.lap), (Established, Lap::MraLapSent));
                    let a: Vec<Action> = st.actions.iter().collect();
                    assert_eq!(
                        a,
                        [
                            Action::CountDuplicate,
                            Action::Send(Out::ResendMra(MsgKind::Other))
                        ]
                    );
                }
                (Established, Lap::Rcvd) => assert_eq!(lap, Err(Refusal::Duplicate)),
                _ => assert_eq!(lap, Err(Refusal::Ignore), "LAP in {s:?}/{l:?}"),
            }
            let apr = step(s, l, Input::RecvApr);
            match (s, l) {
                (Established, Lap::Sent | Lap::MraLapRcvd) => {
                    let st = apr.unwrap();
                    assert_eq!((st.next, st.lap), (Established, Lap::Idle));
                    let a: Vec<Action> = st.actions.iter().collect();
                    assert_eq!(a, [Action::Cancel, Action::Deliver(Event::AprReceived)]);
                }
                _ => assert_eq!(apr, Err(Refusal::Ignore), "APR in {s:?}/{l:?}"),
            }
        }
    }
    // After the LAP, the id's MRA answers it (MRA_LAP_SENT), and a REJ no longer ends the
    // connection (cm.c only takes one with LAP UNINIT or SENT).
    assert_eq!(
        step(Established, Lap::Rcvd, Input::RecvRej { stale: false }),
        Err(Refusal::Ignore)
    );
    assert_eq!(Event::LapReceived.raw(), 13);
    assert_eq!(Event::AprReceived.raw(), 14);
}

#[test]
fn lap_states_gate_what_cm_c_gates() {
    // MRA after a LAP received: ESTABLISHED stays, LAP state MRA_LAP_SENT.
    let st = step(Established, Lap::Rcvd, Input::SendMra { delay: false }).unwrap();
    assert_eq!((st.next, st.lap), (Established, Lap::MraLapSent));
    assert_eq!(
        step(Established, Lap::Uninit, Input::SendMra { delay: false }),
        Err(Refusal::Invalid)
    );
    // Path migration only from UNINIT or IDLE.
    assert_eq!(
        step(Established, Lap::Uninit, Input::NotifyPathMig)
            .unwrap()
            .lap,
        Lap::Idle
    );
    assert_eq!(
        step(Established, Lap::Rcvd, Input::NotifyPathMig),
        Err(Refusal::Invalid)
    );
    // A REJ in ESTABLISHED counts only with LAP UNINIT or SENT.
    assert_eq!(
        step(Established, Lap::Idle, Input::RecvRej { stale: false }),
        Err(Refusal::Ignore)
    );
    assert!(step(Established, Lap::Sent, Input::RecvRej { stale: false }).is_ok());
    // A second MRA for our LAP is a duplicate.
    assert_eq!(
        step(
            Established,
            Lap::MraLapRcvd,
            Input::RecvMra {
                mraed: MsgKind::Other
            }
        ),
        Err(Refusal::Duplicate)
    );
}

#[test]
fn timeouts_are_cm_c_s() {
    assert_eq!(
        (
            timeout::conv_ms(0),
            timeout::conv_ms(8),
            timeout::conv_ms(9),
            timeout::conv_ms(20)
        ),
        (1, 1, 2, 4096)
    );
    // The rxe worked example: ACK delay 15, packet life 16 -> 17; timewait conv(17) = 512 ms;
    // REQ wait 2 * 256 + 4096 = 4608 ms.
    assert_eq!(timeout::ack_timeout(15, 16), 17);
    assert_eq!(timeout::conv_ms(17), 512);
    assert_eq!(timeout::req_wait_ms(16, 20), 4608);
    assert_eq!(timeout::after_rep(15, 17), 17);
    // Rounding up only when the other term is within one.
    assert_eq!(timeout::ack_timeout(10, 3), 10);
    assert_eq!(timeout::ack_timeout(10, 8), 11);
    assert_eq!(timeout::ack_timeout(3, 10), 11);
    assert_eq!(timeout::ack_timeout(31, 31), 31);
    assert_eq!(timeout::mra_wait_ms(24, 17), 65536 + 512);
}

#[test]
fn destroy_waits_the_ids_budget() {
    // 6.19's rule: retries x timeout x 5/4. rdma_cm's defaults (15 retries, response timeout
    // 20, on rxe's path life 16 -> 4608 ms per try) give 86.4 s.
    let floor = timeout::DESTROY_WAIT_FLOOR_MS;
    assert_eq!(timeout::destroy_wait_ms(15, 4608), 86_400);
    assert_eq!(timeout::destroy_wait_ms(2, 40), floor);
    assert_eq!(timeout::destroy_wait_ms(8, 400), 4000);
    // An id that never sent has no budget: the floor, not 0 (a report at every wakeup).
    assert_eq!(timeout::destroy_wait_ms(0, 0), floor);
    assert_eq!(timeout::destroy_wait_ms(15, 0), floor);
    // A peer's REQ sets a passive id's budget: the report comes after 5 minutes at most, and
    // the largest inputs saturate instead of wrapping.
    let cap = timeout::DESTROY_WAIT_CAP_MS;
    assert_eq!(timeout::destroy_wait_ms(15, 240_000), 4_500_000.min(cap));
    assert_eq!(timeout::destroy_wait_ms(u8::MAX, u32::MAX), cap);
}

#[test]
fn qp_attr_masks_are_cm_c_s() {
    use qp_attr::mask::*;
    let f = |state, qp_type| Facts {
        state,
        lap: Lap::Uninit,
        qp_type,
        alt_dlid: false,
        alt_port: false,
    };
    assert_eq!(
        qp_attr::plan(Target::Init, &f(ReqSent, QpType::Rc)),
        Some(STATE | ACCESS_FLAGS | PKEY_INDEX | PORT)
    );
    assert_eq!(qp_attr::plan(Target::Init, &f(Idle, QpType::Rc)), None);
    assert_eq!(qp_attr::plan(Target::Rtr, &f(ReqSent, QpType::Rc)), None);
    let rtr = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN;
    assert_eq!(
        qp_attr::plan(Target::Rtr, &f(ReqRcvd, QpType::Rc)),
        Some(rtr | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER)
    );
    assert_eq!(
        qp_attr::plan(Target::Rtr, &f(RepRcvd, QpType::Uc)),
        Some(rtr)
    );
    assert_eq!(
        qp_attr::plan(Target::Rtr, &f(RepRcvd, QpType::XrcTgt)),
        Some(rtr | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER)
    );
    assert_eq!(
        qp_attr::plan(Target::Rtr, &f(RepRcvd, QpType::XrcIni)),
        Some(rtr)
    );
    assert_eq!(
        qp_attr::plan(Target::Rts, &f(Established, QpType::Rc)),
        Some(STATE | SQ_PSN | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | TIMEOUT)
    );
    assert_eq!(
        qp_attr::plan(Target::Rts, &f(Established, QpType::XrcTgt)),
        Some(STATE | SQ_PSN | TIMEOUT)
    );
    assert_eq!(
        qp_attr::plan(Target::Rts, &f(Established, QpType::Uc)),
        Some(STATE | SQ_PSN)
    );
    assert_eq!(qp_attr::plan(Target::Rts, &f(DreqSent, QpType::Rc)), None);
    let mut alt = f(RepRcvd, QpType::Uc);
    alt.alt_dlid = true;
    assert_eq!(
        qp_attr::plan(Target::Rts, &alt),
        Some(STATE | SQ_PSN | PATH_MIG_STATE)
    );
    assert_eq!(qp_attr::plan(Target::Rtr, &alt), Some(rtr));
    alt.alt_port = true;
    assert_eq!(qp_attr::plan(Target::Rtr, &alt), Some(rtr | ALT_PATH));
    alt.lap = Lap::Idle;
    assert_eq!(
        qp_attr::plan(Target::Rts, &alt),
        Some(ALT_PATH | PATH_MIG_STATE)
    );
}

/// The connection address handle (`ah.rs`, design A): made by the REQ (active) or the REP
/// (passive) and kept until the id is back in IDLE, so every later MAD of the connection goes
/// on it; listeners and SIDR ids hold none.
#[test]
fn connection_handle_lives_from_req_or_rep_until_idle() {
    use crate::logic::state::keeps_conn_ah;
    let dropped: Vec<State> = State::ALL
        .iter()
        .copied()
        .filter(|s| !keeps_conn_ah(*s))
        .collect();
    assert_eq!(dropped, vec![Idle, Listen, SidrReqSent, SidrReqRcvd]);
    // The REQ and the REP are sent into states that keep the handle they make.
    let req = step(Idle, Lap::Idle, Input::SendReq).unwrap();
    assert!(req.actions.iter().any(|a| a == Action::Send(Out::Req)));
    assert!(keeps_conn_ah(req.next));
    for s in [ReqRcvd, MraReqSent] {
        let rep = step(s, Lap::Idle, Input::SendRep).unwrap();
        assert!(rep.actions.iter().any(|a| a == Action::Send(Out::Rep)));
        assert!(keeps_conn_ah(rep.next));
    }
    // The handle outlives the handshake: the RTU, the DREQ and the DREP go on it, and it lives
    // through timewait (a retransmitted DREQ is answered on it).
    let rtu = step(RepRcvd, Lap::Idle, Input::SendRtu).unwrap();
    assert!(keeps_conn_ah(rtu.next));
    let dreq = step(Established, Lap::Idle, Input::SendDreq).unwrap();
    assert!(keeps_conn_ah(dreq.next));
    // Every input that ends a connection, from any state that keeps a handle, leads to IDLE
    // (handle dropped) or to TIMEWAIT (kept until its expiry leads to IDLE).
    for s in State::ALL.into_iter().filter(|s| keeps_conn_ah(*s)) {
        for i in inputs() {
            if let Ok(st) = step(s, Lap::Idle, i) {
                if !keeps_conn_ah(st.next) {
                    assert_eq!(st.next, Idle, "{s:?} --{i:?}--> {:?}", st.next);
                }
            }
        }
    }
    let exit = step(Timewait, Lap::Idle, Input::TimewaitExpired).unwrap();
    assert!(!keeps_conn_ah(exit.next));
}

/// What cm.c does for an accepted input (LAP state UNINIT), written per handler from cm.c:
/// the actions in the order cm.c takes them, and what a failing fallible one does.
fn expected_actions(state: State, input: Input) -> (Vec<Action>, OnFail) {
    use Action::*;
    // Whether the id has a tracked MAD that a REJ or DREQ cancels (cm_rej_handler,
    // cm_dreq_handler).
    let tracked = matches!(
        state,
        ReqSent | MraReqRcvd | RepSent | MraRepRcvd | DreqSent
    );
    // cm_format_rej: the message a REJ from `state` rejects.
    let rej = |s: State| match s {
        ReqRcvd => Out::Rej {
            msg: MsgKind::Req,
            zero_local_id: true,
        },
        MraReqSent => Out::Rej {
            msg: MsgKind::Req,
            zero_local_id: false,
        },
        RepRcvd | MraRepSent => Out::Rej {
            msg: MsgKind::Rep,
            zero_local_id: false,
        },
        _ => Out::Rej {
            msg: MsgKind::Other,
            zero_local_id: false,
        },
    };
    // cm_send_rej_locked: back to IDLE before the REJ, or timewait from REP_SENT /
    // MRA_REP_RCVD; the state change stands if the REJ cannot be sent.
    let send_rej = |s: State| {
        let leave = if matches!(s, RepSent | MraRepRcvd) {
            EnterTimewait
        } else {
            ResetRemote
        };
        vec![leave, Send(rej(s))]
    };
    match input {
        // ib_send_cm_*: post, then the new state (nothing changes if the post fails).
        Input::SendReq => (vec![Send(Out::Req)], OnFail::Keep),
        Input::SendSidrReq => (vec![Send(Out::SidrReq)], OnFail::Keep),
        Input::SendRep => (vec![Send(Out::Rep)], OnFail::Keep),
        Input::SendRtu => (vec![Send(Out::Rtu)], OnFail::Keep),
        // cm_send_dreq_locked: a DREQ that cannot be posted enters timewait.
        Input::SendDreq => (vec![Send(Out::Dreq)], OnFail::Timewait),
        // cm_send_drep_locked: timewait first, then the DREP.
        Input::SendDrep => (vec![EnterTimewait, Send(Out::Drep)], OnFail::Proceed),
        Input::SendRej => (send_rej(state), OnFail::Proceed),
        Input::SendMra { delay: true } => (vec![], OnFail::Keep),
        Input::SendMra { delay: false } => {
            let k = if state == ReqRcvd {
                MsgKind::Req
            } else {
                MsgKind::Rep
            };
            (vec![Send(Out::Mra(k))], OnFail::Keep)
        }
        // cm_send_sidr_rep_locked: IDLE and out of the SIDR table only once posted.
        Input::SendSidrRep => (vec![Send(Out::SidrRep), ResetRemote], OnFail::Keep),
        // cm_establish: ESTABLISHED even if the work cannot be queued (device going down).
        Input::NotifyEstablished => (vec![QueueEstablished], OnFail::Proceed),
        Input::NotifyPathMig => (vec![Migrate], OnFail::Keep),
        // cm_establish_handler: the REP's retransmissions end.
        Input::UserEstablished => (vec![Cancel, Deliver(Event::UserEstablished)], OnFail::Keep),
        // cm_destroy_id, case by case.
        Input::Destroy { enomem, xrc_tgt } => {
            let a = match state {
                Idle | Listen | Timewait => vec![],
                SidrReqSent => vec![Cancel],
                SidrReqRcvd => vec![Send(Out::SidrRep), ResetRemote],
                // The tracked REQ or REP is cancelled first.
                ReqSent | MraReqRcvd | RepSent | MraRepRcvd => {
                    let mut v = vec![Cancel];
                    v.extend(send_rej(state));
                    v
                }
                ReqRcvd if enomem => vec![ResetRemote],
                ReqRcvd | MraReqSent | RepRcvd | MraRepSent => send_rej(state),
                Established if xrc_tgt => vec![],
                // The DREQ, then DREQ_SENT's case: cancel it and enter timewait.
                Established => vec![Send(Out::Dreq), Cancel, EnterTimewait],
                DreqSent => vec![Cancel, EnterTimewait],
                DreqRcvd => vec![EnterTimewait, Send(Out::Drep)],
            };
            (a, OnFail::Proceed)
        }
        // cm_rep_handler: the remote keys, the REP's fields, then the REQ's wait ends.
        Input::RecvRep => (
            vec![InsertRemote, AcceptRep, Cancel, Deliver(Event::RepReceived)],
            OnFail::Keep,
        ),
        // cm_dup_rep_handler / cm_dup_req_handler: counted, then the answer again.
        Input::RecvDupRep => {
            let out = if state == Established {
                Out::ResendRtu
            } else {
                Out::ResendMra(MsgKind::Rep)
            };
            (vec![CountDuplicate, Send(out)], OnFail::Keep)
        }
        Input::RecvDupReq => {
            let out = if state == Timewait {
                Out::ResendRejStale
            } else {
                Out::ResendMra(MsgKind::Req)
            };
            (vec![CountDuplicate, Send(out)], OnFail::Keep)
        }
        // cm_rtu_handler.
        Input::RecvRtu => (vec![Cancel, Deliver(Event::RtuReceived)], OnFail::Keep),
        // cm_dreq_handler: in timewait a retransmission gets the DREP again.
        Input::RecvDreq if state == Timewait => {
            (vec![CountDuplicate, Send(Out::ResendDrep)], OnFail::Keep)
        }
        Input::RecvDreq => {
            let mut v = if tracked { vec![Cancel] } else { vec![] };
            v.extend([SaveTid, Deliver(Event::DreqReceived)]);
            (v, OnFail::Keep)
        }
        // cm_drep_handler: timewait, then the DREQ's wait ends.
        Input::RecvDrep => (
            vec![EnterTimewait, Cancel, Deliver(Event::DrepReceived)],
            OnFail::Keep,
        ),
        // cm_rej_handler.
        Input::RecvRej { stale } => {
            let mut v = if tracked { vec![Cancel] } else { vec![] };
            let to_timewait =
                stale || matches!(state, DreqSent | RepRcvd | MraRepSent | Established);
            v.push(if to_timewait {
                EnterTimewait
            } else {
                ResetRemote
            });
            v.push(Deliver(Event::RejReceived));
            (v, OnFail::Keep)
        }
        // cm_mra_handler: the tracked MAD waits longer (fails if it is gone).
        Input::RecvMra { .. } => (
            vec![ModifyTimeout, Deliver(Event::MraReceived)],
            OnFail::Keep,
        ),
        // cm_sidr_rep_handler.
        Input::RecvSidrRep => (vec![Cancel, Deliver(Event::SidrRepReceived)], OnFail::Keep),
        // cm_lap_handler (the addresses are replaced by the kernel side).
        Input::RecvLap => (vec![SaveTid, Deliver(Event::LapReceived)], OnFail::Keep),
        Input::RecvApr => (vec![], OnFail::Keep),
        // cm_process_send_error.
        Input::SendFailed { .. } => {
            let a = match state {
                ReqSent | MraReqRcvd => vec![ResetRemote, Deliver(Event::ReqError)],
                RepSent | MraRepRcvd => vec![ResetRemote, Deliver(Event::RepError)],
                DreqSent => vec![EnterTimewait, Deliver(Event::DreqError)],
                _ => vec![Deliver(Event::SidrReqError)],
            };
            (a, OnFail::Keep)
        }
        // cm_timewait_handler.
        Input::TimewaitExpired => (vec![Deliver(Event::TimewaitExit)], OnFail::Keep),
    }
}

#[test]
fn every_accepted_pair_acts_as_cm_c() {
    let mut checked = 0;
    for s in State::ALL {
        for i in inputs() {
            if expected(s, i).is_err() {
                continue;
            }
            let st = step(s, Lap::Uninit, i).unwrap();
            let got: Vec<Action> = st.actions.iter().collect();
            assert_eq!(
                (got, st.on_fail),
                expected_actions(s, i),
                "state {s:?}, input {i:?}"
            );
            checked += 1;
        }
    }
    // Every pair that `expected` accepts.
    assert_eq!(checked, 135);
}

#[test]
fn own_rejs_carry_cm_c_s_reason() {
    use crate::logic::state::{own_rej_reason, REJ_TIMEOUT};
    // cm_destroy_id: REJ TIMEOUT (with the node GUID) from REQ_SENT and MRA_REQ_RCVD,
    // CONSUMER_DEFINED (28) from the other states that reject.
    assert_eq!(REJ_TIMEOUT, 4);
    for s in State::ALL {
        let want = if matches!(s, ReqSent | MraReqRcvd) {
            4
        } else {
            28
        };
        assert_eq!(own_rej_reason(s), want, "{s:?}");
    }
}

#[test]
fn the_table_built_from_per_input_decisions_is_the_old_one() {
    // `table::step` is assembled from `logic::input`, which the handlers use directly; the
    // table the module once executed must say the same for every case, refusals included.
    let mut checked = 0;
    for s in State::ALL {
        for lap in Lap::ALL {
            for i in inputs() {
                assert_eq!(
                    step(s, lap, i),
                    crate::old_table::old_step(s, lap, i),
                    "state {s:?}, LAP {lap:?}, input {i:?}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 16 * 6 * (28 + 4 + 16));
}

#[test]
fn retry_policy_default_is_cm_c_s() {
    // Off: the MAD layer makes every retry at the message's own timeout.
    let off = timeout::RetryPolicy::default();
    assert!(!off.mra_once);
    for n in 0..=15 {
        assert_eq!(off.linear_retries(n), n);
        assert_eq!(off.reposts(n), 0);
    }
}

#[test]
fn backoff_after_n_linear_retries() {
    let p = timeout::RetryPolicy {
        mra_once: false,
        backoff_after: Some(3),
    };
    assert_eq!((p.linear_retries(15), p.reposts(15)), (3, 12));
    // Fewer retries than the linear part: no backoff at all.
    assert_eq!((p.linear_retries(2), p.reposts(2)), (2, 0));
    let from_first = timeout::RetryPolicy {
        mra_once: false,
        backoff_after: Some(0),
    };
    assert_eq!(
        (from_first.linear_retries(15), from_first.reposts(15)),
        (0, 15)
    );
    // rdma_cm's REQ wait on rxe, 4608 ms, doubles up to the 5 minute ceiling and stays there.
    let mut w = 4608;
    let mut waits = vec![];
    for _ in 0..8 {
        w = timeout::backoff_wait_ms(w);
        waits.push(w);
    }
    assert_eq!(
        waits,
        [9216, 18432, 36864, 73728, 147_456, 294_912, 300_000, 300_000]
    );
    // A wait already past the ceiling is never shortened, and nothing wraps.
    assert_eq!(timeout::backoff_wait_ms(600_000), 600_000);
    assert_eq!(timeout::backoff_wait_ms(u32::MAX), u32::MAX);
    assert_eq!(timeout::backoff_wait_ms(0), 0);
}

#[test]
fn bounds_default_keep_every_value() {
    let b = timeout::Bounds::default();
    for v in 0..=u8::MAX {
        assert_eq!(b.timeout(v), v);
        assert_eq!(b.retries(v), v);
    }
    for ms in [0, 1, 16, 4096, 1 << 23, u32::MAX] {
        assert_eq!(b.timeout_ms(ms), ms);
    }
}

#[test]
fn bounds_clamp_timeouts_and_retries() {
    let b = timeout::Bounds {
        timeout_floor: 18,
        timeout_cap: 22,
        retries_floor: 3,
        retries_cap: 7,
    };
    assert_eq!(b.timeout(0), 18);
    assert_eq!(b.timeout(20), 20);
    assert_eq!(b.timeout(31), 22);
    assert_eq!(b.retries(0), 3);
    assert_eq!(b.retries(5), 5);
    assert_eq!(b.retries(15), 7);
    // In milliseconds: 2^(18-8) = 1024 .. 2^(22-8) = 16384; no wait stays no wait.
    assert_eq!(b.timeout_ms(100), 1024);
    assert_eq!(b.timeout_ms(5000), 5000);
    assert_eq!(b.timeout_ms(100_000), 16384);
    assert_eq!(b.timeout_ms(0), 0);
}

/// The receive bound: nothing dropped without a limit; requests dropped at the limit, every
/// message at twice it, never sooner.
#[test]
fn receive_overload_decisions() {
    use crate::logic::flow;
    use crate::logic::wire::AttrId;
    // No limit: everything is queued, however deep the queue (cm.c).
    for raw in 0x10u16..=0x1a {
        let attr = AttrId::from_wire(raw).unwrap();
        assert!(flow::admit_recv(u32::MAX - 1, 0, attr), "{attr:?}");
    }
    for limit in [1u32, 2, 7, 16384, u32::MAX] {
        for raw in 0x10u16..=0x1a {
            let attr = AttrId::from_wire(raw).unwrap();
            let request = matches!(attr, AttrId::Req | AttrId::SidrReq);
            let bound = if request {
                limit
            } else {
                limit.saturating_mul(2)
            };
            // Counting up from an empty queue with nothing finishing: exactly `bound` are
            // queued, every later one dropped.
            let mut queued = 0u32;
            let mut dropped = 0u32;
            for _ in 0..bound.min(40).saturating_add(5) {
                if flow::admit_recv(queued, limit, attr) {
                    queued += 1;
                } else {
                    dropped += 1;
                }
            }
            assert_eq!(
                queued,
                bound.min(40).saturating_add(5).min(bound),
                "{attr:?} {limit}"
            );
            assert_eq!(dropped > 0, bound <= 40, "{attr:?} {limit}");
            assert!(flow::admit_recv(bound - 1, limit, attr), "{attr:?} {limit}");
            if bound < u32::MAX {
                assert!(!flow::admit_recv(bound, limit, attr), "{attr:?} {limit}");
            }
        }
    }
    // Requests go first, answers keep flowing up to twice the limit.
    assert!(!flow::admit_recv(4, 4, AttrId::Req));
    assert!(!flow::admit_recv(4, 4, AttrId::SidrReq));
    assert!(flow::admit_recv(4, 4, AttrId::Rep));
    assert!(flow::admit_recv(7, 4, AttrId::Dreq));
    assert!(!flow::admit_recv(8, 4, AttrId::Rtu));
}

/// Flow control: which messages wait (answers never), the derived and administered limits,
/// and the admission decision, which keeps order and never exceeds the limit or the backlog.
#[test]
fn flow_control_decisions() {
    use crate::logic::flow::{self, Admit};
    use crate::logic::wire::AttrId;
    let waits = [AttrId::Req, AttrId::Dreq, AttrId::Lap, AttrId::SidrReq];
    for raw in 0x10u16..=0x1a {
        let attr = AttrId::from_wire(raw).unwrap();
        assert_eq!(flow::controlled(attr), waits.contains(&attr), "{attr:?}");
    }
    // ib_core's default recv_queue_size (512) as rxe (1023) and mlx5 (512) report it.
    assert_eq!(flow::derived_limit(1023), 128);
    assert_eq!(flow::derived_limit(512), 128);
    assert_eq!(flow::derived_limit(0), 128);
    assert_eq!(flow::derived_limit(3), 1);
    assert_eq!(flow::derived_limit(1), 1);
    assert_eq!(flow::derived_limit(8192), 2048);
    assert_eq!(flow::derived_limit(16383), 2048);
    assert_eq!(flow::derived_limit(u32::MAX), 1 << 29);
    assert_eq!(flow::limit(-1, 128), Some(128));
    assert_eq!(flow::limit(0, 128), None);
    assert_eq!(flow::limit(5, 128), Some(5));
    // Without a limit everything goes out, unless something still waits (a limit was just
    // lifted): then order is kept.
    assert_eq!(flow::admit(1_000_000, 0, None, 0), Admit::Post);
    assert_eq!(flow::admit(0, 1, None, 10), Admit::Queue);
    assert_eq!(flow::admit(0, 1, None, 1), Admit::Refuse);
    for limit in 1..6u32 {
        for backlog_max in 0..4u32 {
            // A burst of messages with no completion in between: `limit` go out, `backlog_max`
            // wait, the rest are refused.
            let (mut out, mut queued, mut refused) = (0, 0, 0);
            for _ in 0..20 {
                match flow::admit(out, queued, Some(limit), backlog_max) {
                    Admit::Post => out += 1,
                    Admit::Queue => queued += 1,
                    Admit::Refuse => refused += 1,
                }
            }
            assert_eq!(
                (out, queued, refused),
                (limit, backlog_max, 20 - limit - backlog_max)
            );
            // A completion frees one slot: the head of the backlog takes it, and a new message
            // still queues behind the rest.
            out -= 1;
            assert!(flow::may_dequeue(out, Some(limit)));
            assert!(!flow::may_dequeue(out + 1, Some(limit)));
            if backlog_max > 1 {
                assert_eq!(
                    flow::admit(out, queued, Some(limit), backlog_max + 1),
                    Admit::Queue
                );
            }
        }
    }
}

/// The ABI values of the states and LAP states (`enum ib_cm_state`, `enum ib_cm_lap_state` of
/// `<rdma/ib_cm.h>`, written out here): each maps to its state and back, and no other value
/// maps to any.
#[test]
fn state_and_lap_from_abi_values() {
    let states = [
        (0, Idle),
        (1, Listen),
        (2, ReqSent),
        (3, ReqRcvd),
        (4, MraReqSent),
        (5, MraReqRcvd),
        (6, RepSent),
        (7, RepRcvd),
        (8, MraRepSent),
        (9, MraRepRcvd),
        (10, Established),
        (11, DreqSent),
        (12, DreqRcvd),
        (13, Timewait),
        (14, SidrReqSent),
        (15, SidrReqRcvd),
    ];
    for (v, s) in states {
        assert_eq!(State::from_raw(v), Some(s), "state {v}");
        assert_eq!(s.raw(), v, "{s:?}");
    }
    let laps = [
        (0, Lap::Uninit),
        (1, Lap::Idle),
        (2, Lap::Sent),
        (3, Lap::Rcvd),
        (4, Lap::MraLapSent),
        (5, Lap::MraLapRcvd),
    ];
    for (v, l) in laps {
        assert_eq!(Lap::from_raw(v), Some(l), "lap {v}");
        assert_eq!(l.raw(), v, "{l:?}");
    }
    for v in (16..=300).chain([u32::MAX]) {
        assert_eq!(State::from_raw(v), None, "state {v}");
    }
    for v in (6..=300).chain([u32::MAX]) {
        assert_eq!(Lap::from_raw(v), None, "lap {v}");
    }
}
