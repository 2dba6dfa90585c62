//! The two accelerators. The near one sits beside the clients: it accepts their
//! connections on the addresses it forwards and carries each over its session to the far
//! one, which sits beside the servers and opens the connection the client asked for, if
//! its allow list lets it. The clients' TCP ends at the near accelerator, a LAN round
//! trip away, so their own (small) windows no longer bound what crosses the WAN: the
//! session's connection does, with buffers of the bandwidth-delay product.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::session::{Opener, Session, SharedReport, Terms};
use crate::sockopt;
use crate::wire::{Answer, HELLO_BYTES, Hello, VERSION, WireError};

/// A line on stderr that never fails the caller: a launcher that closed the pipe must not
/// end a session (`eprintln!` panics when stderr is gone).
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const RECONNECT_AFTER: Duration = Duration::from_secs(1);
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The session connection's socket: buffers and congestion control.
#[derive(Debug, Clone)]
pub struct WanSocket {
    pub buffer_bytes: usize,
    pub congestion: Option<String>,
}

impl WanSocket {
    fn apply(&self, socket: &TcpSocket) -> io::Result<()> {
        sockopt::set_buffers(socket, self.buffer_bytes);
        if let Some(name) = &self.congestion {
            sockopt::set_congestion(socket, name)?;
        }
        Ok(())
    }

    fn socket_for(&self, address: SocketAddr) -> io::Result<TcpSocket> {
        let socket = if address.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        self.apply(&socket)?;
        Ok(socket)
    }
}

/// An address block a far accelerator may open connections into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    network: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Allowed {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (address, prefix) = text.split_once('/').unwrap_or((text, ""));
        let network: IpAddr = address
            .parse()
            .map_err(|_| format!("{text:?} is not an address block (like 198.18.0.0/15)"))?;
        let most = if network.is_ipv4() { 32 } else { 128 };
        let prefix = if prefix.is_empty() {
            most
        } else {
            prefix
                .parse()
                .ok()
                .filter(|p| *p <= most)
                .ok_or(format!("{text:?}: the prefix must be 0-{most}"))?
        };
        Ok(Self { network, prefix })
    }
}

impl Allowed {
    pub fn contains(&self, address: IpAddr) -> bool {
        let bits = |a: IpAddr| match a {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)) << 96, true),
            IpAddr::V6(v6) => (u128::from(v6), false),
        };
        let ((mine, v4), (theirs, their_v4)) = (bits(self.network), bits(address));
        if v4 != their_v4 {
            return false;
        }
        // An IPv4 address sits in the top 32 bits, so its prefix counts from the top too.
        let prefix = u32::from(self.prefix);
        let mask = if prefix == 0 {
            0
        } else {
            u128::MAX << (128 - prefix)
        };
        (mine & mask) == (theirs & mask)
    }
}

/// The far side's rule for the targets the near side names.
pub fn opener(allowed: Vec<Allowed>) -> Opener {
    Arc::new(move |target: String| {
        let address: SocketAddr = target
            .parse()
            .map_err(|_| format!("{target:?} is not an address and port"))?;
        if allowed.iter().any(|a| a.contains(address.ip())) {
            Ok(address)
        } else {
            Err(format!(
                "{target} is outside this accelerator's --allow list"
            ))
        }
    })
}

pub struct Far {
    pub listen: SocketAddr,
    pub allowed: Vec<Allowed>,
    pub wan: WanSocket,
    pub max_cache_bytes: u64,
    pub window_bytes: u32,
}

impl Far {
    /// Binds; the returned future serves sessions until the process ends.
    pub fn bind(self, report: SharedReport) -> io::Result<impl Future<Output = ()>> {
        let socket = self.wan.socket_for(self.listen)?;
        socket.set_reuseaddr(true)?;
        socket.bind(self.listen)?;
        let listener = socket.listen(64)?;
        let this = Arc::new(self);
        Ok(async move {
            loop {
                let (wan, peer) = next_connection(&listener, "the WAN listener").await;
                let (this, report) = (Arc::clone(&this), Arc::clone(&report));
                tokio::spawn(async move {
                    match this.accept(wan).await {
                        Ok((wan, terms)) => {
                            note!("session from {peer}: {}", terms.features.name());
                            let opener = opener(this.allowed.clone());
                            let (_, ended) = Session::start(wan, terms, Some(opener), report);
                            let why = ended.await.unwrap_or_else(|e| e.to_string());
                            note!("session from {peer} ended: {why}");
                        }
                        Err(why) => note!("refused a session from {peer}: {why}"),
                    }
                });
            }
        })
    }

    /// Reads the hello and answers it: the session's terms, or the refusal sent.
    async fn accept(&self, mut wan: TcpStream) -> Result<(TcpStream, Terms), String> {
        let mut hello = [0u8; HELLO_BYTES];
        tokio::time::timeout(HANDSHAKE_TIMEOUT, wan.read_exact(&mut hello))
            .await
            .map_err(|_| "no hello within 10 s".to_string())?
            .map_err(|e| format!("reading the hello: {e}"))?;
        let refusal = match Hello::decode(&hello) {
            Ok(hello) if hello.cache_bytes > self.max_cache_bytes => Err(format!(
                "the near side asks a cache of {} bytes; this accelerator allows {} (--max-cache-bytes)",
                hello.cache_bytes, self.max_cache_bytes
            )),
            Ok(hello) => Ok(hello),
            Err(e) => Err(e.to_string()),
        };
        let answer = Answer {
            version: VERSION,
            refusal: refusal.as_ref().err().cloned(),
        };
        wan.write_all(&answer.encode())
            .await
            .map_err(|e| e.to_string())?;
        let hello = refusal?;
        let _ = wan.set_nodelay(true);
        Ok((
            wan,
            Terms {
                features: hello.features,
                cache_bytes: hello.cache_bytes,
                window_bytes: self.window_bytes,
            },
        ))
    }
}

pub struct Near {
    pub forwards: Vec<(SocketAddr, String)>,
    pub peer: SocketAddr,
    pub terms: Terms,
    pub wan: WanSocket,
}

/// Why a near accelerator cannot have a session: worth retrying, or not.
#[derive(Debug)]
pub enum SessionError {
    /// The peer is not there (yet), or the connection broke.
    Unreachable(String),
    /// The peer answered and refused, or is not an accelerator: retrying will not help.
    Refused(String),
}

impl Near {
    /// Binds the forwarded addresses and keeps a session with the peer; the future ends
    /// only if the peer refuses the session (another version, a cache too large).
    pub fn bind(self, report: SharedReport) -> io::Result<impl Future<Output = String>> {
        let current: Arc<Mutex<Option<Arc<Session>>>> = Arc::default();
        let mut listeners = Vec::new();
        for (listen, target) in &self.forwards {
            let listener = std::net::TcpListener::bind(listen)
                .map_err(|e| io::Error::new(e.kind(), format!("listening on {listen}: {e}")))?;
            listener.set_nonblocking(true)?;
            listeners.push((TcpListener::from_std(listener)?, target.clone()));
        }
        for (listener, target) in listeners {
            tokio::spawn(serve_clients(listener, target, Arc::clone(&current)));
        }
        Ok(async move {
            let mut told = false;
            loop {
                match self.connect().await {
                    Ok(wan) => {
                        told = false;
                        let (session, ended) =
                            Session::start(wan, self.terms, None, Arc::clone(&report));
                        *current.lock().expect("session") = Some(session);
                        // Said once clients are carried: a launcher may wait for this line.
                        note!("session with {}: {}", self.peer, self.terms.features.name());
                        let why = ended.await.unwrap_or_else(|e| e.to_string());
                        *current.lock().expect("session") = None;
                        note!("session with {} ended: {why}", self.peer);
                    }
                    Err(SessionError::Refused(why)) => return why,
                    Err(SessionError::Unreachable(why)) => {
                        if !told {
                            note!(
                                "no accelerator at {} ({why}); clients are refused until it answers",
                                self.peer
                            );
                            told = true;
                        }
                    }
                }
                tokio::time::sleep(RECONNECT_AFTER).await;
            }
        })
    }

    async fn connect(&self) -> Result<TcpStream, SessionError> {
        let unreachable = |e: io::Error| SessionError::Unreachable(e.to_string());
        let socket = self
            .wan
            .socket_for(self.peer)
            .map_err(|e| SessionError::Refused(e.to_string()))?;
        let mut wan = socket.connect(self.peer).await.map_err(unreachable)?;
        let hello = Hello {
            version: VERSION,
            features: self.terms.features,
            cache_bytes: self.terms.cache_bytes,
        };
        wan.write_all(&hello.encode()).await.map_err(unreachable)?;
        let mut head = [0u8; Answer::HEAD_BYTES];
        tokio::time::timeout(HANDSHAKE_TIMEOUT, wan.read_exact(&mut head))
            .await
            .map_err(|_| SessionError::Unreachable("no answer within 10 s".into()))?
            .map_err(|e| {
                SessionError::Refused(format!(
                    "the peer closed without answering ({e}): is it a longhaul accelerator?"
                ))
            })?;
        let (answer, reason_len) =
            Answer::decode_head(&head).map_err(|e| SessionError::Refused(e.to_string()))?;
        if answer.refusal.is_some() {
            let mut reason = vec![0u8; reason_len];
            let _ = wan.read_exact(&mut reason).await;
            return Err(SessionError::Refused(format!(
                "the peer refused: {}",
                String::from_utf8_lossy(&reason)
            )));
        }
        if answer.version != VERSION {
            return Err(SessionError::Refused(
                WireError::Version(answer.version).to_string(),
            ));
        }
        let _ = wan.set_nodelay(true);
        Ok(wan)
    }
}

/// The next connection. A failed accept (out of file descriptors, say) is noted and
/// waited out for `ACCEPT_PAUSE` rather than tried again at once, which would spin a core
/// for as long as the condition lasts (hyper's accept loop sleeps likewise).
async fn next_connection(listener: &TcpListener, which: &str) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(pair) => return pair,
            Err(e) => {
                note!("{which}: accept failed ({e}); trying again in {ACCEPT_PAUSE:?}");
                tokio::time::sleep(ACCEPT_PAUSE).await;
            }
        }
    }
}

async fn serve_clients(
    listener: TcpListener,
    target: String,
    current: Arc<Mutex<Option<Arc<Session>>>>,
) {
    loop {
        let (app, _) = next_connection(&listener, "the clients' listener").await;
        let session = current.lock().expect("session").clone();
        match session {
            Some(session) => session.carry(app, target.clone()).await,
            None => sockopt::reset_on_close(&app),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_blocks_hold_what_they_name_and_nothing_else() {
        let block: Allowed = "198.18.0.0/15".parse().unwrap();
        assert!(block.contains("198.19.255.1".parse().unwrap()));
        assert!(!block.contains("198.20.0.1".parse().unwrap()));
        assert!(!block.contains("::1".parse().unwrap()));
        let one: Allowed = "127.0.0.1".parse().unwrap();
        assert!(
            one.contains("127.0.0.1".parse().unwrap())
                && !one.contains("127.0.0.2".parse().unwrap())
        );
        let all: Allowed = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("10.1.2.3".parse().unwrap()));
        assert!("198.18.0.0/33".parse::<Allowed>().is_err());
        let open = opener(vec![block]);
        assert!(open("198.18.0.2:5301".into()).is_ok());
        assert!(open("10.0.0.1:22".into()).unwrap_err().contains("--allow"));
    }
}
