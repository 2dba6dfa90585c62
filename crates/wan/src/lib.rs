//! longhaul-wan: the userspace link emulator of longhaul's data plane.
//!
//! The pure core (`config`, `packet`, `loss`, `link`) takes packets and instants and
//! gives back packets and instants; the shell (`tun`, `control`, `engine`) opens the TUN
//! devices, keeps time and moves the bytes.

pub mod config;
pub mod link;
pub mod loss;
pub mod packet;

pub mod control;
pub mod engine;
pub mod tun;
