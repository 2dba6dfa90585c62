// udt_harness: memory-to-memory transfers over UDT4 (Debian's libudt-dev, UDT 4.11), the
// peer the Hurricane benchmark sets against it. Built by scripts/setup.sh into
// target/udt-harness/udt_harness; run by src/longhaul/measure/tools/udt.py.
//
//   udt_harness recv --port P [--mss 1500] [--buffer-bytes B]
//       Accepts one connection, receives the byte count the sender announces into
//       memory, answers one byte when all of it arrived, prints one JSON line, exits.
//   udt_harness send --to ADDR --port P --bytes N [--mss 1500] [--buffer-bytes B]
//       Sends N bytes from memory as fast as UDT allows, waits for that answer, prints
//       one JSON line, exits.
//
// Without --buffer-bytes UDT runs with its own defaults ("out of the box"); with it, the
// UDT and UDP buffers and the flow window are sized to hold B bytes ("tuned": B is meant
// to be the bandwidth-delay product), never less than UDT's defaults (see configure).
// Each JSON line reports the sizes in force, as UDT reads them back. The receiver prints {"listening": P} on stderr once
// bound; errors are one JSON line {"error": ...} on stderr and exit status 1.

#include <arpa/inet.h>
#include <netdb.h>
#include <udt/udt.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// One send or recv call moves at most this much: large enough that the call overhead
// does not matter, small enough to stay in cache.
constexpr int kChunkBytes = 1 << 20;
// IP and UDP headers: UDT counts its buffers in packets of MSS less these.
constexpr int kIpUdpBytes = 28;
// UDT 4.11's own sizes (core.cpp): its buffers in packets, its flow window.
constexpr int64_t kDefaultBufferPackets = 8192;
constexpr int64_t kDefaultWindowPackets = 25600;

struct Options {
    std::string mode;
    std::string to;
    int port = 0;
    int64_t bytes = 0;
    int mss = 1500;
    int64_t buffer_bytes = 0;
};

[[noreturn]] void fail(const std::string& what) {
    std::string escaped;
    for (char c : what) {
        if (c == '"' || c == '\\') escaped += '\\';
        escaped += (c == '\n') ? ' ' : c;
    }
    std::fprintf(stderr, "{\"error\": \"%s\"}\n", escaped.c_str());
    std::exit(1);
}

[[noreturn]] void udt_fail(const std::string& during) {
    fail(during + ": " + UDT::getlasterror().getErrorMessage());
}

Options parse(int argc, char** argv) {
    if (argc < 2) fail("usage: udt_harness recv --port P | send --to ADDR --port P --bytes N");
    Options options;
    options.mode = argv[1];
    if (options.mode != "recv" && options.mode != "send") fail("mode must be recv or send");
    for (int i = 2; i < argc; i += 2) {
        std::string key = argv[i];
        if (i + 1 >= argc) fail(key + " needs a value");
        std::string value = argv[i + 1];
        char* end = nullptr;
        long long number = std::strtoll(value.c_str(), &end, 10);
        bool numeric = end != nullptr && *end == '\0' && !value.empty();
        if (key == "--to") {
            options.to = value;
            continue;
        }
        if (!numeric || number < 0) fail(key + " needs a whole number, not " + value);
        if (key == "--port") options.port = static_cast<int>(number);
        else if (key == "--bytes") options.bytes = number;
        else if (key == "--mss") options.mss = static_cast<int>(number);
        else if (key == "--buffer-bytes") options.buffer_bytes = number;
        else fail("unknown option " + key);
    }
    if (options.port <= 0 || options.port > 65535) fail("--port must be 1-65535");
    if (options.mss < 76 || options.mss > 65536) fail("--mss must be 76-65536");
    if (options.mode == "send" && (options.to.empty() || options.bytes <= 0))
        fail("send needs --to ADDR and --bytes N (N > 0)");
    return options;
}

void set_int(UDTSOCKET socket, UDTOpt option, int value, const char* name) {
    if (UDT::setsockopt(socket, 0, option, &value, sizeof value) == UDT::ERROR)
        udt_fail(std::string("setting ") + name);
}

// Options must be set before bind/connect (an accepted socket inherits the listener's).
// The order matters: UDT caps the receive buffer at the flow window and counts both in
// packets of the MSS, so the MSS comes first, then the window, then the buffers.
//
// Tuned sizes never go below UDT's defaults (buffers of 8192 packets, a window of 25600):
// measured on a veth pair, buffers of 1-2 MB (a short path's BDP) stalled UDT 4.11 at
// 0.14 Gb/s or never finished, where its defaults ran 1 Gb/s and more.
void configure(UDTSOCKET socket, const Options& options) {
    set_int(socket, UDT_MSS, options.mss, "UDT_MSS");
    if (options.buffer_bytes <= 0) return;
    int64_t payload = options.mss - kIpUdpBytes;
    int64_t wanted = std::max<int64_t>(options.buffer_bytes, kDefaultBufferPackets * payload);
    // UDT keeps buffer sizes in int; a BDP above 2 GB is held at the largest it takes.
    int64_t capped_bytes = std::min<int64_t>(wanted, INT32_MAX - payload);
    int64_t packets = std::max<int64_t>((capped_bytes + payload - 1) / payload + 1,
                                        kDefaultWindowPackets);
    int bytes = static_cast<int>(capped_bytes);
    set_int(socket, UDT_FC, static_cast<int>(packets), "UDT_FC");
    set_int(socket, UDT_SNDBUF, bytes, "UDT_SNDBUF");
    set_int(socket, UDT_RCVBUF, bytes, "UDT_RCVBUF");
    // The kernel holds these at net.core.wmem_max / rmem_max.
    set_int(socket, UDP_SNDBUF, bytes, "UDP_SNDBUF");
    set_int(socket, UDP_RCVBUF, bytes, "UDP_RCVBUF");
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

int get_int(UDTSOCKET socket, UDTOpt option) {
    int value = -1;
    int length = sizeof value;
    UDT::getsockopt(socket, 0, option, &value, &length);
    return value;
}

// The sizes in force on this connection and what UDT counted on it, as JSON members.
std::string counters(UDTSOCKET socket) {
    char sizes[256];
    std::snprintf(sizes, sizeof sizes,
                  ", \"udt_sndbuf_bytes\": %d, \"udt_rcvbuf_bytes\": %d, \"udp_sndbuf_bytes\": %d"
                  ", \"udp_rcvbuf_bytes\": %d, \"flow_window_packets\": %d",
                  get_int(socket, UDT_SNDBUF), get_int(socket, UDT_RCVBUF),
                  get_int(socket, UDP_SNDBUF), get_int(socket, UDP_RCVBUF),
                  get_int(socket, UDT_FC));
    UDT::TRACEINFO trace;
    if (UDT::perfmon(socket, &trace) == UDT::ERROR) return sizes;
    char text[256];
    std::snprintf(text, sizeof text,
                  ", \"rtt_ms\": %.3f, \"packets_sent\": %lld, \"packets_retransmitted\": %d"
                  ", \"packets_lost_sender\": %d, \"packets_lost_receiver\": %d",
                  trace.msRTT, static_cast<long long>(trace.pktSentTotal),
                  trace.pktRetransTotal, trace.pktSndLossTotal, trace.pktRcvLossTotal);
    return std::string(sizes) + text;
}

void recv_exactly(UDTSOCKET socket, char* data, int64_t length, const char* what) {
    int64_t got = 0;
    while (got < length) {
        int step = static_cast<int>(std::min<int64_t>(length - got, kChunkBytes));
        int n = UDT::recv(socket, data + got, step, 0);
        if (n == UDT::ERROR) udt_fail(std::string("receiving ") + what);
        got += n;
    }
}

void send_exactly(UDTSOCKET socket, const char* data, int64_t length, const char* what) {
    int64_t sent = 0;
    while (sent < length) {
        int step = static_cast<int>(std::min<int64_t>(length - sent, kChunkBytes));
        int n = UDT::send(socket, data + sent, step, 0);
        if (n == UDT::ERROR) udt_fail(std::string("sending ") + what);
        sent += n;
    }
}

int receive(const Options& options) {
    UDTSOCKET listener = UDT::socket(AF_INET, SOCK_STREAM, 0);
    configure(listener, options);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(options.port));
    address.sin_addr.s_addr = INADDR_ANY;
    if (UDT::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == UDT::ERROR)
        udt_fail("binding port " + std::to_string(options.port));
    if (UDT::listen(listener, 1) == UDT::ERROR) udt_fail("listening");
    std::fprintf(stderr, "{\"listening\": %d}\n", options.port);
    std::fflush(stderr);

    sockaddr_in peer{};
    int peer_length = sizeof peer;
    UDTSOCKET socket = UDT::accept(listener, reinterpret_cast<sockaddr*>(&peer), &peer_length);
    if (socket == UDT::INVALID_SOCK) udt_fail("accepting");
    // Timed from the first data in: the announced length leads them, in their first packet
    // (the accepted handshake is a round trip before it, which the goodput is not to pay).
    uint64_t announced = 0;
    recv_exactly(socket, reinterpret_cast<char*>(&announced), sizeof announced, "the length");
    Clock::time_point start = Clock::now();
    std::vector<char> buffer(kChunkBytes);
    int64_t total = static_cast<int64_t>(announced);
    int64_t got = 0;
    while (got < total) {
        int step = static_cast<int>(std::min<int64_t>(total - got, kChunkBytes));
        int n = UDT::recv(socket, buffer.data(), step, 0);
        if (n == UDT::ERROR) udt_fail("receiving after " + std::to_string(got) + " bytes");
        got += n;
    }
    double seconds = seconds_since(start);
    char done = 1;
    send_exactly(socket, &done, 1, "the answer");
    std::printf("{\"role\": \"recv\", \"bytes\": %lld, \"seconds\": %.6f, \"mss\": %d, "
                "\"buffer_bytes\": %lld%s}\n",
                static_cast<long long>(got), seconds, options.mss,
                static_cast<long long>(options.buffer_bytes), counters(socket).c_str());
    std::fflush(stdout);
    // The sender closes once it has the answer; closing here first could cut it off.
    char rest;
    UDT::recv(socket, &rest, 1, 0);
    UDT::close(socket);
    UDT::close(listener);
    return 0;
}

int send(const Options& options) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* found = nullptr;
    std::string port = std::to_string(options.port);
    if (getaddrinfo(options.to.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr)
        fail("cannot resolve " + options.to);
    UDTSOCKET socket = UDT::socket(AF_INET, SOCK_STREAM, 0);
    configure(socket, options);
    int connected = UDT::connect(socket, found->ai_addr, static_cast<int>(found->ai_addrlen));
    freeaddrinfo(found);
    if (connected == UDT::ERROR) udt_fail("connecting to " + options.to + ":" + port);

    Clock::time_point start = Clock::now();
    uint64_t announced = static_cast<uint64_t>(options.bytes);
    send_exactly(socket, reinterpret_cast<const char*>(&announced), sizeof announced,
                 "the length");
    std::vector<char> buffer(kChunkBytes, 'u');
    int64_t sent = 0;
    while (sent < options.bytes) {
        int step = static_cast<int>(std::min<int64_t>(options.bytes - sent, kChunkBytes));
        int n = UDT::send(socket, buffer.data(), step, 0);
        if (n == UDT::ERROR) udt_fail("sending after " + std::to_string(sent) + " bytes");
        sent += n;
    }
    char done = 0;
    recv_exactly(socket, &done, 1, "the receiver's answer");
    double seconds = seconds_since(start);
    std::printf("{\"role\": \"send\", \"bytes\": %lld, \"seconds\": %.6f, \"mss\": %d, "
                "\"buffer_bytes\": %lld%s}\n",
                static_cast<long long>(sent), seconds, options.mss,
                static_cast<long long>(options.buffer_bytes), counters(socket).c_str());
    std::fflush(stdout);
    UDT::close(socket);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse(argc, argv);
    UDT::startup();
    int status = options.mode == "recv" ? receive(options) : send(options);
    UDT::cleanup();
    return status;
}
