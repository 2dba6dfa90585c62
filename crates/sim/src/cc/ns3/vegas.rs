//! ns-3's `TcpVegas` (tcp-vegas.cc): once per round (an ACK at or past the `snd_nxt`
//! recorded when it began) compare cwnd with `targetCwnd = floor(cwnd baseRtt / minRtt)`
//! in whole segments, both RTTs ns-3's smoothed, millisecond-quantized estimate (Linux's
//! `tcp_vegas.c` takes raw microsecond samples and divides by `baseRTT`): one segment
//! more while the difference is under alpha 2, one less over beta 4; slow start ends when
//! it exceeds gamma 1. With two samples or fewer in the round, or outside the open
//! state, it is `NewReno`. A loss takes ssthresh to one segment under cwnd (Linux halves).

use super::{
    AckedSegments, Ns3Rtt, cwnd_bytes, cwnd_segments, newreno_avoid, newreno_slow_start,
    newreno_slow_start_then, set_cwnd_segments, set_ssthresh_bytes, ssthresh_bytes,
};
use crate::cc::{CongestionControl, RttSample, Window};

/// `TcpVegas`'s attribute defaults.
pub const ALPHA: u64 = 2;
pub const BETA: u64 = 4;
pub const GAMMA: u64 = 1;

pub struct Vegas {
    w: Window,
    acked: AckedSegments,
    rtt: Ns3Rtt,
    base_rtt_ns: u64,
    min_rtt_ns: u64,
    cnt_rtt: u32,
    doing_vegas_now: bool,
    beg_snd_nxt: u64,
    /// The latest cumulative ACK and `snd_nxt`, from the RTT sample of this ACK.
    ack: u64,
    snd_nxt: u64,
}

impl Vegas {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            rtt: Ns3Rtt::default(),
            base_rtt_ns: u64::MAX,
            min_rtt_ns: u64::MAX,
            cnt_rtt: 0,
            doing_vegas_now: true,
            beg_snd_nxt: 0,
            ack: 0,
            snd_nxt: 0,
        }
    }

    /// `TcpVegas::GetSsThresh`: one segment under cwnd, at least two.
    fn ssthresh_below_cwnd(&self) -> u64 {
        let mss = u64::from(self.w.mss_bytes);
        ssthresh_bytes(&self.w)
            .min(cwnd_bytes(&self.w).saturating_sub(mss))
            .max(2 * mss)
    }

    fn newreno_increase(&mut self, segments: u64) {
        if let Some(left) = newreno_slow_start_then(&mut self.w, segments) {
            newreno_avoid(&mut self.w, left);
        }
    }

    /// The once-per-round decision of `TcpVegas::IncreaseWindow`.
    fn end_round(&mut self, segments: u64) {
        let mut seg = cwnd_segments(&self.w);
        let ratio = self.base_rtt_ns as f64 / self.min_rtt_ns as f64;
        let target = (seg as f64 * ratio) as u64;
        let diff = seg.saturating_sub(target);
        if diff > GAMMA && self.w.in_slow_start() {
            seg = seg.min(target + 1);
            set_cwnd_segments(&mut self.w, seg);
            let ssthresh = self.ssthresh_below_cwnd();
            set_ssthresh_bytes(&mut self.w, ssthresh);
        } else if self.w.in_slow_start() {
            newreno_slow_start(&mut self.w, segments);
        } else if diff > BETA {
            set_cwnd_segments(&mut self.w, seg - 1);
            let ssthresh = self.ssthresh_below_cwnd();
            set_ssthresh_bytes(&mut self.w, ssthresh);
        } else if diff < ALPHA {
            set_cwnd_segments(&mut self.w, seg + 1);
        }
        let ssthresh = ssthresh_bytes(&self.w).max(3 * cwnd_bytes(&self.w) / 4);
        set_ssthresh_bytes(&mut self.w, ssthresh);
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
    fn grows_only_when_cwnd_limited(&self) -> bool {
        false
    }
    fn on_handshake_rtt(&mut self, sample: &RttSample) {
        self.rtt.sample(sample);
    }
    /// `TcpVegas::PktsAcked`.
    fn on_rtt(&mut self, sample: &RttSample) {
        let rtt_ns = self.rtt.sample(sample);
        self.ack = sample.ack;
        self.snd_nxt = sample.snd_nxt;
        self.min_rtt_ns = self.min_rtt_ns.min(rtt_ns);
        self.base_rtt_ns = self.base_rtt_ns.min(rtt_ns);
        self.cnt_rtt += 1;
    }
    /// `TcpVegas::IncreaseWindow`.
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let segments = self.acked.take(acked_bytes, self.w.mss_bytes);
        if !self.doing_vegas_now {
            self.newreno_increase(segments);
            return;
        }
        if self.ack >= self.beg_snd_nxt {
            self.beg_snd_nxt = self.snd_nxt;
            if self.cnt_rtt <= 2 {
                self.newreno_increase(segments);
            } else {
                self.end_round(segments);
            }
            self.cnt_rtt = 0;
            self.min_rtt_ns = u64::MAX;
        } else if self.w.in_slow_start() {
            newreno_slow_start(&mut self.w, segments);
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        // CongestionStateSet(CA_RECOVERY): DisableVegas.
        self.doing_vegas_now = false;
        let ssthresh = self.ssthresh_below_cwnd();
        set_ssthresh_bytes(&mut self.w, ssthresh);
        self.w.cwnd = self.w.ssthresh;
    }
    /// `CongestionStateSet(CA_OPEN)`: `EnableVegas`.
    fn on_recovered(&mut self, _now_ns: u64) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = self.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt_ns = u64::MAX;
    }
}
