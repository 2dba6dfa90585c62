"""Link encryptors on a real emulated circuit: files cross a lossy line whose frames are
tampered with byte-exact, every tampered frame refused and counted; settings the
encryptor cannot take are refused with the reason; the hosts' MTU is set and read."""

from __future__ import annotations

import pytest

from longhaul.bench import wan
from longhaul.measure import payloads
from longhaul.measure.tools import accelerator
from longhaul.testbed import encryptor as enc


def _both(counters: dict, key: str) -> int:
    return int(counters["a_to_b"][key] + counters["b_to_a"][key])


def test_files_cross_a_lossy_tampered_encrypted_circuit_byte_exact(testbed, tmp_path):
    source = payloads.write("random", tmp_path / "random", 16 << 20)
    case = wan.Case(1.0, 26.7, "encryptor", loss=1e-4)
    with wan.circuit_for(testbed, case) as circuit:
        enc.set_host_mtu(circuit, enc.ALIGNED_MTU_BYTES)
        assert enc.host_mtu(circuit) == enc.ALIGNED_MTU_BYTES
        enc.encrypt(circuit, enc.Encryptor(tamper=0.02, rekey_interval_s=0.02), enc.new_secret())
        moved = accelerator.transfer(circuit.src_ns, circuit.dst_ns, circuit.dst_addr, source,
                                     2, 8 << 20, window_bytes=8 << 20, timeout_s=60)  # fmt: skip
        assert moved.intact and moved.bytes == 16 << 20
        counters = enc.counters(circuit)
        assert counters is not None
        assert _both(counters, "sealed_bytes") > 16 << 20
        tampered = _both(counters, "tampered")
        refused = sum(_both(counters, f"refused_{why}")
                      for why in ("forged", "replayed", "truncated"))  # fmt: skip
        assert tampered > 0 and refused == tampered, counters
        assert counters["a_to_b"]["rekeys"] >= 1
        assert _both(counters, "fragmented_segments") == 0
        enc.decrypt(circuit)
        assert enc.counters(circuit) is None


def test_what_the_encryptor_cannot_take_is_refused_with_the_reason(testbed):
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    with pytest.raises(enc.EncryptorError, match="at least 32"):
        enc.encrypt(circuit, enc.Encryptor(), b"short")
    with pytest.raises(enc.EncryptorError, match="below 1280"):
        enc.encrypt(circuit, enc.Encryptor(mtu_bytes=576), enc.new_secret())
    with pytest.raises(enc.EncryptorError, match="oversize"):
        enc.encrypt(circuit, enc.Encryptor(oversize="squeeze"), enc.new_secret())
    assert enc.counters(circuit) is None


def test_a_secret_file_must_hold_32_bytes(tmp_path):
    short = tmp_path / "short"
    short.write_bytes(b"x" * 31)
    with pytest.raises(enc.EncryptorError, match="at least 32"):
        enc.read_secret(short)
    good = tmp_path / "good"
    good.write_bytes(bytes(range(40)))
    assert enc.read_secret(good) == bytes(range(40))


def test_the_emulator_refuses_a_bad_encrypt_file_before_making_devices(tmp_path):
    import subprocess  # noqa: PLC0415

    from longhaul.testbed import emulator  # noqa: PLC0415

    cases = {
        '{"secret": "00ff"}': "needs at least 32",
        '{"secret": "' + "ab" * 32 + '", "mtu": 9000}': "unknown field `mtu`",
        '{"secret": "' + "ab" * 32 + '", "oversize": "squeeze"}': "oversize",
        '{"secret": "zz"}': "not hex",
    }
    for text, reason in cases.items():
        config = tmp_path / "encrypt.json"
        config.write_text(text)
        done = subprocess.run([str(emulator.binary()), "run", "--a-dev", "lht-x", "--b-dev",
                               "lht-y", "--encrypt", str(config)], capture_output=True,
                              text=True, timeout=30, check=False)  # fmt: skip
        assert done.returncode == 2 and reason in done.stderr, (text, done.stderr)
