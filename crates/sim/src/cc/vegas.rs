//! TCP Vegas (Brakmo & Peterson 1995) as Linux's `tcp_vegas.c` (`tcp_vegas_cong_avoid`):
//! once per round compare the expected and actual rates through
//! diff = cwnd (RTT - `BaseRTT`) / `BaseRTT` segments queued (in integers, as the kernel
//! divides), with RTT the least sample of that round; add a segment if diff < alpha,
//! remove one if diff > beta, hold between. Slow start ends when diff > gamma. A round
//! ends when an ACK passes the `snd_nxt` recorded when it began (`beg_snd_nxt`), not after
//! a timed RTT. Losses as Reno.

use super::reno::reno_increase;
use super::{CongestionControl, RttSample, Window};

pub const ALPHA: f64 = 2.0;
pub const BETA: f64 = 4.0;
pub const GAMMA: f64 = 1.0;
/// Linux needs this many RTT samples in a round to trust its minimum.
const MIN_SAMPLES: u32 = 3;

pub struct Vegas {
    w: Window,
    base_rtt_ns: u64,
    round_min_rtt_ns: u64,
    round_samples: u32,
    /// `beg_snd_nxt`: the round ends when an ACK passes it.
    round_end_seq: u64,
    /// The latest ACK and `snd_nxt`, from the RTT sample that came with this ACK.
    ack: u64,
    snd_nxt: u64,
}

impl Vegas {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            base_rtt_ns: u64::MAX,
            round_min_rtt_ns: u64::MAX,
            round_samples: 0,
            round_end_seq: 0,
            ack: 0,
            snd_nxt: 0,
        }
    }

    pub fn base_rtt_ns(&self) -> u64 {
        self.base_rtt_ns
    }

    /// Segments this flow keeps queued in the network, by Vegas's estimate, in whole
    /// segments as the kernel's u32 division leaves them.
    pub fn diff(&self, rtt_ns: u64) -> f64 {
        let base = self.base_rtt_ns as f64;
        (self.w.cwnd.floor() * (rtt_ns as f64 - base) / base).floor()
    }

    /// The once-per-RTT decision.
    fn end_round(&mut self, acked: f64) {
        let rtt = self.round_min_rtt_ns;
        let diff = self.diff(rtt);
        if self.w.in_slow_start() {
            if diff > GAMMA {
                // Leave slow start at the window that fills the pipe.
                let target = self.w.cwnd * self.base_rtt_ns as f64 / rtt as f64;
                self.w.cwnd = self.w.cwnd.min(target.floor() + 1.0).max(2.0);
                self.w.ssthresh = (self.w.cwnd - 1.0).max(2.0);
            } else {
                self.w.slow_start(acked);
            }
        } else if diff > BETA {
            self.w.cwnd = (self.w.cwnd - 1.0).max(2.0);
            self.w.ssthresh = self.w.ssthresh.min((self.w.cwnd - 1.0).max(2.0));
        } else if diff < ALPHA {
            self.w.cwnd += 1.0;
        }
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_rtt(&mut self, sample: &RttSample) {
        let rtt_ns = sample.rtt_ns;
        self.base_rtt_ns = self.base_rtt_ns.min(rtt_ns);
        self.round_min_rtt_ns = self.round_min_rtt_ns.min(rtt_ns);
        self.round_samples += 1;
        self.ack = sample.ack;
        self.snd_nxt = sample.snd_nxt;
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let acked = self.w.segments(acked_bytes);
        if self.ack <= self.round_end_seq {
            // Inside a round only slow start grows the window.
            self.w.slow_start(acked);
            return;
        }
        if self.round_samples >= MIN_SAMPLES {
            self.end_round(acked);
        } else {
            // Too few samples to judge: behave as Reno.
            let ca = self.w.slow_start(acked);
            if ca > 0.0 {
                reno_increase(&mut self.w, ca);
            }
        }
        self.round_end_seq = self.snd_nxt;
        self.round_min_rtt_ns = u64::MAX;
        self.round_samples = 0;
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        self.w.reduce_to(0.5);
    }
    fn rate_halving_floor(&self) -> f64 {
        super::reno::reno_min_cwnd(&self.w)
    }
}
