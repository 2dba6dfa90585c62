//! The host buses of the interconnects compared: what a DMA read or write of some bytes
//! occupies on them. PCI Express is full duplex (a device's writes and read requests go
//! up, read completions come down); PCI-X is one shared, half-duplex bus.

use serde::Serialize;

/// One direction of a PCIe 1.x link, bytes per second per lane: 2.5 GT/s with 8b/10b
/// (PCIe base spec 1.1 §4.2): 250 MB/s.
const PCIE1_LANE_BYTES_PER_S: u64 = 250_000_000;

/// What a transaction-layer packet costs on the link beyond its data: a 3-DW header 12,
/// sequence number 2, LCRC 4, STP/END framing 2 (PCIe 1.1 §2.2, §3.5, §4.2.1; ECRC off,
/// 32-bit addresses as below 4 GB of memory).
const TLP_OVERHEAD_BYTES: u64 = 20;

/// The largest write payload per TLP: 128 bytes, the MaxPayloadSize of the Intel E7520
/// root ports the hosts had (E7520 MCH datasheet: "`Max_Payload_Size` of 128 bytes").
const PCIE_MAX_PAYLOAD_BYTES: u64 = 128;

/// A root complex answers a read in completions of its read completion boundary:
/// 64 bytes, a cache line, for Intel root complexes (PCIe 1.1 §2.3.1.1 allows 64 or 128).
const PCIE_READ_COMPLETION_BYTES: u64 = 64;

/// A device asks for at most this much per read request: MaxReadRequestSize's default,
/// 512 bytes (PCIe 1.1 §7.8.4).
const PCIE_MAX_READ_REQUEST_BYTES: u64 = 512;

/// PCI-X: 64 bits a clock.
const PCIX_BYTES_PER_CLOCK: u64 = 8;

/// Clocks a PCI-X burst costs besides its data phases: address phase 1, attribute phase 1,
/// target response 2 (decode speed B), the turn-around clock before the next master 1
/// (PCI-X Addendum 1.0 §2.2, §2.7).
const PCIX_TRANSACTION_CLOCKS: u64 = 5;

/// PCI-X reads are split transactions: a request (the phases above and one data phase
/// ended by a split response) and a split completion carrying the data, in sequences of
/// at most MMRBC bytes: 512, the PCI-X command register's default (Addendum 1.0 §7.2.3).
const PCIX_MAX_READ_BYTES: u64 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Bus {
    /// PCI Express 1.x with this many lanes.
    Pcie { lanes: u64 },
    /// PCI-X, 64 bits at this clock.
    PciX { clock_hz: u64 },
}

/// Which way a bus is used: `Up` is from the device to memory (its writes, its read
/// requests), `Down` from memory to the device (read completions). On PCI-X both are
/// the one bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    Up,
    Down,
}

impl Bus {
    /// PCI-X 133: 64 bits at 133.33 MHz.
    pub const PCI_X_133: Bus = Bus::PciX {
        clock_hz: 133_333_333,
    };

    pub fn full_duplex(self) -> bool {
        matches!(self, Bus::Pcie { .. })
    }

    /// Raw data rate of one direction (PCIe) or of the bus (PCI-X), bytes/s.
    pub fn raw_bytes_per_s(self) -> u64 {
        match self {
            Bus::Pcie { lanes } => lanes * PCIE1_LANE_BYTES_PER_S,
            Bus::PciX { clock_hz } => clock_hz * PCIX_BYTES_PER_CLOCK,
        }
    }

    /// Time each way of the bus is busy while the device reads `bytes` from memory:
    /// (up, down). PCIe: the requests go up, 64-byte completions come down. PCI-X: split
    /// requests and completions share the bus (all of it reported as `Up`).
    pub fn read_ns(self, bytes: u64) -> (u64, u64) {
        match self {
            Bus::Pcie { .. } => {
                let requests = bytes.div_ceil(PCIE_MAX_READ_REQUEST_BYTES);
                let completions = bytes.div_ceil(PCIE_READ_COMPLETION_BYTES);
                (
                    self.link_ns(requests * TLP_OVERHEAD_BYTES),
                    self.link_ns(bytes + completions * TLP_OVERHEAD_BYTES),
                )
            }
            Bus::PciX { .. } => {
                let sequences = bytes.div_ceil(PCIX_MAX_READ_BYTES);
                let request_clocks = sequences * (PCIX_TRANSACTION_CLOCKS + 1);
                let completion_clocks =
                    sequences * PCIX_TRANSACTION_CLOCKS + bytes.div_ceil(PCIX_BYTES_PER_CLOCK);
                (self.clocks_ns(request_clocks + completion_clocks), 0)
            }
        }
    }

    /// Time the bus's up way is busy while the device writes `bytes` to memory in one
    /// burst (PCI-X) or in MaxPayloadSize TLPs (PCIe).
    pub fn write_ns(self, bytes: u64) -> u64 {
        match self {
            Bus::Pcie { .. } => {
                let tlps = bytes.div_ceil(PCIE_MAX_PAYLOAD_BYTES).max(1);
                self.link_ns(bytes + tlps * TLP_OVERHEAD_BYTES)
            }
            Bus::PciX { .. } => {
                self.clocks_ns(PCIX_TRANSACTION_CLOCKS + bytes.div_ceil(PCIX_BYTES_PER_CLOCK))
            }
        }
    }

    /// The largest rate at which the device can stream data out of memory (reads), and
    /// into it (writes), each alone, bytes/s: what the bus model allows in the limit.
    pub fn streaming_bytes_per_s(self, way: Way, chunk_bytes: u64) -> f64 {
        let ns = match way {
            Way::Down => {
                let (up, down) = self.read_ns(chunk_bytes);
                if self.full_duplex() { down } else { up }
            }
            Way::Up => self.write_ns(chunk_bytes),
        };
        chunk_bytes as f64 * 1e9 / ns as f64
    }

    fn link_ns(self, bytes: u64) -> u64 {
        (bytes * 1_000_000_000).div_ceil(self.raw_bytes_per_s())
    }

    fn clocks_ns(self, clocks: u64) -> u64 {
        match self {
            Bus::PciX { clock_hz } => (clocks * 1_000_000_000).div_ceil(clock_hz),
            Bus::Pcie { .. } => unreachable!("PCIe is timed in bytes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcie_x4_reads_stream_at_64_of_84_bytes() {
        let x4 = Bus::Pcie { lanes: 4 };
        let rate = x4.streaming_bytes_per_s(Way::Down, 1 << 20);
        assert!((rate / 1e6 - 1000.0 * 64.0 / 84.0).abs() < 1.0, "{rate}");
    }

    #[test]
    fn pci_x_reads_cost_ten_clocks_per_512_bytes() {
        let rate = Bus::PCI_X_133.streaming_bytes_per_s(Way::Down, 512 * 1000);
        let expected = 1066.7e6 * 64.0 / 75.0;
        assert!(
            (rate - expected).abs() / expected < 0.005,
            "{rate} vs {expected}"
        );
    }

    #[test]
    fn writes_pay_one_header_per_max_payload() {
        let x8 = Bus::Pcie { lanes: 8 };
        assert_eq!(x8.write_ns(128), x8.link_ns(148));
        assert_eq!(x8.write_ns(129), x8.link_ns(129 + 40));
    }
}
