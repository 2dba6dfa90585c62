"""A server in a namespace for the length of a test: started, waited on until it is
ready, stopped after (SIGTERM, then SIGKILL), also when the test fails. Every tool that
needs a far end (iperf3's server, the echo server, the UDP sink) starts it here."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from longhaul.testbed import netns

Ready = Callable[["subprocess.Popen[str]"], None]
"""Returns once the server is ready; raises (the tool's error) if it never will be."""
STOP_TIMEOUT_S = 5.0


@contextmanager
def serving(
    namespace: str, argv: Sequence[str], ready: Ready, *, merge_output: bool = False
) -> Iterator[subprocess.Popen[str]]:
    """`argv` running in `namespace`, ready, for the block; stopped after. Its stdout and
    stderr are pipes (one, with `merge_output`) the block may read."""
    process = subprocess.Popen(
        netns.command(namespace, list(argv)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
        text=True,
    )
    try:
        ready(process)
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[str]) -> None:
    """End `process` (ours) if it still runs: SIGTERM, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)


def says(marker: str, what: str, error: type[Exception]) -> Ready:
    """Ready when the server's first line on stderr holds `marker` (longhaul-wan's own
    servers print `{"listening": ...}` once bound)."""

    def wait(process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        line = process.stderr.readline()
        if marker not in line:
            rest = process.stderr.read() if process.poll() is not None else ""
            raise error(f"{what} did not start: {(line + rest).strip() or 'it said nothing'}")

    return wait


def listens(
    namespace: str, port: int, what: str, error: type[Exception], timeout_s: float = 5.0
) -> Ready:
    """Ready when a TCP socket listens on `port` in `namespace` (for servers that print
    nothing to wait on, as iperf3)."""
    probe = ["sh", "-c", f"ss -Hltn 'sport = :{port}' | grep -q LISTEN"]

    def wait(process: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                said = process.stdout.read() if process.stdout else ""
                raise error(f"{what} exited at once: {said.strip()[-300:] or 'it said nothing'}")
            found = subprocess.run(
                netns.command(namespace, probe), capture_output=True, check=False, timeout=5
            )
            if found.returncode == 0:
                return
            time.sleep(0.05)
        raise error(f"{what} in {namespace} did not start listening within {timeout_s:g} s")

    return wait
