// The ns-3 side of `longhaul sim validate`: n bulk TCP flows from one host to another
// through a router whose outgoing link is the bottleneck (rate, one-way delay, a
// byte-limited drop-tail queue, random loss on arrival), the same shape longhaul-sim
// gives a path. Prints one JSON line: goodput after the warm-up, and the run's cost.
//
// Built on demand by longhaul (g++ against Debian's libns3-dev); kept small on purpose:
// it belongs to the validation, not to longhaul.
#include <chrono>
#include <cstdio>
#include <string>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

namespace {

Ptr<PacketSink> g_sink;
uint64_t g_warm_bytes = 0;

void MarkWarm() { g_warm_bytes = g_sink->GetTotalRx(); }

}  // namespace

int main(int argc, char* argv[]) {
  std::string cc = "TcpCubic";
  uint32_t streams = 1;
  double rate_mbps = 1000;
  double rtt_ms = 26.8;
  double loss = 0;
  uint32_t queue_bytes = 0;
  double duration_s = 20;
  double warmup_s = 2;
  uint32_t mss = 1448;
  uint32_t buffer_bytes = 0;
  uint32_t seed = 1;
  CommandLine cmd;
  cmd.AddValue("cc", "ns-3 TCP type (TcpLinuxReno, TcpBic, TcpCubic, ...)", cc);
  cmd.AddValue("streams", "parallel flows", streams);
  cmd.AddValue("rateMbps", "bottleneck rate", rate_mbps);
  cmd.AddValue("rttMs", "round-trip propagation delay", rtt_ms);
  cmd.AddValue("loss", "random loss probability per data packet", loss);
  cmd.AddValue("queueBytes", "bottleneck queue (default: one bandwidth-delay product)", queue_bytes);
  cmd.AddValue("durationS", "measured seconds (after the warm-up)", duration_s);
  cmd.AddValue("warmupS", "seconds left out at the start", warmup_s);
  cmd.AddValue("mss", "segment size (bytes of payload)", mss);
  cmd.AddValue("bufferBytes", "socket buffers (default: two bandwidth-delay products)", buffer_bytes);
  cmd.AddValue("seed", "run number of the random streams", seed);
  cmd.Parse(argc, argv);

  const double bdp_bytes = rate_mbps * 1e6 / 8 * rtt_ms / 1e3;
  if (queue_bytes == 0) queue_bytes = static_cast<uint32_t>(bdp_bytes);
  if (buffer_bytes == 0) buffer_bytes = static_cast<uint32_t>(2 * bdp_bytes + 1e6);
  RngSeedManager::SetSeed(1);
  RngSeedManager::SetRun(seed);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + cc));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buffer_bytes));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buffer_bytes));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
  // ns3::TcpCubic::HyStart stays on: turning it off crashes ns-3.37 (a null deref in
  // TcpRateLinux::SkbSent as the window grows).

  NodeContainer nodes;
  nodes.Create(3);  // sender, router, receiver
  PointToPointHelper access;
  access.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
  access.SetChannelAttribute("Delay", StringValue("0ms"));
  access.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize("100000p")));
  PointToPointHelper bottleneck;
  bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate_mbps * 1e6)));
  bottleneck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(rtt_ms * 500)));
  bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize",
                      QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, queue_bytes)));
  NetDeviceContainer first = access.Install(nodes.Get(0), nodes.Get(1));
  NetDeviceContainer second = bottleneck.Install(nodes.Get(1), nodes.Get(2));
  if (loss > 0) {
    Ptr<RateErrorModel> errors = CreateObject<RateErrorModel>();
    errors->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    errors->SetRate(loss);
    second.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(errors));
  }

  InternetStackHelper stack;
  stack.Install(nodes);
  Ipv4AddressHelper addresses;
  addresses.SetBase("198.18.1.0", "255.255.255.0");
  addresses.Assign(first);
  addresses.SetBase("198.18.2.0", "255.255.255.0");
  Ipv4InterfaceContainer far = addresses.Assign(second);
  // The queue is the device's drop-tail queue alone, as on longhaul-sim's links.
  TrafficControlHelper control;
  control.Uninstall(first);
  control.Uninstall(second);
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  const uint16_t port = 5201;
  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
  ApplicationContainer sinks = sink.Install(nodes.Get(2));
  g_sink = DynamicCast<PacketSink>(sinks.Get(0));
  BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(far.GetAddress(1), port));
  bulk.SetAttribute("MaxBytes", UintegerValue(0));
  // Whole segments per write: with BulkSend's default 512-byte writes, ns-3.37 splits and
  // merges send-buffer items around SACKed ranges and dies (a null TcpTxItem reaches
  // TcpRateLinux::SkbSent) once random loss meets a large window.
  bulk.SetAttribute("SendSize", UintegerValue(mss));
  for (uint32_t i = 0; i < streams; ++i) bulk.Install(nodes.Get(0));
  const double end_s = warmup_s + duration_s;
  Simulator::Schedule(Seconds(warmup_s), &MarkWarm);
  Simulator::Stop(Seconds(end_s));

  const auto started = std::chrono::steady_clock::now();
  Simulator::Run();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const uint64_t bytes = g_sink->GetTotalRx() - g_warm_bytes;
  std::printf(
      "{\"goodput_bps\": %.1f, \"bytes\": %llu, \"duration_s\": %g, \"wall_s\": %.3f, "
      "\"cc\": \"%s\", \"streams\": %u}\n",
      bytes * 8.0 / duration_s, static_cast<unsigned long long>(bytes), duration_s, wall_s,
      cc.c_str(), streams);
  Simulator::Destroy();
  return 0;
}
