// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Safe access to path records (`struct sa_path_rec`): the GIDs (a union of byte and word
//! views), the LIDs and the record type (whose layout the inline helpers of `<rdma/ib_sa.h>`
//! know, through `glue.c`), and filling a record from what the pure logic computed.

use crate::{
    av::Av,
    bindings,
    logic::req_event::{PathRecord, SA_EQ},
};

/// The source and destination GIDs of `p`, as bytes.
pub(crate) fn gids(p: &bindings::sa_path_rec) -> ([u8; 16], [u8; 16]) {
    // SAFETY: `raw` is the byte view of the GID union; every byte pattern is valid.
    unsafe { (*p.sgid.raw.as_ref(), *p.dgid.raw.as_ref()) }
}

/// The GID of `g`, as bytes.
pub(crate) fn gid_bytes(g: &bindings::ib_gid) -> [u8; 16] {
    // SAFETY: As in `gids`.
    unsafe { *g.raw.as_ref() }
}

/// The source and destination LIDs of `p`, and whether they are OPA's 32-bit extended LIDs
/// (`path_rec_to_*lid`).
pub(crate) fn lids(p: &bindings::sa_path_rec) -> (u32, u32, bool) {
    let (mut slid, mut dlid, mut ext) = (0u32, 0u32, false);
    // SAFETY: The glue only reads the record; the outputs are ours.
    unsafe {
        bindings::ibcm_glue_path_lids(
            core::ptr::from_ref(p).cast_mut(),
            &mut slid,
            &mut dlid,
            &mut ext,
        )
    };
    (slid, dlid, ext)
}

/// Sets the LIDs of `p` in the layout of its record type (set the type first).
pub(crate) fn set_lids(p: &mut bindings::sa_path_rec, dlid: u32, slid: u32) {
    // SAFETY: Our own record.
    unsafe { bindings::ibcm_glue_path_set_lids(p, dlid, slid) };
}

/// Fills a path record from what the logic computed, its record type from the address `wc_av`
/// the record's MAD came from, then its LIDs (whose layout depends on the type).
pub(crate) fn fill_typed_path(out: &mut bindings::sa_path_rec, p: &PathRecord, wc_av: &Av) {
    fill_path(out, p);
    // SAFETY: Our own record and an initialised attribute (`Av`'s invariant); the type is
    // set before the LIDs.
    unsafe { bindings::ibcm_glue_path_set_type(out, wc_av.attr(), p.opa) };
    set_lids(out, p.dlid, p.slid);
}

/// Fills a path record from what the logic computed (the type and LIDs are set apart).
pub(crate) fn fill_path(out: &mut bindings::sa_path_rec, p: &PathRecord) {
    // SAFETY: `raw` is the byte view of the GID union; any bytes are valid.
    unsafe {
        *out.dgid.raw.as_mut() = p.dgid;
        *out.sgid.raw.as_mut() = p.sgid;
    }
    out.flow_label = p.flow_label.to_be();
    out.hop_limit = p.hop_limit;
    out.traffic_class = p.traffic_class;
    out.reversible = p.reversible;
    out.pkey = p.pkey.to_be();
    out.sl = p.sl;
    out.mtu_selector = SA_EQ;
    out.mtu = p.mtu;
    out.rate_selector = SA_EQ;
    out.rate = p.rate;
    out.packet_life_time_selector = SA_EQ;
    out.packet_life_time = p.packet_life_time;
    out.service_id = p.service_id.to_be();
}
