//! Scenarios: what to simulate, as JSON. Parsing names the field of any error
//! (`hosts.sender.mss: unknown field ...`), and validation names the field it rejects.
//!
//! A scenario gives the path and the hosts either in full or as a preset (see
//! [`crate::presets`]) with fields that override it. The resolved form, with every value
//! filled in, is echoed in the results.

use serde::{Deserialize, Serialize};

use crate::cc::{CcKind, Kernel};
use crate::credit;
use crate::presets;
use crate::tcp::TCP_IP_HEADER_BYTES;
use longhaul_link::Loss;

pub const MAX_STREAMS: u32 = 128;
/// Queue used when neither the scenario nor a preset gives one.
pub const DEFAULT_QUEUE_BYTES: u64 = 4 << 20;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seconds measured (after `omit_s`).
    pub duration_s: f64,
    #[serde(default = "default_interval_s")]
    pub interval_s: f64,
    /// Seconds simulated first and left out of the results (iperf3's --omit).
    #[serde(default)]
    pub omit_s: f64,
    #[serde(default = "default_cc")]
    pub cc: CcKind,
    #[serde(default = "default_streams")]
    pub streams: u32,
    /// Bytes each stream sends; absent for a transfer that lasts the whole run.
    #[serde(default)]
    pub transfer_bytes: Option<u64>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// Milliseconds into the run at which the flows' connections open (no data before).
    #[serde(default)]
    pub start_ms: f64,
    #[serde(default)]
    pub path_preset: Option<String>,
    #[serde(default)]
    pub path: PathSpec,
    #[serde(default)]
    pub host_preset: Option<String>,
    #[serde(default)]
    pub hosts: HostsSpec,
    /// Groups of flows with their own congestion control and round-trip time, in place
    /// of `cc` and `streams` (which then must be left out): flows of different RTTs and
    /// variants sharing the bottleneck.
    #[serde(default)]
    pub flows: Option<Vec<FlowGroupSpec>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowGroupSpec {
    #[serde(default = "default_streams")]
    pub streams: u32,
    #[serde(default = "default_cc")]
    pub cc: CcKind,
    /// This group's round-trip propagation time: at least the path's, the difference
    /// added after the bottleneck. Absent: the path's.
    #[serde(default)]
    pub rtt_ms: Option<f64>,
    /// Data from the receiving host back to the sending one, over the reverse link,
    /// where it competes with the forward flows' ACKs: responsive cross traffic the
    /// other way. Reported apart (`end.reverse_streams`), never in the sums.
    #[serde(default)]
    pub reverse: bool,
}

/// A group of flows, every value filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowGroup {
    pub streams: u32,
    pub cc: CcKind,
    pub rtt_ms: f64,
    pub reverse: bool,
}

pub(crate) fn default_interval_s() -> f64 {
    1.0
}
pub(crate) fn default_cc() -> CcKind {
    CcKind::Cubic
}
pub(crate) fn default_streams() -> u32 {
    1
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    pub rate_bps: Option<f64>,
    pub rtt_ms: Option<f64>,
    pub one_way_delay_ms: Option<f64>,
    pub queue_bytes: Option<u64>,
    pub reverse_queue_bytes: Option<u64>,
    pub loss: Option<Loss>,
    /// Loss on the return path (the ACKs'); none unless given.
    pub reverse_loss: Option<Loss>,
    pub cross_traffic_bps: Option<f64>,
    pub cross_traffic_packet_bytes: Option<u32>,
    pub frame_overhead_bytes: Option<u32>,
    /// A lossless forward path with credit-based flow control ([`crate::credit`]) in
    /// place of a drop-tail queue: the far end's buffer, whose credit the line sends
    /// against; `queue_bytes` is then the near end's.
    pub credit_buffer_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostsSpec {
    #[serde(default)]
    pub sender: HostSpec,
    #[serde(default)]
    pub receiver: HostSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub nic_rate_bps: Option<f64>,
    pub bus_rate_bps: Option<f64>,
    pub mtu_bytes: Option<u32>,
    pub auto_tuning: Option<bool>,
    pub snd_buf_max_bytes: Option<u64>,
    pub rcv_buf_max_bytes: Option<u64>,
    pub delayed_ack: Option<bool>,
    pub delayed_ack_timeout_ms: Option<f64>,
    pub min_rto_ms: Option<f64>,
    pub initial_cwnd_segments: Option<u32>,
    pub initial_ssthresh_segments: Option<u32>,
    pub kernel: Option<Kernel>,
}

/// The path, every value filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathConfig {
    pub rate_bps: f64,
    pub rtt_ms: f64,
    pub queue_bytes: u64,
    pub reverse_queue_bytes: u64,
    pub loss: Loss,
    pub reverse_loss: Loss,
    pub cross_traffic_bps: f64,
    pub cross_traffic_packet_bytes: u32,
    pub frame_overhead_bytes: u32,
    /// `Some`: the forward path is lossless, with credit-based flow control.
    pub credit_buffer_bytes: Option<u64>,
}

/// A host, every value filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostConfig {
    pub nic_rate_bps: f64,
    /// The I/O bus ceiling (PCI-X about 6.5 Gb/s); `None` for no ceiling.
    pub bus_rate_bps: Option<f64>,
    pub mtu_bytes: u32,
    /// Linux auto-tuning: windows grow up to the ceilings below. Off: the buffers are
    /// fixed at those sizes.
    pub auto_tuning: bool,
    pub snd_buf_max_bytes: u64,
    pub rcv_buf_max_bytes: u64,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_ms: f64,
    pub min_rto_ms: f64,
    /// `None`: RFC 3390, min(4, max(2, 4380 / MSS)).
    pub initial_cwnd_segments: Option<u32>,
    /// `None`: no initial threshold (slow start until the first loss).
    pub initial_ssthresh_segments: Option<u32>,
    /// Whose congestion controls the host runs: Linux's (the model), or ns-3.37's to
    /// check the simulator against ns-3.
    pub kernel: Kernel,
}

impl HostConfig {
    pub fn mss_bytes(&self) -> u32 {
        self.mtu_bytes - TCP_IP_HEADER_BYTES
    }

    /// What the interface can send: NIC rate, or the bus ceiling if lower.
    pub fn egress_rate_bps(&self) -> f64 {
        self.bus_rate_bps
            .map_or(self.nic_rate_bps, |bus| bus.min(self.nic_rate_bps))
    }

    pub fn initial_cwnd(&self) -> f64 {
        let mss = f64::from(self.mss_bytes());
        self.initial_cwnd_segments
            .map_or_else(|| (4380.0 / mss).floor().clamp(2.0, 4.0), f64::from)
    }
}

/// A scenario with presets applied and every value checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    pub duration_s: f64,
    pub interval_s: f64,
    pub omit_s: f64,
    /// The first group's variant, and the flows of every group.
    pub cc: CcKind,
    pub streams: u32,
    pub flows: Vec<FlowGroup>,
    pub transfer_bytes: Option<u64>,
    pub seed: u64,
    pub start_ms: f64,
    pub path: PathConfig,
    pub sender: HostConfig,
    pub receiver: HostConfig,
}

/// A scenario that cannot run: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() || self.field == "." {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

pub(crate) fn err(field: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Parse JSON into a scenario; errors name the field (`path.loss.random: invalid type`).
pub fn parse(json: &str) -> Result<Scenario, ScenarioError> {
    parse_json(json)
}

/// Parse JSON into any scenario form, naming the field of an error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, ScenarioError> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        ScenarioError {
            field,
            message: inner.to_string(),
        }
    })
}

pub(crate) fn positive(field: &str, v: f64) -> Result<f64, ScenarioError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(err(field, format!("must be a positive number, got {v}")))
    }
}

pub(crate) fn non_negative(field: &str, v: f64) -> Result<f64, ScenarioError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(err(field, format!("must be zero or more, got {v}")))
    }
}

fn resolve_path(s: &Scenario) -> Result<PathConfig, ScenarioError> {
    let base = match &s.path_preset {
        Some(name) => Some(presets::path_preset(name).ok_or_else(|| {
            let known: Vec<String> = presets::path_presets()
                .into_iter()
                .map(|p| p.name)
                .collect();
            err(
                "path_preset",
                format!("unknown preset {name:?} (known: {})", known.join(", ")),
            )
        })?),
        None => None,
    };
    let p = &s.path;
    if p.rtt_ms.is_some() && p.one_way_delay_ms.is_some() {
        return Err(err(
            "path.one_way_delay_ms",
            "give rtt_ms or one_way_delay_ms, not both",
        ));
    }
    let rate_bps = p
        .rate_bps
        .or(base.as_ref().map(|b| b.rate_bps))
        .ok_or_else(|| err("path.rate_bps", "missing (give it or a path_preset)"))?;
    let rtt_ms = match (p.rtt_ms, p.one_way_delay_ms) {
        (Some(rtt), _) => non_negative("path.rtt_ms", rtt)?,
        (None, Some(one_way)) => 2.0 * non_negative("path.one_way_delay_ms", one_way)?,
        (None, None) => base.as_ref().map(|b| b.rtt_ms).ok_or_else(|| {
            err(
                "path.rtt_ms",
                "missing (give it, one_way_delay_ms or a path_preset)",
            )
        })?,
    };
    let path = PathConfig {
        rate_bps: positive("path.rate_bps", rate_bps)?,
        rtt_ms,
        queue_bytes: p
            .queue_bytes
            .or(base.as_ref().map(|b| b.queue_bytes))
            .unwrap_or(DEFAULT_QUEUE_BYTES),
        reverse_queue_bytes: p
            .reverse_queue_bytes
            .or(base.as_ref().map(|b| b.reverse_queue_bytes))
            .unwrap_or(presets::REVERSE_QUEUE_BYTES),
        loss: p.loss.or(base.as_ref().map(|b| b.loss)).unwrap_or_default(),
        reverse_loss: p
            .reverse_loss
            .or(base.as_ref().map(|b| b.reverse_loss))
            .unwrap_or_default(),
        cross_traffic_bps: p
            .cross_traffic_bps
            .or(base.as_ref().map(|b| b.cross_traffic_bps))
            .unwrap_or(0.0),
        cross_traffic_packet_bytes: p
            .cross_traffic_packet_bytes
            .or(base.as_ref().map(|b| b.cross_traffic_packet_bytes))
            .unwrap_or(1500),
        frame_overhead_bytes: p
            .frame_overhead_bytes
            .or(base.as_ref().map(|b| b.frame_overhead_bytes))
            .unwrap_or(presets::ETHERNET_FRAMING_BYTES),
        credit_buffer_bytes: p
            .credit_buffer_bytes
            .or(base.as_ref().and_then(|b| b.credit_buffer_bytes)),
    };
    validate_path(&path)?;
    Ok(path)
}

fn validate_path(p: &PathConfig) -> Result<(), ScenarioError> {
    if p.rate_bps < 1e3 {
        return Err(err(
            "path.rate_bps",
            format!("must be at least 1000, got {}", p.rate_bps),
        ));
    }
    if p.rtt_ms > 100_000.0 {
        return Err(err(
            "path.rtt_ms",
            format!("must be at most 100000, got {}", p.rtt_ms),
        ));
    }
    p.loss
        .check()
        .map_err(|e| err(&format!("path.{}", e.field), e.message))?;
    p.reverse_loss
        .check()
        .map_err(|e| err(&format!("path.reverse_{}", e.field), e.message))?;
    non_negative("path.cross_traffic_bps", p.cross_traffic_bps)?;
    if p.cross_traffic_bps >= p.rate_bps {
        return Err(err("path.cross_traffic_bps", "must be below path.rate_bps"));
    }
    if !(64..=65_535).contains(&p.cross_traffic_packet_bytes) {
        return Err(err(
            "path.cross_traffic_packet_bytes",
            "must be in 64..=65535",
        ));
    }
    if p.frame_overhead_bytes > 1000 {
        return Err(err("path.frame_overhead_bytes", "must be at most 1000"));
    }
    if p.credit_buffer_bytes.is_some() {
        validate_credit_path(p)?;
    }
    Ok(())
}

/// A credit-based path is lossless and carries only the scenario's flows.
fn validate_credit_path(p: &PathConfig) -> Result<(), ScenarioError> {
    if p.loss != Loss::NONE {
        return Err(err(
            "path.loss",
            "a credit-based path (path.credit_buffer_bytes) loses nothing: leave loss out",
        ));
    }
    if p.cross_traffic_bps > 0.0 {
        return Err(err(
            "path.cross_traffic_bps",
            "cross traffic on a credit-based path is not modelled: leave it out",
        ));
    }
    Ok(())
}

/// The far end of a credit-based path must hold a frame, in whole credit blocks; flows
/// longer than the path would need a delay line the credit loop does not cover.
fn validate_credit_buffer(
    path: &PathConfig,
    frame_bytes: u64,
    flows: &[FlowGroup],
) -> Result<(), ScenarioError> {
    let Some(far_bytes) = path.credit_buffer_bytes else {
        return Ok(());
    };
    let frame = credit::charge_bytes(frame_bytes as u32, credit::IB_CREDIT_BLOCK_BYTES);
    for (field, bytes) in [
        ("path.credit_buffer_bytes", far_bytes),
        ("path.queue_bytes", path.queue_bytes),
    ] {
        if bytes < frame {
            return Err(err(
                field,
                format!("must hold at least one frame ({frame} bytes in 64-byte blocks)"),
            ));
        }
    }
    if flows.iter().any(|g| g.rtt_ms > path.rtt_ms) {
        return Err(err(
            "flows.rtt_ms",
            "flows longer than the path are not modelled on a credit-based path",
        ));
    }
    Ok(())
}

/// The host preset `name`, if one is named; an unknown name is refused at `field`.
pub(crate) fn named_host_preset(
    field: &str,
    name: Option<&str>,
) -> Result<Option<HostConfig>, ScenarioError> {
    let Some(name) = name else {
        return Ok(None);
    };
    presets::host_preset(name).map(Some).ok_or_else(|| {
        let known: Vec<&str> = presets::host_presets().iter().map(|p| p.name).collect();
        err(
            field,
            format!("unknown preset {name:?} (known: {})", known.join(", ")),
        )
    })
}

pub(crate) fn resolve_host(
    side: &str,
    preset: Option<&HostConfig>,
    spec: &HostSpec,
) -> Result<HostConfig, ScenarioError> {
    // Without a preset the kernel named (or the default) brings its stock values.
    let base = preset
        .cloned()
        .unwrap_or_else(|| presets::kernel_defaults(spec.kernel.unwrap_or_default()));
    let h = HostConfig {
        nic_rate_bps: spec.nic_rate_bps.unwrap_or(base.nic_rate_bps),
        bus_rate_bps: spec.bus_rate_bps.or(base.bus_rate_bps),
        mtu_bytes: spec.mtu_bytes.unwrap_or(base.mtu_bytes),
        auto_tuning: spec.auto_tuning.unwrap_or(base.auto_tuning),
        snd_buf_max_bytes: spec.snd_buf_max_bytes.unwrap_or(base.snd_buf_max_bytes),
        rcv_buf_max_bytes: spec.rcv_buf_max_bytes.unwrap_or(base.rcv_buf_max_bytes),
        delayed_ack: spec.delayed_ack.unwrap_or(base.delayed_ack),
        delayed_ack_timeout_ms: spec
            .delayed_ack_timeout_ms
            .unwrap_or(base.delayed_ack_timeout_ms),
        min_rto_ms: spec.min_rto_ms.unwrap_or(base.min_rto_ms),
        initial_cwnd_segments: spec.initial_cwnd_segments.or(base.initial_cwnd_segments),
        initial_ssthresh_segments: spec
            .initial_ssthresh_segments
            .or(base.initial_ssthresh_segments),
        kernel: spec.kernel.unwrap_or(base.kernel),
    };
    let f = |name: &str| format!("hosts.{side}.{name}");
    positive(&f("nic_rate_bps"), h.nic_rate_bps)?;
    if let Some(bus) = h.bus_rate_bps {
        positive(&f("bus_rate_bps"), bus)?;
    }
    if !(576..=65_535).contains(&h.mtu_bytes) {
        return Err(err(
            &f("mtu_bytes"),
            format!("must be in 576..=65535, got {}", h.mtu_bytes),
        ));
    }
    let min_buf = 2 * u64::from(h.mss_bytes());
    if h.snd_buf_max_bytes < min_buf {
        return Err(err(
            &f("snd_buf_max_bytes"),
            format!("must be at least two segments ({min_buf} bytes)"),
        ));
    }
    if h.rcv_buf_max_bytes < min_buf {
        return Err(err(
            &f("rcv_buf_max_bytes"),
            format!("must be at least two segments ({min_buf} bytes)"),
        ));
    }
    positive(&f("delayed_ack_timeout_ms"), h.delayed_ack_timeout_ms)?;
    non_negative(&f("min_rto_ms"), h.min_rto_ms)?;
    if h.initial_cwnd_segments == Some(0) {
        return Err(err(&f("initial_cwnd_segments"), "must be at least 1"));
    }
    if h.initial_ssthresh_segments.is_some_and(|s| s < 2) {
        return Err(err(&f("initial_ssthresh_segments"), "must be at least 2"));
    }
    Ok(h)
}

/// Apply presets, fill defaults, and check every value. `seed` (from the command line)
/// wins over the scenario's.
pub fn resolve(s: &Scenario, seed: Option<u64>) -> Result<Resolved, ScenarioError> {
    positive("duration_s", s.duration_s)?;
    if s.duration_s > 1e5 {
        return Err(err("duration_s", "must be at most 100000"));
    }
    positive("interval_s", s.interval_s)?;
    non_negative("omit_s", s.omit_s)?;
    non_negative("start_ms", s.start_ms)?;
    if !(1..=MAX_STREAMS).contains(&s.streams) {
        return Err(err(
            "streams",
            format!("must be in 1..={MAX_STREAMS}, got {}", s.streams),
        ));
    }
    if s.transfer_bytes == Some(0) {
        return Err(err("transfer_bytes", "must be at least 1"));
    }
    let host_base = named_host_preset("host_preset", s.host_preset.as_deref())?;
    let path = resolve_path(s)?;
    let sender = resolve_host("sender", host_base.as_ref(), &s.hosts.sender)?;
    let receiver = resolve_host("receiver", host_base.as_ref(), &s.hosts.receiver)?;
    if sender.mtu_bytes != receiver.mtu_bytes {
        return Err(err(
            "hosts.receiver.mtu_bytes",
            "must equal hosts.sender.mtu_bytes",
        ));
    }
    let flows = resolve_flows(s, &path)?;
    let frame = u64::from(sender.mtu_bytes + path.frame_overhead_bytes);
    if path.queue_bytes < frame {
        return Err(err(
            "path.queue_bytes",
            format!("must hold at least one frame ({frame} bytes)"),
        ));
    }
    validate_credit_buffer(&path, frame, &flows)?;
    Ok(Resolved {
        duration_s: s.duration_s,
        interval_s: s.interval_s,
        omit_s: s.omit_s,
        cc: flows[0].cc,
        streams: flows.iter().map(|g| g.streams).sum(),
        flows,
        transfer_bytes: s.transfer_bytes,
        seed: seed.or(s.seed).unwrap_or(1),
        start_ms: s.start_ms,
        path,
        sender,
        receiver,
    })
}

fn resolve_flows(s: &Scenario, path: &PathConfig) -> Result<Vec<FlowGroup>, ScenarioError> {
    let Some(groups) = &s.flows else {
        return Ok(vec![FlowGroup {
            streams: s.streams,
            cc: s.cc,
            rtt_ms: path.rtt_ms,
            reverse: false,
        }]);
    };
    if s.streams != default_streams() || s.cc != default_cc() {
        return Err(err(
            "flows",
            "give cc and streams in each group, not beside flows",
        ));
    }
    if groups.is_empty() {
        return Err(err("flows", "give at least one group"));
    }
    let resolved: Vec<FlowGroup> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let rtt_ms = g.rtt_ms.unwrap_or(path.rtt_ms);
            if !(rtt_ms.is_finite() && rtt_ms >= path.rtt_ms && rtt_ms <= 100_000.0) {
                return Err(err(
                    &format!("flows[{i}].rtt_ms"),
                    format!(
                        "must be at least path.rtt_ms ({}) and at most 100000, got {rtt_ms}",
                        path.rtt_ms
                    ),
                ));
            }
            if g.streams == 0 {
                return Err(err(&format!("flows[{i}].streams"), "must be at least 1"));
            }
            if g.reverse && rtt_ms > path.rtt_ms {
                return Err(err(
                    &format!("flows[{i}].rtt_ms"),
                    "a reverse group runs on the path's round trip: leave rtt_ms out",
                ));
            }
            Ok(FlowGroup {
                streams: g.streams,
                cc: g.cc,
                rtt_ms,
                reverse: g.reverse,
            })
        })
        .collect::<Result<_, _>>()?;
    if resolved.iter().all(|g| g.reverse) {
        return Err(err(
            "flows",
            "give at least one forward group (reverse: false): the run measures it",
        ));
    }
    let total: u32 = resolved.iter().map(|g| g.streams).sum();
    if total > MAX_STREAMS {
        return Err(err(
            "flows",
            format!("at most {MAX_STREAMS} streams in all, got {total}"),
        ));
    }
    Ok(resolved)
}

/// Parse and resolve in one step.
pub fn load(json: &str, seed: Option<u64>) -> Result<Resolved, ScenarioError> {
    resolve(&parse(json)?, seed)
}
