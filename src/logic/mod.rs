// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Pure logic of the CM: `core` only, no allocation, no `unsafe`.
//!
//! Every file here is compiled twice: by Kbuild as part of `ib_cm.ko`, and by the host crate
//! under `tests/host` (through `#[path]`), where `cargo test` runs its unit and property tests.
#![forbid(unsafe_code)]

pub(crate) mod deadline_list;
pub(crate) mod flow;
pub(crate) mod input;
pub(crate) mod qp_attr;
pub(crate) mod reject;
pub(crate) mod remote;
pub(crate) mod req_event;
pub(crate) mod service_id;
pub(crate) mod state;
// The generic table is the host tests' form of `input`; the module uses `input` directly.
#[cfg(test)]
pub(crate) mod table;
pub(crate) mod timeout;
pub(crate) mod trace;
pub(crate) mod ttl_slots;
pub(crate) mod wire;
