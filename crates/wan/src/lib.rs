//! longhaul-wan: the userspace link emulator of longhaul's data plane.
//!
//! The link itself is `longhaul_link`, the model the simulator uses too. Around it:
//! `packet` reads what a frame stands for on the wire and cuts super-packets; `arena`
//! holds frames while the link does; `sched` sets where and how a thread runs; `engine` moves them between a `Device`'s two ends and
//! keeps the record `health` answers from; `tun` is the device on real TUN devices and
//! `control` the socket that reconfigures and questions a running emulator. `traffic` is the testbed's real UDP
//! cross-traffic, a paced sender and a counting sink: its schedule and its counting are
//! pure, its sockets are shell. `echo` is the jitter suite's TCP round-trip probe and its
//! server: its framing and statistics are pure, its sockets are shell.

pub mod arena;
pub mod clock;
pub mod config;
pub mod control;
pub mod echo;
pub mod encryptor;
pub mod engine;
pub mod health;
pub mod packet;
pub mod sched;
pub mod steer;
pub mod traffic;
pub mod tun;
pub mod wake;
