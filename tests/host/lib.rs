// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Host build of the module's pure-logic files: the same sources Kbuild compiles into
//! `ib_cm.ko`, pulled in with `#[path]` so `cargo test` runs their tests on the host.
#![forbid(unsafe_code)]
// The module uses only part of each file's API in any one build.
#![allow(dead_code)]

#[path = "../../src/logic/mod.rs"]
pub mod logic;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod listen_sharing;
#[cfg(test)]
mod old_table;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod wire_tests;
