//! The accelerator pair as processes on loopback: bytes through every feature
//! combination both ways, a far side killed mid-stream and started again, and the
//! refusals a near side gets from a missing peer, another version or something else.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_longhaul-accel");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A process of ours, killed when dropped (also when a test fails).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str]) -> (Proc, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{args:?}: {line}");
    (Proc(child), err)
}

fn far(port: u16) -> Proc {
    let listen = format!("127.0.0.1:{port}");
    let (proc, mut err) = start(&["far", "--listen", &listen, "--allow", "127.0.0.1/32"]);
    thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    proc
}

/// A near side forwarding `near_port` to `target`, once its session is up.
fn near(near_port: u16, far_port: u16, target: SocketAddr, features: &str) -> Proc {
    let forward = format!("127.0.0.1:{near_port}={target}");
    let peer = format!("127.0.0.1:{far_port}");
    let (proc, mut err) = start(&[
        "near",
        "--forward",
        &forward,
        "--peer",
        &peer,
        "--features",
        features,
    ]);
    let mut line = String::new();
    while !line.contains("session with") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the near side ended");
    }
    thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    proc
}

/// An echo server: every connection's bytes straight back, until it closes.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut back = conn.try_clone().unwrap();
                let mut conn = conn;
                let _ = std::io::copy(&mut conn, &mut back);
                let _ = back.shutdown(Shutdown::Write);
            });
        }
    });
    address
}

fn payload(kind: u8, len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(kind);
    (0..len)
        .map(|i| match kind {
            0 => {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            }
            1 => b"longhaul accelerator "[i % 21],
            _ => ((i / 4096) as u8).wrapping_mul(31) ^ (i % 7) as u8,
        })
        .collect()
}

/// Sends `data` through `address` and reads it back (an echo at the far end).
fn round_trip(address: SocketAddr, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let conn = TcpStream::connect(address)?;
    conn.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut writer = conn.try_clone()?;
    let data = data.to_vec();
    let sending = thread::spawn(move || -> std::io::Result<()> {
        writer.write_all(&data)?;
        writer.shutdown(Shutdown::Write)
    });
    let mut back = Vec::new();
    let mut reader = conn;
    reader.read_to_end(&mut back)?;
    sending.join().unwrap()?;
    Ok(back)
}

#[test]
fn bytes_cross_byte_exact_both_ways_with_every_feature_combination() {
    let echo = echo_server();
    for features in ["tfo", "tfo+dre", "tfo+lz", "tfo+dre+lz"] {
        let (far_port, near_port) = (free_port(), free_port());
        let _far = far(far_port);
        let _near = near(near_port, far_port, echo, features);
        let address: SocketAddr = format!("127.0.0.1:{near_port}").parse().unwrap();
        // Four streams at once: noise, a short repeated phrase, a structured pattern, and
        // the noise again (a second copy DRE can refer to).
        let streams: Vec<_> = [0u8, 1, 2, 0]
            .into_iter()
            .map(|kind| {
                thread::spawn(move || {
                    let data = payload(kind, 3 << 20);
                    (round_trip(address, &data).unwrap(), data)
                })
            })
            .collect();
        for stream in streams {
            let (back, sent) = stream.join().unwrap();
            assert_eq!(back.len(), sent.len(), "{features}");
            assert!(back == sent, "{features}: bytes changed on the way");
        }
    }
}

#[test]
fn a_far_side_killed_mid_stream_ends_the_stream_and_the_next_session_carries_on() {
    let echo = echo_server();
    let (far_port, near_port) = (free_port(), free_port());
    let mut far_proc = far(far_port);
    let _near = near(near_port, far_port, echo, "tfo+dre+lz");
    let address: SocketAddr = format!("127.0.0.1:{near_port}").parse().unwrap();
    let data = payload(0, 64 << 20);
    let sent = data.clone();
    let transfer = thread::spawn(move || round_trip(address, &sent));
    thread::sleep(Duration::from_millis(150));
    far_proc.0.kill().unwrap();
    far_proc.0.wait().unwrap();
    // The application learns its stream is gone, or what it got is a prefix of what it sent.
    match transfer.join().unwrap() {
        Err(_) => {}
        Ok(back) => assert!(back.len() < data.len() && back == data[..back.len()]),
    }
    let _far_again = far(far_port);
    let deadline = Instant::now() + Duration::from_secs(10);
    let small = payload(2, 1 << 20);
    loop {
        match round_trip(address, &small) {
            Ok(back) if back == small => break,
            Ok(back) => assert!(back.is_empty(), "a wrong byte was delivered"),
            Err(_) => {}
        }
        assert!(Instant::now() < deadline, "no new session within 10 s");
        thread::sleep(Duration::from_millis(200));
    }
}

/// A near side against `peer`: its exit status and what it said.
fn near_against(peer: SocketAddr) -> (Option<i32>, String) {
    let near_port = free_port();
    let forward = format!("127.0.0.1:{near_port}=127.0.0.1:9");
    let out = Command::new(BIN)
        .args(["near", "--forward", &forward, "--peer", &peer.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = out.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn answering(answer: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut hello = [0u8; 15];
        let _ = conn.read_exact(&mut hello);
        let _ = conn.write_all(answer);
    });
    address
}

#[test]
fn a_peer_of_another_version_or_protocol_is_named_and_not_retried() {
    let (code, said) = near_against(answering(b"LHAX\x00\x09\x00\x00\x00"));
    assert_eq!(code, Some(2));
    assert!(said.contains("version 9"), "{said}");
    let (code, said) = near_against(answering(b"HTTP/1.1 400 Bad Request\r\n\r\n"));
    assert_eq!(code, Some(2));
    assert!(said.contains("not a longhaul accelerator"), "{said}");
}

#[test]
fn a_far_side_of_another_version_is_refused_with_its_reason() {
    let far_port = free_port();
    let _far = far(far_port);
    let mut conn = TcpStream::connect(("127.0.0.1", far_port)).unwrap();
    conn.write_all(b"LHAX\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00")
        .unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).unwrap();
    assert_eq!(&answer[..4], b"LHAX");
    assert_eq!(answer[6], 1, "refused");
    assert!(String::from_utf8_lossy(&answer[9..]).contains("version 7"));
}

#[test]
fn clients_are_refused_while_the_peer_is_missing_and_served_once_it_answers() {
    let echo = echo_server();
    let (far_port, near_port) = (free_port(), free_port());
    let forward = format!("127.0.0.1:{near_port}={echo}");
    let peer = format!("127.0.0.1:{far_port}");
    let (_near, mut err) = start(&["near", "--forward", &forward, "--peer", &peer]);
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("no accelerator at"), "{line}");
    let address: SocketAddr = format!("127.0.0.1:{near_port}").parse().unwrap();
    let refused = round_trip(address, b"hello");
    assert!(refused.is_err() || refused.unwrap().is_empty());
    let _far = far(far_port);
    let deadline = Instant::now() + Duration::from_secs(10);
    while round_trip(address, b"hello").ok().as_deref() != Some(b"hello".as_slice()) {
        assert!(Instant::now() < deadline, "not served after the peer came");
        thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_near_side_killed_mid_stream_leaves_no_wrong_byte_and_a_new_one_is_served() {
    let echo = echo_server();
    let (far_port, near_port) = (free_port(), free_port());
    let _far = far(far_port);
    let mut near_proc = near(near_port, far_port, echo, "tfo+dre+lz");
    let address: SocketAddr = format!("127.0.0.1:{near_port}").parse().unwrap();
    let data = payload(0, 64 << 20);
    let sent = data.clone();
    let transfer = thread::spawn(move || round_trip(address, &sent));
    thread::sleep(Duration::from_millis(150));
    near_proc.0.kill().unwrap();
    near_proc.0.wait().unwrap();
    match transfer.join().unwrap() {
        Err(_) => {}
        Ok(back) => assert!(back.len() < data.len() && back == data[..back.len()]),
    }
    // A new near side, a new session (its caches empty on both ends), the same bytes.
    let _near_again = near(near_port, far_port, echo, "tfo+dre+lz");
    let small = payload(2, 4 << 20);
    assert!(round_trip(address, &small).unwrap() == small);
}
