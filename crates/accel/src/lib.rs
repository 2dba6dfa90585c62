//! longhaul's WAN accelerator pair, the open counterpart of the boxes USN tested (Cisco
//! WAAS: TCP flow optimization, data redundancy elimination, Lempel-Ziv compression).
//!
//! `wire` is the versioned session format; `codec` the pure transformation of a
//! direction's bytes (DRE and LZ, with no sockets); `session` the tokio shell that
//! carries many application streams over one session with a credit each; `proxy` the
//! near and far accelerators; `tools` a sender and a window-pinned sink for measuring.

pub mod codec;
pub mod proxy;
pub mod session;
pub mod sockopt;
pub mod tools;
pub mod wire;
