//! ns-3's `TcpCubic` (tcp-cubic.cc): W(t) = C (t - K)^3 + `Wmax` in whole segments
//! (`bicTarget` and the cube's value truncated to integers), turned into a count of acked
//! segments per segment of growth, `cnt = cwnd / (target - cwnd)`, at least 2; t counts
//! from the epoch's start plus `delayMin`, the least smoothed RTT. Unlike Linux's CUBIC
//! it has no TCP-friendly region, so at small windows it regrows far slower than Reno.
//! Slow start counts acked segments (ns-3's stand-in for Linux's quick ACKs) and
//! `HyStart` (ACK train and delay) is on, as `bulk.cc` leaves it. A timeout resets the
//! state (`CubicReset` on `CA_LOSS`).

use super::{AckedSegments, Ns3Rtt, cwnd_segments, reduce_to_bytes};
use crate::cc::{CongestionControl, NS_PER_S, RttSample, Window};

/// `TcpCubic`'s attribute defaults.
pub const C: f64 = 0.4;
pub const BETA: f64 = 0.7;
pub const CNT_CLAMP: u64 = 20;
/// `CubicDelta`: RTT samples this soon after an epoch starts are ignored.
pub const CUBIC_DELTA_NS: u64 = 10_000_000;
pub const HYSTART_LOW_WINDOW: f64 = 16.0;
pub const HYSTART_MIN_SAMPLES: u32 = 8;
pub const HYSTART_ACK_DELTA_NS: u64 = 2_000_000;
pub const HYSTART_DELAY_MIN_NS: u64 = 4_000_000;
pub const HYSTART_DELAY_MAX_NS: u64 = 1_000_000_000;

pub struct Cubic {
    w: Window,
    acked: AckedSegments,
    rtt: Ns3Rtt,
    cwnd_cnt: u64,
    last_max_cwnd: u64,
    origin: u64,
    k_s: f64,
    delay_min_ns: Option<u64>,
    epoch_start_ns: Option<u64>,
    /// `HyStart` state: `m_found`, the round's start, its end sequence and the last
    /// ACK of its train, the least delay of the round's first samples.
    found: bool,
    round_start_ns: u64,
    end_seq: u64,
    last_ack_ns: u64,
    curr_rtt_ns: Option<u64>,
    sample_cnt: u32,
    /// The latest cumulative ACK and `snd_nxt`, from the RTT sample of this ACK.
    ack: u64,
    snd_nxt: u64,
}

impl Cubic {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            rtt: Ns3Rtt::default(),
            cwnd_cnt: 0,
            last_max_cwnd: 0,
            origin: 0,
            k_s: 0.0,
            delay_min_ns: None,
            epoch_start_ns: None,
            found: false,
            round_start_ns: 0,
            end_seq: 0,
            last_ack_ns: 0,
            curr_rtt_ns: None,
            sample_cnt: 0,
            ack: 0,
            snd_nxt: 0,
        }
    }

    fn hystart_reset(&mut self, now_ns: u64) {
        self.round_start_ns = now_ns;
        self.last_ack_ns = now_ns;
        self.end_seq = self.snd_nxt;
        self.curr_rtt_ns = None;
        self.sample_cnt = 0;
    }

    /// `TcpCubic::HystartUpdate`: leave slow start once a train of closely spaced ACKs
    /// lasts longer than the least delay, or the round's least delay exceeds the least
    /// ever by `HystartDelayThresh` (the least delay, clamped to 4-1000 ms).
    fn hystart_update(&mut self, delay_ns: u64, now_ns: u64) {
        if self.found {
            return;
        }
        let delay_min = self.delay_min_ns.unwrap_or(delay_ns);
        if now_ns - self.last_ack_ns <= HYSTART_ACK_DELTA_NS {
            self.last_ack_ns = now_ns;
            if now_ns - self.round_start_ns > delay_min {
                self.found = true;
            }
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.curr_rtt_ns = Some(self.curr_rtt_ns.map_or(delay_ns, |c| c.min(delay_ns)));
            self.sample_cnt += 1;
        } else if self.curr_rtt_ns.is_some_and(|c| {
            c > delay_min + delay_min.clamp(HYSTART_DELAY_MIN_NS, HYSTART_DELAY_MAX_NS)
        }) {
            self.found = true;
        }
        if self.found {
            self.w.ssthresh = self.w.cwnd;
        }
    }

    fn start_epoch(&mut self, now_ns: u64, seg: u64) {
        self.epoch_start_ns = Some(now_ns);
        if self.last_max_cwnd <= seg {
            self.k_s = 0.0;
            self.origin = seg;
        } else {
            self.k_s = ((self.last_max_cwnd - seg) as f64 / C).cbrt();
            self.origin = self.last_max_cwnd;
        }
    }

    /// `TcpCubic::Update`: acked segments per segment of growth.
    fn count(&mut self, now_ns: u64) -> u64 {
        let seg = cwnd_segments(&self.w);
        let epoch_ns = if let Some(epoch_ns) = self.epoch_start_ns {
            epoch_ns
        } else {
            self.start_epoch(now_ns, seg);
            now_ns
        };
        let t_s = (now_ns + self.delay_min_ns.unwrap_or(0) - epoch_ns) as f64 / NS_PER_S;
        let delta = (C * (t_s - self.k_s).abs().powi(3)) as u64;
        let target = if t_s < self.k_s {
            self.origin.saturating_sub(delta)
        } else {
            self.origin + delta
        };
        let mut cnt = if target > seg {
            seg / (target - seg)
        } else {
            100 * seg
        };
        if self.last_max_cwnd == 0 && cnt > CNT_CLAMP {
            cnt = CNT_CLAMP;
        }
        cnt.max(2)
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn grows_only_when_cwnd_limited(&self) -> bool {
        false
    }
    fn on_handshake_rtt(&mut self, sample: &RttSample) {
        self.rtt.sample(sample);
    }
    /// `TcpCubic::PktsAcked`, with ns-3's smoothed, quantized RTT.
    fn on_rtt(&mut self, sample: &RttSample) {
        let rtt_ns = self.rtt.sample(sample);
        self.ack = sample.ack;
        self.snd_nxt = sample.snd_nxt;
        let now_ns = sample.now_ns;
        if self
            .epoch_start_ns
            .is_some_and(|epoch| now_ns - epoch < CUBIC_DELTA_NS)
        {
            return;
        }
        self.delay_min_ns = Some(self.delay_min_ns.map_or(rtt_ns, |d| d.min(rtt_ns)));
        if self.w.cwnd <= self.w.ssthresh && self.w.cwnd >= HYSTART_LOW_WINDOW {
            self.hystart_update(rtt_ns, now_ns);
        }
    }
    /// `TcpCubic::IncreaseWindow`.
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, now_ns: u64) {
        let mut segments = self.acked.take(acked_bytes, self.w.mss_bytes);
        if self.w.in_slow_start() {
            if self.ack > self.end_seq {
                self.hystart_reset(now_ns);
            }
            self.w.cwnd += segments as f64;
            segments = 0;
        }
        if !self.w.in_slow_start() && segments > 0 {
            self.cwnd_cnt += segments;
            let cnt = self.count(now_ns);
            if self.cwnd_cnt >= cnt {
                self.w.cwnd += 1.0;
                self.cwnd_cnt -= cnt;
            }
        }
    }
    /// `TcpCubic::GetSsThresh`.
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let seg = cwnd_segments(&self.w);
        self.last_max_cwnd = if seg < self.last_max_cwnd {
            (seg as f64 * (1.0 + BETA) / 2.0) as u64
        } else {
            seg
        };
        self.epoch_start_ns = None;
        let ssthresh_bytes = ((seg as f64 * BETA) as u64).max(2) * u64::from(self.w.mss_bytes);
        reduce_to_bytes(&mut self.w, ssthresh_bytes);
    }
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        // CongestionStateSet(CA_LOSS): CubicReset and HystartReset.
        self.last_max_cwnd = 0;
        self.origin = 0;
        self.k_s = 0.0;
        self.delay_min_ns = None;
        self.found = false;
        self.hystart_reset(now_ns);
        self.w.cwnd = 1.0;
    }
}
