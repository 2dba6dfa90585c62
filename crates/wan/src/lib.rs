//! longhaul-wan: the userspace link emulator of longhaul's data plane.
//!
//! The pure core (`config`, `packet`, `loss`, `link`) takes packets and instants and
//! gives back packets and instants; the shell (`tun`, `control`, `engine`) opens the TUN
//! devices, keeps time and moves the bytes. `traffic` is the testbed's real UDP
//! cross-traffic, a paced sender and a counting sink: its schedule and its counting are
//! pure, its sockets are shell. `echo` is the jitter suite's TCP round-trip probe and its
//! server: its framing and statistics are pure, its sockets are shell.

pub mod clock;
pub mod config;
pub mod link;
pub mod loss;
pub mod packet;

pub mod control;
pub mod echo;
pub mod engine;
pub mod traffic;
pub mod tun;
