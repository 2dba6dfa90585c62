//! The thin shell: one session is one long-lived TCP connection between the two
//! accelerators, carrying every application stream between them as frames (`wire`),
//! their bytes transformed by the `codec`. Each stream has its own credit: a side sends
//! at most `window` bytes the other has not yet written to its application, so one slow
//! application holds back only its own stream, and memory stays bounded.
//!
//! One task writes the session (it alone encodes, so the two caches see chunks in the
//! order they cross) and one reads it; each stream has a task reading its application
//! socket and one writing it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Semaphore, mpsc};

use crate::codec::{Counters, Decoder, Encoder};
use crate::sockopt;
use crate::wire::{FRAME_HEADER_BYTES, Features, Frame};

/// The most bytes one read from an application takes.
pub const READ_BYTES: usize = 64 << 10;
/// The least credit a stream may have: more than DRE holds back (one chunk) and a read.
pub const MIN_WINDOW_BYTES: u32 = 4 * READ_BYTES as u32;
const KEPT_REASONS: usize = 16;
/// How many bytes the writer gathers before it writes them to the session at once.
const WRITE_BATCH_BYTES: usize = 256 << 10;

/// What a session does, agreed in the hello.
#[derive(Debug, Clone, Copy)]
pub struct Terms {
    pub features: Features,
    pub cache_bytes: u64,
    pub window_bytes: u32,
}

/// What a stream's application socket is given by the session.
enum ToApp {
    Bytes(Vec<u8>),
    Reset,
}

/// What the session's writer is asked to send: a stream's bytes and its end, which
/// pass through the encoder, or a frame as it is.
enum Out {
    Bytes {
        stream: u32,
        bytes: Vec<u8>,
        flush: bool,
    },
    Fin {
        stream: u32,
    },
    Frame(Frame),
}

struct StreamHandle {
    /// None once the peer sent FIN.
    to_app: Option<mpsc::UnboundedSender<ToApp>>,
    credit: Arc<Semaphore>,
    fin_sent: bool,
}

/// Both directions' counters of every session an accelerator ran, for its report.
#[derive(Debug, Default, Serialize, Clone)]
pub struct Report {
    pub sessions: u64,
    pub streams: u64,
    pub streams_reset: u64,
    /// Why streams were reset (the first `KEPT_REASONS` reasons).
    pub reset_reasons: Vec<String>,
    pub sent: Counters,
    /// Bytes of DATA and REF frames received and what they became.
    pub received_wire_bytes: u64,
    pub received_app_bytes: u64,
    pub session_errors: Vec<String>,
}

pub type SharedReport = Arc<Mutex<Report>>;

/// How the far side opens a stream's target (the near side never does).
pub type Opener = Arc<dyn Fn(String) -> Result<SocketAddr, String> + Send + Sync>;

pub struct Session {
    out: mpsc::Sender<Out>,
    streams: Mutex<HashMap<u32, StreamHandle>>,
    terms: Terms,
    next_stream: AtomicU32,
    report: SharedReport,
}

impl Session {
    /// Runs a session over `wan` until it ends; `opener` is the far side's, which opens
    /// the streams the near side asks for. Returns the session and a handle that ends
    /// with it (and the reason it ended).
    pub fn start(
        wan: TcpStream,
        terms: Terms,
        opener: Option<Opener>,
        report: SharedReport,
    ) -> (Arc<Self>, tokio::task::JoinHandle<String>) {
        let (read, write) = wan.into_split();
        let (out, outbox) = mpsc::channel(256);
        report.lock().expect("report").sessions += 1;
        let session = Arc::new(Self {
            out,
            streams: Mutex::new(HashMap::new()),
            terms,
            next_stream: AtomicU32::new(1),
            report,
        });
        let writer = tokio::spawn(write_session(write, outbox, terms, Arc::clone(&session)));
        let reader = tokio::spawn(Arc::clone(&session).read_session(read, opener));
        let ended = {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                let why = tokio::select! {
                    why = reader => why.unwrap_or_else(|e| format!("reader: {e}")),
                    why = writer => why.unwrap_or_else(|e| format!("writer: {e}")),
                };
                session.reset_all();
                why
            })
        };
        (session, ended)
    }

    /// Carries an application's connection to `target` on the far side.
    pub async fn carry(self: &Arc<Self>, app: TcpStream, target: String) {
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let (to_app, from_session) = mpsc::unbounded_channel();
        let credit = self.register(stream, to_app);
        if self
            .out
            .send(Out::Frame(Frame::Open { stream, target }))
            .await
            .is_err()
        {
            sockopt::reset_on_close(&app);
            return;
        }
        self.pump(stream, app, from_session, credit);
    }

    fn register(&self, stream: u32, to_app: mpsc::UnboundedSender<ToApp>) -> Arc<Semaphore> {
        let credit = Arc::new(Semaphore::new(self.terms.window_bytes as usize));
        let handle = StreamHandle {
            to_app: Some(to_app),
            credit: Arc::clone(&credit),
            fin_sent: false,
        };
        self.streams.lock().expect("streams").insert(stream, handle);
        self.report.lock().expect("report").streams += 1;
        credit
    }

    fn pump(
        self: &Arc<Self>,
        stream: u32,
        app: TcpStream,
        from_session: mpsc::UnboundedReceiver<ToApp>,
        credit: Arc<Semaphore>,
    ) {
        let _ = app.set_nodelay(true);
        let (read, write) = app.into_split();
        tokio::spawn(Arc::clone(self).app_to_session(stream, read, credit));
        tokio::spawn(Arc::clone(self).session_to_app(stream, write, from_session));
    }

    async fn app_to_session(
        self: Arc<Self>,
        stream: u32,
        mut app: OwnedReadHalf,
        credit: Arc<Semaphore>,
    ) {
        let mut buf = vec![0u8; READ_BYTES];
        loop {
            let n = match app.read(&mut buf).await {
                Ok(0) => {
                    self.half_closed(stream, |handle| handle.fin_sent = true);
                    let _ = self.out.send(Out::Fin { stream }).await;
                    return;
                }
                Ok(n) => n,
                Err(e) => {
                    self.reset(stream, &format!("the application's socket: {e}"))
                        .await;
                    return;
                }
            };
            // Credit is taken after the read, so a stream may run one read past it.
            match credit.acquire_many(n as u32).await {
                Ok(permit) => permit.forget(),
                Err(_) => return, // the stream was reset
            }
            // A short read means the application paused: send what DRE holds back.
            let flush = n < buf.len();
            let bytes = buf[..n].to_vec();
            if self
                .out
                .send(Out::Bytes {
                    stream,
                    bytes,
                    flush,
                })
                .await
                .is_err()
            {
                return;
            }
        }
    }

    async fn session_to_app(
        self: Arc<Self>,
        stream: u32,
        mut app: OwnedWriteHalf,
        mut from_session: mpsc::UnboundedReceiver<ToApp>,
    ) {
        while let Some(message) = from_session.recv().await {
            match message {
                ToApp::Bytes(bytes) => {
                    if let Err(e) = app.write_all(&bytes).await {
                        self.reset(stream, &format!("the application's socket: {e}"))
                            .await;
                        return;
                    }
                    let bytes = bytes.len() as u32;
                    if self
                        .out
                        .send(Out::Frame(Frame::Credit { stream, bytes }))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                ToApp::Reset => {
                    sockopt::reset_on_close(app.as_ref());
                    return;
                }
            }
        }
        // The peer sent FIN: no more bytes this way.
        let _ = app.shutdown().await;
    }

    /// One way of a stream is over; once both are, the session forgets it.
    fn half_closed(&self, stream: u32, close: impl FnOnce(&mut StreamHandle)) {
        let mut streams = self.streams.lock().expect("streams");
        if let Some(handle) = streams.get_mut(&stream) {
            close(handle);
            if handle.fin_sent && handle.to_app.is_none() {
                streams.remove(&stream);
            }
        }
    }

    /// Ends a stream with an error, here and at the peer.
    async fn reset(&self, stream: u32, reason: &str) {
        self.drop_stream(stream, reason);
        let reason = reason.to_string();
        let _ = self
            .out
            .send(Out::Frame(Frame::Reset { stream, reason }))
            .await;
    }

    fn drop_stream(&self, stream: u32, reason: &str) {
        if let Some(handle) = self.streams.lock().expect("streams").remove(&stream) {
            handle.credit.close();
            if let Some(to_app) = handle.to_app {
                let _ = to_app.send(ToApp::Reset);
            }
            let mut report = self.report.lock().expect("report");
            report.streams_reset += 1;
            if report.reset_reasons.len() < KEPT_REASONS {
                report
                    .reset_reasons
                    .push(format!("stream {stream}: {reason}"));
            }
        }
    }

    fn reset_all(&self) {
        let streams: Vec<u32> = self
            .streams
            .lock()
            .expect("streams")
            .keys()
            .copied()
            .collect();
        for stream in streams {
            self.drop_stream(stream, "the session ended");
        }
    }

    async fn read_session(self: Arc<Self>, read: OwnedReadHalf, opener: Option<Opener>) -> String {
        let mut wan = BufReader::with_capacity(1 << 20, read);
        let mut decoder = Decoder::new(self.terms.cache_bytes);
        let mut header = [0u8; FRAME_HEADER_BYTES];
        let mut body = Vec::new();
        loop {
            if let Err(e) = wan.read_exact(&mut header).await {
                return format!("the session closed: {e}");
            }
            let (kind, stream, len) = match Frame::decode_header(&header) {
                Ok(parsed) => parsed,
                Err(e) => return self.fail(&e.to_string()),
            };
            body.resize(len, 0);
            if let Err(e) = wan.read_exact(&mut body).await {
                return format!("the session closed mid-frame: {e}");
            }
            let frame = match Frame::decode_body(kind, stream, &body) {
                Ok(frame) => frame,
                Err(e) => return self.fail(&e.to_string()),
            };
            if let Err(why) = self.on_frame(frame, len, &mut decoder, opener.as_ref()) {
                return self.fail(&why);
            }
        }
    }

    fn fail(&self, why: &str) -> String {
        self.report
            .lock()
            .expect("report")
            .session_errors
            .push(why.to_string());
        why.to_string()
    }

    fn on_frame(
        self: &Arc<Self>,
        frame: Frame,
        body_len: usize,
        decoder: &mut Decoder,
        opener: Option<&Opener>,
    ) -> Result<(), String> {
        match frame {
            Frame::Open { stream, target } => {
                let Some(opener) = opener else {
                    return Err("the far side asked this side to open a stream".into());
                };
                self.open(stream, target, Arc::clone(opener));
            }
            data @ (Frame::Data { .. } | Frame::Ref { .. }) => {
                let (stream, bytes) = decoder
                    .decode(data)
                    .map_err(|e| e.to_string())?
                    .expect("DATA and REF carry bytes");
                {
                    let mut report = self.report.lock().expect("report");
                    report.received_wire_bytes += (FRAME_HEADER_BYTES + body_len) as u64;
                    report.received_app_bytes += bytes.len() as u64;
                }
                let streams = self.streams.lock().expect("streams");
                // Bytes of a stream already reset here are decoded (the cache must see
                // them) and dropped.
                if let Some(to_app) = streams.get(&stream).and_then(|h| h.to_app.as_ref()) {
                    let _ = to_app.send(ToApp::Bytes(bytes));
                }
            }
            Frame::Credit { stream, bytes } => {
                if let Some(handle) = self.streams.lock().expect("streams").get(&stream) {
                    handle.credit.add_permits(bytes as usize);
                }
            }
            Frame::Fin { stream } => self.half_closed(stream, |handle| handle.to_app = None),
            Frame::Reset { stream, reason } => {
                self.drop_stream(stream, &format!("the peer: {reason}"));
            }
        }
        Ok(())
    }

    /// The far side: connect to the target the near side named, if it is allowed.
    /// Bytes that arrive meanwhile wait in the stream's queue (within its credit).
    fn open(self: &Arc<Self>, stream: u32, target: String, opener: Opener) {
        let (to_app, from_session) = mpsc::unbounded_channel();
        let credit = self.register(stream, to_app);
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let connected = match opener(target.clone()) {
                Ok(address) => TcpStream::connect(address)
                    .await
                    .map_err(|e| format!("{target}: {e}")),
                Err(refusal) => Err(refusal),
            };
            match connected {
                Ok(app) => session.pump(stream, app, from_session, credit),
                Err(why) => session.reset(stream, &why).await,
            }
        });
    }
}

/// The session's only writer: encodes what the streams hand it, in the order it is
/// handed, and writes it in batches.
async fn write_session(
    mut wan: OwnedWriteHalf,
    mut outbox: mpsc::Receiver<Out>,
    terms: Terms,
    session: Arc<Session>,
) -> String {
    let mut encoder = Encoder::new(terms.features, terms.cache_bytes);
    let mut frames = Vec::new();
    let mut batch = Vec::with_capacity(WRITE_BATCH_BYTES * 2);
    let mut reported = encoder.counters;
    while let Some(first) = outbox.recv().await {
        let mut next = Some(first);
        while let Some(out) = next.take() {
            frames.clear();
            match out {
                Out::Bytes {
                    stream,
                    bytes,
                    flush,
                } => encoder.encode(stream, &bytes, flush, &mut frames),
                Out::Fin { stream } => {
                    encoder.encode(stream, &[], true, &mut frames);
                    encoder.forget(stream);
                    frames.push(Frame::Fin { stream });
                }
                Out::Frame(frame) => {
                    if let Frame::Reset { stream, .. } = &frame {
                        encoder.forget(*stream);
                    }
                    frames.push(frame);
                }
            }
            for frame in &frames {
                let n = frame.encode_into(&mut batch);
                if matches!(frame, Frame::Data { .. } | Frame::Ref { .. }) {
                    encoder.counters.wire_bytes += n as u64;
                }
            }
            if batch.len() < WRITE_BATCH_BYTES {
                next = outbox.try_recv().ok();
            }
        }
        if let Err(e) = wan.write_all(&batch).await {
            return format!("writing the session: {e}");
        }
        batch.clear();
        let now = encoder.counters;
        session
            .report
            .lock()
            .expect("report")
            .sent
            .add_since(&now, &reported);
        reported = now;
    }
    "the accelerator stopped".into()
}
