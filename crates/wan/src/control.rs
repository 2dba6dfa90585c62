//! The control socket: JSON lines in, JSON lines out, over a Unix stream socket.
//!
//! ```text
//! {"op": "stats"}                                   counters and state of both directions
//! {"op": "config"}                                  what each direction imposes
//! {"op": "set", "direction": "both", "rate_bps": 1000000000, "delay_ns": 13400000}
//! {"op": "health", "since_ns": 123456789}           how faithfully it ran since then
//! {"op": "steer", "pid": 42, "fds": [[7, "1", "a"], [8, "1", "b"]]}
//!                                                   steer each end's receive work while
//!                                                   TCP comes into it fast
//! {"op": "stop"}                                    exit as on SIGTERM
//! ```
//! `set` changes only the fields it names (`direction`: `a_to_b`, `b_to_a` or `both`);
//! `null` returns `queue_bytes` to one bandwidth-delay product and removes `cross`.
//! `health` answers from notes taken every 100 ms, `since_ns` on the monotonic clock
//! (`CLOCK_MONOTONIC`, as Python's `time.monotonic_ns()`); without it, since the start.
//! Every answer has `"ok"`; a refusal has `"error"`, naming the field.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use longhaul_link::DirectionConfig;
use serde_json::{Map, Value, json};

use crate::encryptor::EncryptorConfig;
use crate::engine::Core;

/// What a request asks of the engine besides its answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Then {
    Continue,
    Stop,
}

/// Answer one request line, changing `core` if it asks to.
pub fn handle(line: &str, core: &mut Core, now_ns: u64) -> (Value, Then) {
    let request: Value = match serde_json::from_str(line) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(_) => {
            return (
                refuse("a request is a JSON object with an \"op\""),
                Then::Continue,
            );
        }
        Err(e) => return (refuse(&format!("not JSON: {e}")), Then::Continue),
    };
    let answer = match request.get("op").and_then(Value::as_str) {
        Some("stats") => {
            let mut stats = core.stats(now_ns);
            stats["ok"] = json!(true);
            stats
        }
        Some("config") => configs(core),
        Some("set") => match set(&request, core, now_ns) {
            Ok(()) => configs(core),
            Err(e) => refuse(&e),
        },
        Some("health") => match request.get("since_ns") {
            None | Some(Value::Null) => ok(core.health_since(0, now_ns)),
            Some(value) => match value.as_u64() {
                Some(since) => ok(core.health_since(since, now_ns)),
                None => refuse("since_ns must be a whole number of nanoseconds"),
            },
        },
        Some("steer") => match steer(&request, core) {
            Ok(()) => json!({"ok": true}),
            Err(e) => refuse(&e),
        },
        Some("encrypt") => match encrypt(&request, core, now_ns) {
            Ok(()) => json!({"ok": true, "encrypted": core.encryptors.is_some()}),
            Err(e) => refuse(&e),
        },
        Some("stop") => return (json!({"ok": true}), Then::Stop),
        Some(other) => refuse(&format!(
            "op {other:?} is not one of stats, config, set, health, steer, encrypt, stop"
        )),
        None => refuse("op is missing: stats, config, set, health or stop"),
    };
    (answer, Then::Continue)
}

/// Put encryptors on the line (`"config"`: an `EncryptorConfig`) or take them off
/// (`"config": null`). What is on the line meanwhile is dropped, as when a device is
/// cabled in.
fn encrypt(request: &Value, core: &mut Core, now_ns: u64) -> Result<(), String> {
    let config = match request.get("config") {
        None => return Err("encrypt: config is missing (an encryptor's, or null)".into()),
        Some(Value::Null) => None,
        Some(value) => {
            let config: EncryptorConfig = serde_path_to_error::deserialize(value)
                .map_err(|e| format!("encrypt: {}: {}", e.path(), e.inner()))?;
            config.check().map_err(|e| format!("encrypt: {e}"))?;
            Some(config)
        }
    };
    core.set_encryptors(config, now_ns);
    Ok(())
}

fn ok(mut answer: Value) -> Value {
    answer["ok"] = json!(true);
    answer
}

/// Take the `rps_cpus` descriptors process `pid` opened (see `steer`).
fn steer(request: &Value, core: &mut Core) -> Result<(), String> {
    let pid = request
        .get("pid")
        .and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .ok_or("steer: pid must be a process id")?;
    let fds = request
        .get("fds")
        .and_then(Value::as_array)
        .ok_or("steer: fds must be a list of [descriptor, hex mask, end]")?
        .iter()
        .map(|triple| {
            let side = match triple.get(2).and_then(Value::as_str) {
                Some("a") => Some(0),
                Some("b") => Some(1),
                _ => None,
            };
            let fd = triple
                .get(0)
                .and_then(Value::as_i64)
                .and_then(|f| i32::try_from(f).ok());
            let mask = triple.get(1).and_then(Value::as_str).map(str::to_owned);
            match (side, fd, mask) {
                (Some(side), Some(fd), Some(mask)) => Ok((side, fd, mask)),
                _ => Err("steer: each of fds is [descriptor, hex mask, \"a\" or \"b\"]"),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let steering = crate::steer::Steering::take(pid, &fds).map_err(|e| format!("steer: {e}"))?;
    core.steering = Some(steering);
    Ok(())
}

fn configs(core: &Core) -> Value {
    json!({"ok": true, "a_to_b": core.link[0].config(), "b_to_a": core.link[1].config()})
}

fn refuse(error: &str) -> Value {
    json!({"ok": false, "error": error})
}

fn set(request: &Value, core: &mut Core, now_ns: u64) -> Result<(), String> {
    let Value::Object(fields) = request else {
        unreachable!("checked by handle")
    };
    let which: &[usize] = match fields.get("direction").and_then(Value::as_str) {
        None | Some("both") => &[0, 1],
        Some("a_to_b") => &[0],
        Some("b_to_a") => &[1],
        Some(other) => return Err(format!("direction {other:?} is not a_to_b, b_to_a or both")),
    };
    let changes: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| *k != "op" && *k != "direction")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Check both before changing either: a refused change changes nothing.
    let mut updated = Vec::new();
    for &index in which {
        let mut current =
            serde_json::to_value(core.link[index].config()).map_err(|e| e.to_string())?;
        if let Value::Object(map) = &mut current {
            map.extend(changes.clone());
        }
        let config: DirectionConfig =
            serde_path_to_error::deserialize(current).map_err(|e| format!("set: {e}"))?;
        config.check()?;
        updated.push((index, config));
    }
    for (index, config) in updated {
        core.reconfigure(index, now_ns, config);
    }
    Ok(())
}

/// The listening socket and its connections.
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
    clients: Vec<Client>,
}

struct Client {
    stream: UnixStream,
    incoming: Vec<u8>,
    outgoing: Vec<u8>,
    closed: bool,
}

impl ControlServer {
    pub fn bind(path: &Path) -> io::Result<Self> {
        if path.exists() {
            // A socket left by an emulator that was killed; a live one would answer.
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{} is in use by a running emulator", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(Self {
            listener,
            path: path.to_owned(),
            clients: Vec::new(),
        })
    }

    /// The descriptors to wait on, each with whether it waits to write.
    pub fn fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut fds = vec![(self.listener.as_fd(), false)];
        fds.extend(
            self.clients
                .iter()
                .map(|c| (c.stream.as_fd(), !c.outgoing.is_empty())),
        );
        fds
    }

    /// Accept, read and answer whatever is ready; whether a client asked to stop.
    pub fn serve(&mut self, mut answer: impl FnMut(&str) -> (Value, Then)) -> Then {
        while let Ok((stream, _)) = self.listener.accept() {
            if stream.set_nonblocking(true).is_ok() {
                self.clients.push(Client {
                    stream,
                    incoming: Vec::new(),
                    outgoing: Vec::new(),
                    closed: false,
                });
            }
        }
        let mut then = Then::Continue;
        for client in &mut self.clients {
            client.receive();
            while let Some(end) = client.incoming.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = client.incoming.drain(..=end).collect();
                let text = String::from_utf8_lossy(&line);
                if text.trim().is_empty() {
                    continue;
                }
                let (reply, wants) = answer(text.trim());
                if wants == Then::Stop {
                    then = Then::Stop;
                }
                client.outgoing.extend(reply.to_string().bytes());
                client.outgoing.push(b'\n');
            }
            client.send();
        }
        self.clients.retain(|c| !c.closed || !c.outgoing.is_empty());
        then
    }
}

impl Client {
    fn receive(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    return;
                }
                Ok(n) => self.incoming.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.closed = true;
                    return;
                }
            }
            if self.incoming.len() > 1 << 20 {
                self.closed = true; // not a control client
                self.incoming.clear();
                return;
            }
        }
    }

    fn send(&mut self) {
        while !self.outgoing.is_empty() {
            match self.stream.write(&self.outgoing) {
                Ok(n) => {
                    self.outgoing.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.outgoing.clear();
                    self.closed = true;
                    return;
                }
            }
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Send one request to the emulator listening at `path`; its answer.
pub fn request(path: &Path, line: &str) -> io::Result<Value> {
    let mut stream = UnixStream::connect(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("no emulator answers at {} ({e})", path.display()),
        )
    })?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    stream.write_all(line.trim().as_bytes())?;
    stream.write_all(b"\n")?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    while !answer.ends_with(b"\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    serde_json::from_slice(&answer).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core() -> Core {
        let config = DirectionConfig::new(1_000_000_000, 13_400_000);
        Core::new([config.clone(), config], 1, 0).unwrap()
    }

    fn ask(core: &mut Core, line: &str) -> Value {
        handle(line, core, 0).0
    }

    #[test]
    fn set_changes_only_the_fields_it_names() {
        let mut core = core();
        let answer = ask(
            &mut core,
            r#"{"op": "set", "direction": "a_to_b", "delay_ns": 81500000}"#,
        );
        assert_eq!(answer["ok"], true, "{answer}");
        assert_eq!(core.link[0].config().delay_ns, 81_500_000);
        assert_eq!(core.link[0].config().rate_bps, 1_000_000_000);
        assert_eq!(core.link[1].config().delay_ns, 13_400_000);
        let answer = ask(&mut core, r#"{"op": "set", "loss": {"random": 0.001}}"#);
        assert_eq!(answer["b_to_a"]["loss"]["random"], 0.001);
        let answer = ask(&mut core, r#"{"op": "set", "layer": "wanphy"}"#);
        assert_eq!(answer["a_to_b"]["layer"], "wanphy");
    }

    #[test]
    fn a_refused_change_changes_nothing_and_names_the_field() {
        let mut core = core();
        for (request, says) in [
            (r#"{"op": "set", "rate": 5}"#, "rate"),
            (r#"{"op": "set", "rate_bps": 10}"#, "rate_bps"),
            (r#"{"op": "set", "layer": "oc768"}"#, "layer"),
            (r#"{"op": "set", "direction": "up"}"#, "direction"),
            (r#"{"op": "health", "since_ns": "soon"}"#, "since_ns"),
            (r#"{"op": "fly"}"#, "fly"),
            (r"[1, 2]", "object"),
            ("{nope", "not JSON"),
        ] {
            let answer = ask(&mut core, request);
            assert_eq!(answer["ok"], false);
            assert!(answer["error"].as_str().unwrap().contains(says), "{answer}");
        }
        assert_eq!(core.link[0].config().rate_bps, 1_000_000_000);
    }

    #[test]
    fn stats_health_and_stop() {
        let mut core = core();
        let answer = ask(&mut core, r#"{"op": "stats"}"#);
        assert_eq!(answer["a_to_b"]["rx_frames"], 0);
        assert_eq!(answer["a_to_b"]["queue_limit_bytes"], 3_350_000);
        assert!(answer["engine"]["wakeups"].is_u64());
        let health = ask(&mut core, r#"{"op": "health", "since_ns": 0}"#);
        assert_eq!(health["ok"], true);
        assert_eq!(health["a_to_b"]["late_releases"], 0);
        assert_eq!(handle(r#"{"op": "stop"}"#, &mut core, 0).1, Then::Stop);
    }
}
