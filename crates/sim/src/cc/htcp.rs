//! H-TCP (Leith & Shorten 2004) as Linux's `tcp_htcp.c`: the increase per RTT grows with
//! the time Δ since the last congestion event, alpha = 2 (1 - beta) f(Δ) with
//! f(Δ) = 1 + 10 (Δ - `Δ_L`) + ((Δ - `Δ_L`) / 2)^2 beyond `Δ_L` = 1 s, scaled by the minimum
//! RTT (x 10·RTTmin, clamped to [0.1, 2]); the decrease is adaptive,
//! beta = `RTTmin` / `RTTmax` clamped to [0.5, 0.8] (0.5 at the first loss, and when
//! `RTTmin` <= 10 ms). Not modelled: the bandwidth switch (beta = 0.5 after a >20% change
//! of throughput between losses) and undo.

use super::{CongestionControl, NS_PER_S, Window};

pub const DELTA_L_S: f64 = 1.0;
pub const BETA_MIN: f64 = 0.5;
pub const BETA_MAX: f64 = 0.8;
const MAX_RTT_STEP_NS: u64 = 20_000_000;
const RTT_SCALING_MIN_RTT_NS: u64 = 10_000_000;

pub struct Htcp {
    w: Window,
    beta: f64,
    modeswitch: bool,
    last_cong_ns: u64,
    min_rtt_ns: u64,
    max_rtt_ns: u64,
}

/// f(Δ): the unscaled increase factor.
pub fn delta_factor(delta_s: f64) -> f64 {
    if delta_s <= DELTA_L_S {
        1.0
    } else {
        let d = delta_s - DELTA_L_S;
        1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)
    }
}

/// The RTT scaling of the increase: 10 `RTTmin` (in seconds), clamped to [0.1, 2].
pub fn rtt_scale(min_rtt_ns: u64) -> f64 {
    if min_rtt_ns == 0 {
        1.0
    } else {
        (10.0 * min_rtt_ns as f64 / NS_PER_S).clamp(0.1, 2.0)
    }
}

/// alpha(Δ): segments added per RTT.
pub fn alpha(delta_s: f64, min_rtt_ns: u64, beta: f64) -> f64 {
    2.0 * (1.0 - beta) * delta_factor(delta_s) * rtt_scale(min_rtt_ns)
}

impl Htcp {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            beta: BETA_MIN,
            modeswitch: false,
            last_cong_ns: 0,
            min_rtt_ns: 0,
            max_rtt_ns: 0,
        }
    }

    pub fn beta(&self) -> f64 {
        self.beta
    }

    pub fn alpha_at(&self, now_ns: u64) -> f64 {
        let delta_s = now_ns.saturating_sub(self.last_cong_ns) as f64 / NS_PER_S;
        alpha(delta_s, self.min_rtt_ns, self.beta)
    }

    fn update_beta(&mut self) {
        if self.modeswitch && self.min_rtt_ns > RTT_SCALING_MIN_RTT_NS && self.max_rtt_ns > 0 {
            self.beta = (self.min_rtt_ns as f64 / self.max_rtt_ns as f64).clamp(BETA_MIN, BETA_MAX);
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
        // Slowly forget the maximum, for route changes.
        if self.max_rtt_ns > self.min_rtt_ns && self.min_rtt_ns > 0 {
            self.max_rtt_ns = self.min_rtt_ns + (self.max_rtt_ns - self.min_rtt_ns) * 95 / 100;
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_rtt(&mut self, rtt_ns: u64, _now_ns: u64) {
        if self.min_rtt_ns == 0 || rtt_ns < self.min_rtt_ns {
            self.min_rtt_ns = rtt_ns;
        }
        self.max_rtt_ns = self.max_rtt_ns.max(self.min_rtt_ns);
        // Linux lets RTTmax grow by at most 20 ms per sample, to ignore outliers.
        if rtt_ns > self.max_rtt_ns && rtt_ns <= self.max_rtt_ns + MAX_RTT_STEP_NS {
            self.max_rtt_ns = rtt_ns;
        }
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, now_ns: u64) {
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        if ca > 0.0 {
            self.w.cwnd += self.alpha_at(now_ns) * ca / self.w.cwnd;
        }
    }
    fn on_congestion_event(&mut self, now_ns: u64) {
        self.update_beta();
        self.last_cong_ns = now_ns;
        self.w.reduce_to(self.beta);
    }
    fn on_rto(&mut self, now_ns: u64, reduce: bool) {
        if reduce {
            self.on_congestion_event(now_ns);
        }
        self.last_cong_ns = now_ns;
        self.w.cwnd = 1.0;
    }
}
