//! Self-tuning of T_s, what Hurricane's authors asked for: goodput is unimodal in the idle
//! time (too little and the receiving host drops what it cannot take, too much and the
//! channel idles), so a golden-section search over T_s finds its best, one measurement
//! epoch per probe, and starts again when the loss it settled at changes.
//!
//! An epoch sends for at least four round trips and 256 datagrams at one T_s; its score
//! is its goodput (what it sent less what the NACKs say it lost) times the share that
//! was not lost: past the receiver's limit goodput stays flat while the waste grows, and
//! the score puts the maximum at the knee, where nothing is sent only to be lost. A NACK describes datagrams sent about
//! a round trip before it, so an epoch counts the NACKs that arrive from one round trip
//! after its start to one after its end, and the next T_s starts once those are in.

/// The golden ratio's conjugate, (√5 − 1) / 2.
const INV_PHI: f64 = 0.618_033_988_749_895;
/// The search stops when its interval is this share of the range.
const RESOLUTION: f64 = 0.05;
const EPOCH_RTTS: u64 = 4;
const EPOCH_DATAGRAMS: u64 = 256;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Measuring f at `x` to compare with the other inner point.
    Probe { x: f64 },
    /// Settled at `x`, with the loss its first epoch there had.
    Hold { x: f64, loss: Option<f64> },
}

#[derive(Debug, Clone)]
pub struct Tuner {
    /// Idle times searched: [0, `max_idle_ns`].
    max_idle_ns: f64,
    rtt_ns: u64,
    a: f64,
    b: f64,
    /// The inner points and their scores, once measured.
    c: (f64, Option<f64>),
    d: (f64, Option<f64>),
    phase: Phase,
    epoch_start_ns: Option<u64>,
    /// Set when the epoch stops measuring; it then waits for its NACKs.
    epoch_end_ns: Option<u64>,
    epoch_sent_bytes: u64,
    epoch_sent: u64,
    epoch_nacked: u64,
    /// (T_s in ns, goodput in bits/s) of every finished epoch: what the search saw.
    pub history: Vec<(u64, f64)>,
}

impl Tuner {
    /// Search T_s in [0, `max_idle_ns`]; `rtt_ns` sets the epoch.
    pub fn new(max_idle_ns: u64, rtt_ns: u64) -> Self {
        let (a, b) = (0.0, max_idle_ns as f64);
        let c = b - INV_PHI * (b - a);
        let d = a + INV_PHI * (b - a);
        Self {
            max_idle_ns: b,
            rtt_ns: rtt_ns.max(1_000_000),
            a,
            b,
            c: (c, None),
            d: (d, None),
            phase: Phase::Probe { x: c },
            epoch_start_ns: None,
            epoch_end_ns: None,
            epoch_sent_bytes: 0,
            epoch_sent: 0,
            epoch_nacked: 0,
            history: Vec::new(),
        }
    }

    /// The idle time to use now.
    pub fn idle_ns(&self) -> u64 {
        match self.phase {
            Phase::Probe { x } | Phase::Hold { x, .. } => x as u64,
        }
    }

    pub fn settled(&self) -> bool {
        matches!(self.phase, Phase::Hold { .. })
    }

    pub fn on_sent(&mut self, now_ns: u64, bytes: usize) {
        let start = *self.epoch_start_ns.get_or_insert(now_ns);
        match self.epoch_end_ns {
            None => {
                self.epoch_sent += 1;
                self.epoch_sent_bytes += bytes as u64;
                let long = now_ns - start >= EPOCH_RTTS * self.rtt_ns;
                if long && self.epoch_sent >= EPOCH_DATAGRAMS {
                    self.epoch_end_ns = Some(now_ns);
                }
            }
            // Its last NACKs are in (a round trip and a half after it stopped).
            Some(end) if now_ns >= end + self.rtt_ns + self.rtt_ns / 2 => {
                self.end_epoch(start, end);
            }
            Some(_) => {}
        }
    }

    /// Blocks a NACK arriving at `now_ns` reported missing for the first time.
    pub fn on_nacked(&mut self, now_ns: u64, blocks: u64) {
        let Some(start) = self.epoch_start_ns else {
            return;
        };
        let after_start = now_ns >= start + self.rtt_ns;
        let before_end = self
            .epoch_end_ns
            .is_none_or(|end| now_ns <= end + self.rtt_ns);
        if after_start && before_end {
            self.epoch_nacked += blocks;
        }
    }

    fn end_epoch(&mut self, start_ns: u64, end_ns: u64) {
        let seconds = (end_ns - start_ns).max(1) as f64 / 1e9;
        let loss = (self.epoch_nacked as f64 / self.epoch_sent as f64).min(1.0);
        let goodput = self.epoch_sent_bytes as f64 * 8.0 / seconds * (1.0 - loss);
        let score = goodput * (1.0 - loss);
        self.history.push((self.idle_ns(), goodput));
        self.epoch_start_ns = None;
        self.epoch_end_ns = None;
        self.epoch_sent = 0;
        self.epoch_sent_bytes = 0;
        self.epoch_nacked = 0;
        match self.phase {
            Phase::Probe { x } => self.probed(x, score),
            Phase::Hold { x, loss: None } => {
                self.phase = Phase::Hold {
                    x,
                    loss: Some(loss),
                }
            }
            Phase::Hold {
                loss: Some(settled),
                ..
            } => {
                // The host or the channel changed: search the whole range again.
                if (loss - settled).abs() > 0.02 + settled {
                    let history = std::mem::take(&mut self.history);
                    *self = Self::new(self.max_idle_ns as u64, self.rtt_ns);
                    self.history = history;
                }
            }
        }
    }

    fn probed(&mut self, x: f64, score: f64) {
        if (x - self.c.0).abs() < f64::EPSILON && self.c.1.is_none() {
            self.c.1 = Some(score);
        } else {
            self.d.1 = Some(score);
        }
        let (Some(fc), Some(fd)) = (self.c.1, self.d.1) else {
            // Measure the other inner point next.
            self.phase = Phase::Probe { x: self.d.0 };
            return;
        };
        // Keep the side of the better point (the maximum lies there).
        if fc >= fd {
            self.b = self.d.0;
            self.d = (self.c.0, Some(fc));
            self.c = (self.b - INV_PHI * (self.b - self.a), None);
        } else {
            self.a = self.c.0;
            self.c = (self.d.0, Some(fd));
            self.d = (self.a + INV_PHI * (self.b - self.a), None);
        }
        if self.b - self.a <= RESOLUTION * self.max_idle_ns {
            let best = if fc >= fd { self.d.0 } else { self.c.0 };
            self.phase = Phase::Hold {
                x: best,
                loss: None,
            };
        } else {
            let next = if self.c.1.is_none() {
                self.c.0
            } else {
                self.d.0
            };
            self.phase = Phase::Probe { x: next };
        }
    }
}
