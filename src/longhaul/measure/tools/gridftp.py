"""GridFTP between two testbed hosts, memory to memory: Debian's globus-gridftp-server
(13.24) serves /dev/zero, globus-url-copy (10.12) reads a fixed length of it into
/dev/null, over parallel TCP streams (MODE E).

The server runs for one transfer as root without certificates: anonymous access
(`-aa`, which as root needs `-anonymous-user`: the session runs as nobody, who may read
/dev/zero), no forking and one connection (`-no-fork -single`: it exits after the
transfer, so nothing is left behind), no system configuration (`-c /dev/null`: Debian's
/etc/gridftp.conf would set the port). It listens on every address of its namespace:
told one (`-control-interface`), it looks its name up and, with no DNS in a namespace,
does not start ("Temporary failure in name resolution"; /etc/hosts spares 127.0.0.1
only). In MODE E the client listens for the data channels and the server connects. The
client asks for a partial file (`-len`: ERET with a length), since /dev/zero has no size.

globus-url-copy's `-vb` prints its progress once a second and not at the end (a transfer
under a second prints nothing), so the time is taken from its debug output (`-dbg`),
stamped as it arrives. Goodput runs from the first data to the end, as Hurricane's and
UDT's do: from the client's first data callback to its `operation complete`, counting
the bytes after that first callback (the data channels' set-up, about a round trip
after the server's `150 Beginning transfer`, and the control channel's log-in left
out). The whole transfer's time, from `150`, is kept beside it. The bytes are the
client's own count (its data callbacks). The server's transfer log (`-Z`) adds its
view: its time, and TCP retransmits per stream.
"""

from __future__ import annotations

import math
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

from longhaul.measure.tools import ToolError
from longhaul.testbed import netns, serving

SERVER = "globus-gridftp-server"
CLIENT = "globus-url-copy"
INSTALL_HINT = (
    "apt-get install globus-gridftp-server-progs globus-gass-copy-progs (make setup does)"
)
MIN_TCP_BUFFER_BYTES = 64 * 1024
"""The smallest per-stream buffer asked for: below it a short path's BDP would starve
the stream (the kernel's own default is larger)."""
MIB = 1 << 20
"""globus-url-copy's `MB` in -vb output (checked: 5,548,802,048 bytes at 2,645.69 MB/s
two seconds in)."""


class GridftpError(ToolError):
    """GridFTP failed or is missing; the message says which and how to fix it."""


class NoTransferError(GridftpError):
    """The output holds no finished transfer (not globus-url-copy -dbg output, or cut
    short)."""


@dataclass(frozen=True)
class GridftpTest:
    client_ns: str
    server_ns: str
    address: str
    """The server's address, for the client (the server listens on all of its own)."""
    bytes_total: int
    streams: int = 8
    """Parallel TCP data channels (globus-url-copy -p)."""
    tcp_buffer_bytes: int = 0
    """Socket buffer per stream (-tcp-bs, both ends); 0: the path's bandwidth-delay
    product shared by the streams, from `rtt_ms` and `rate_bps` (and the kernel's
    autotuning when those are not given). The kernel holds it at net.core.rmem_max and
    wmem_max."""
    rtt_ms: float = 0.0
    rate_bps: float = 0.0
    """The circuit's rate, for the buffer and the timeout."""
    timeout_s: float = 0.0
    """0: from the size at a quarter of the rate, plus round trips and a margin."""
    port: int = 2811


@dataclass(frozen=True)
class Transfer:
    """What one globus-url-copy run says about its transfer."""

    seconds: float
    """From `150 Beginning transfer` to `operation complete`, as the client saw them."""
    bytes: int
    """Bytes the client received (the sum of its data callbacks)."""
    data_seconds: float = 0.0
    """From the client's first data callback to `operation complete`."""
    first_data_bytes: int = 0
    """What that first callback brought (before `data_seconds` began)."""
    vb_bytes: int | None = None
    """The last -vb progress line: bytes so far, and the average rate then (none for a
    transfer under a second)."""
    vb_avg_bps: float | None = None

    @property
    def _from_first_data(self) -> bool:
        return self.data_seconds > 0 and self.bytes > self.first_data_bytes

    @property
    def timed_seconds(self) -> float:
        """What goodput is over: `data_seconds`, or for a transfer that came in one
        callback (nothing after it to time) `seconds`."""
        return self.data_seconds if self._from_first_data else self.seconds

    @property
    def goodput_bps(self) -> float:
        """From the first data on: the bytes after the first callback over `data_seconds`
        (a transfer that came in one callback: all of it over `seconds`)."""
        if self._from_first_data:
            return (self.bytes - self.first_data_bytes) * 8 / self.data_seconds
        return self.bytes * 8 / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class ServerLog:
    """One transfer in the server's log (-Z)."""

    seconds: float
    bytes: int
    streams: int
    retransmits: list[int] = field(default_factory=list)
    """TCP retransmits per data stream."""


@dataclass(frozen=True)
class GridftpResult:
    goodput_bps: float
    """`Transfer.goodput_bps`: from the first data callback on."""
    seconds: float
    timed_seconds: float
    """What `goodput_bps` is over (`Transfer.timed_seconds`)."""
    bytes: int
    streams: int
    tcp_buffer_bytes: int = 0
    """Per stream, as asked for (0: the kernel's autotuning)."""
    wall_seconds: float = 0.0
    """The whole client run: log-in, transfer and log-out."""
    vb_avg_bps: float | None = None
    server: ServerLog | None = None

    @property
    def retransmits(self) -> int | None:
        return sum(self.server.retransmits) if self.server else None


def tcp_buffer_bytes(test: GridftpTest) -> int:
    """The socket buffer per stream: as given, or the bandwidth-delay product shared by
    the streams (at least `MIN_TCP_BUFFER_BYTES`), or 0 when neither is known."""
    if test.tcp_buffer_bytes > 0:
        return test.tcp_buffer_bytes
    if test.rtt_ms <= 0 or test.rate_bps <= 0:
        return 0
    bdp_bytes = test.rate_bps / 8 * test.rtt_ms / 1000
    return max(MIN_TCP_BUFFER_BYTES, math.ceil(bdp_bytes / max(1, test.streams)))


def timeout_s(test: GridftpTest) -> float:
    """How long a run may take: as given, or the transfer at a quarter of the circuit's
    rate (1 Gb/s when unknown), twenty round trips of log-in and set-up, and a margin."""
    if test.timeout_s > 0:
        return test.timeout_s
    rate_bps = test.rate_bps if test.rate_bps > 0 else 1e9
    return 4 * test.bytes_total * 8 / rate_bps + 20 * test.rtt_ms / 1000 + 15


_STAMPED = re.compile(r"^(\d+\.\d+) (err|out) ?(.*)$")
_CALLBACK = re.compile(r"data callback, no error, buffer \S+ length (\d+)")
_VB = re.compile(r"^\s*(\d+) bytes\s+([\d.]+) MB/sec avg")


def parse(transcript: str) -> Transfer:
    """The transfer in a stamped transcript of `globus-url-copy -dbg -vb` (lines
    `SECONDS err|out TEXT`, as `run` records them). A failed run is `GridftpError` with
    globus-url-copy's own message, never a transfer of 0 bytes."""
    start_s: float | None = None
    end_s: float | None = None
    received = 0
    first_data: tuple[float, int] | None = None
    vb: tuple[int, float] | None = None
    error: list[str] = []
    for line in transcript.splitlines():
        stamped = _STAMPED.match(line)
        if stamped is None:
            continue
        at_s, stream, text = float(stamped[1]), stamped[2], stamped[3]
        if stream == "out":
            if progress := _VB.match(text):
                vb = (int(progress[1]), float(progress[2]) * MIB * 8)
            continue
        if error or text.startswith("error:"):
            error.append(text.strip())
        elif start_s is None and text.startswith("150 "):
            start_s = at_s
        elif text.startswith("debug: operation complete"):
            end_s = at_s
        elif callback := _CALLBACK.search(text):
            received += int(callback[1])
            first_data = first_data or (at_s, int(callback[1]))
    if error:
        raise GridftpError(f"globus-url-copy: {' '.join(e for e in error if e)}")
    if start_s is None or end_s is None:
        tail = transcript.strip()[-200:] or "(nothing)"
        raise NoTransferError(f"no finished transfer in globus-url-copy -dbg output: {tail}")
    first_s, first_bytes = first_data or (end_s, 0)
    return Transfer(
        seconds=end_s - start_s,
        bytes=received,
        data_seconds=end_s - first_s,
        first_data_bytes=first_bytes,
        vb_bytes=vb[0] if vb else None,
        vb_avg_bps=vb[1] if vb else None,
    )


_LOG_TIME = "%Y%m%d%H%M%S.%f"


def parse_server_log(text: str) -> ServerLog | None:
    """The last transfer in the server's netlogger transfer log (`-Z`), if any."""
    records = [line for line in text.splitlines() if "NL.EVNT=FTP_INFO" in line]
    if not records:
        return None
    fields = dict(item.split("=", 1) for item in records[-1].split() if "=" in item)
    retrans = fields.get("retrans", "")
    return ServerLog(
        seconds=(_log_time(fields["DATE"]) - _log_time(fields["START"])).total_seconds(),
        bytes=int(fields.get("NBYTES", 0)),
        streams=int(fields.get("STREAMS", 0)),
        retransmits=[int(r) for r in retrans.split(",") if r],
    )


def _log_time(stamp: str) -> datetime:
    """A log time, `YYYYmmddHHMMSS.ffffff` in the server's clock (only differences of
    two are used)."""
    return datetime.strptime(stamp, _LOG_TIME)


def missing() -> str | None:
    """None if both ends are installed; otherwise what to install."""
    absent = [p for p in (SERVER, CLIENT) if shutil.which(p) is None]
    if absent:
        return f"{' and '.join(absent)} missing: {INSTALL_HINT}"
    return None


def server_argv(test: GridftpTest, log_path: Path) -> list[str]:
    return [SERVER, "-c", "/dev/null", "-aa", "-anonymous-user", "nobody",
            "-no-fork", "-single", "-p", str(test.port), "-Z", str(log_path)]  # fmt: skip


def client_argv(test: GridftpTest) -> list[str]:
    host = f"[{test.address}]" if ":" in test.address else test.address
    buffer = tcp_buffer_bytes(test)
    return [CLIENT, "-dbg", "-vb", "-p", str(test.streams),
            *(["-tcp-bs", str(buffer)] if buffer > 0 else []),
            "-len", str(test.bytes_total),
            f"ftp://{host}:{test.port}/dev/zero", "file:///dev/null"]  # fmt: skip


def run(test: GridftpTest) -> GridftpResult:
    """One transfer: a one-connection server in the server's namespace, the client in
    the client's, both gone after. Bounded by `timeout_s`."""
    if problem := missing():
        raise GridftpError(problem)
    if test.bytes_total <= 0:
        raise GridftpError(f"bytes_total must be positive, not {test.bytes_total}")
    _require_free_port(test)
    with tempfile.TemporaryDirectory(prefix="longhaul-gridftp-") as scratch:
        log_path = Path(scratch) / "transfers.log"
        ready = serving.listens(test.server_ns, test.port, f"{SERVER}", GridftpError)
        with serving.serving(test.server_ns, server_argv(test, log_path), ready, merge_output=True):
            transcript, returncode, wall_s = _stamped_run(
                netns.command(test.client_ns, client_argv(test)), timeout_s(test)
            )
        server = parse_server_log(log_path.read_text()) if log_path.exists() else None
    transfer = parse(transcript)
    if returncode != 0:
        raise GridftpError(f"{CLIENT} exited with status {returncode}: {transcript[-300:]}")
    if transfer.bytes != test.bytes_total:
        raise GridftpError(
            f"{CLIENT} received {transfer.bytes} of {test.bytes_total} bytes: the server "
            "cut the transfer short (see its log, or run the two commands by hand)"
        )
    return GridftpResult(
        goodput_bps=transfer.goodput_bps,
        seconds=transfer.seconds,
        timed_seconds=transfer.timed_seconds,
        bytes=transfer.bytes,
        streams=test.streams,
        tcp_buffer_bytes=tcp_buffer_bytes(test),
        wall_seconds=wall_s,
        vb_avg_bps=transfer.vb_avg_bps,
        server=server,
    )


def _require_free_port(test: GridftpTest) -> None:
    """Stop if something listens on the port already: the server would fail to bind and
    exit, and the readiness check, seeing the port listen, would let the client talk to
    whatever holds it until the timeout."""
    probe = ["ss", "-Hltn", f"sport = :{test.port}"]
    holding = netns.run(test.server_ns, probe, timeout_s=10).stdout.strip()
    if holding:
        raise GridftpError(
            f"TCP port {test.port} is in use in {test.server_ns}: choose another port "
            f"(GridftpTest.port) or stop what holds it ({holding.split()[3]})"
        )


def _stamped_run(argv: list[str], limit_s: float) -> tuple[str, int, float]:
    """Run `argv`, stamping each line of its stdout and stderr with the seconds since
    the start as it arrives (`SECONDS out|err TEXT`); its exit status and wall time.
    Killed at `limit_s`."""
    lines: queue.Queue[tuple[float, str, str] | None] = queue.Queue()
    started = time.monotonic()
    # Text mode reads a lone carriage return as a line's end: -vb ends its progress lines so.
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
    )

    def pump(pipe: IO[str], name: str) -> None:
        for text in pipe:
            lines.put((time.monotonic() - started, name, text.rstrip("\n")))
        lines.put(None)

    assert process.stdout is not None and process.stderr is not None
    readers = [
        threading.Thread(target=pump, args=(process.stdout, "out"), daemon=True),
        threading.Thread(target=pump, args=(process.stderr, "err"), daemon=True),
    ]
    for reader in readers:
        reader.start()
    watchdog = threading.Timer(limit_s, process.kill)
    watchdog.start()
    stamped: list[str] = []
    try:
        open_pipes = len(readers)
        while open_pipes:
            item = lines.get()
            if item is None:
                open_pipes -= 1
                continue
            stamped.append(f"{item[0]:.6f} {item[1]} {item[2]}")
        returncode = process.wait()
    finally:
        watchdog.cancel()
        serving.stop(process)
    wall_s = time.monotonic() - started
    if returncode < 0 and wall_s >= limit_s:
        raise GridftpError(f"{CLIENT} ran over its {limit_s:.0f} s and was stopped")
    return "\n".join(stamped) + "\n", returncode, wall_s
