//! What crosses a TUN device opened with `IFF_VNET_HDR`: a `virtio_net_hdr`, then one IP
//! packet, which with the segmentation offloads may be a GSO super-packet of up to 64 KB
//! that stands for many wire segments.
//!
//! The emulator forwards packets unchanged. It only needs to know how many segments a
//! packet stands for and how many bytes they take on the wire (`Shape`), and, when a loss
//! or a full queue falls inside a super-packet, to cut it into its segments (`split`), as
//! the kernel's software GSO would, so that only the segments concerned are dropped.

/// `sizeof(struct virtio_net_hdr)`, the default `TUNSETVNETHDRSZ`.
pub const VNET_HDR_LEN: usize = 10;

const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_UDP: u8 = 3;
const GSO_TCPV6: u8 = 4;
const GSO_UDP_L4: u8 = 5;
const GSO_ECN: u8 = 0x80;

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// `struct virtio_net_hdr`, little-endian fields as the TUN device uses them natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let b = bytes.get(..VNET_HDR_LEN)?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(Self {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    pub fn write(&self, out: &mut [u8]) {
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE && self.gso_size > 0
    }
}

/// Whether `frame` (virtio header + IP packet) carries TCP, one packet or a super-packet:
/// IPv4's protocol or IPv6's next header, extension headers not followed.
pub fn carries_tcp(frame: &[u8]) -> bool {
    let ip = frame.get(VNET_HDR_LEN..).unwrap_or_default();
    let protocol = match ip.first().map(|b| b >> 4) {
        Some(4) => ip.get(9),
        Some(6) => ip.get(6),
        _ => None,
    };
    protocol == Some(&PROTO_TCP)
}

/// How a packet appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Wire segments the packet stands for (1 unless it is a GSO super-packet).
    pub segments: u32,
    /// Bytes of all segments on the wire at the IP layer: every segment carries its own
    /// IP and transport headers.
    pub ip_bytes: u64,
    /// IP + transport header bytes of each segment (0 when not a TCP or UDP super-packet).
    pub header_len: usize,
    /// IP bytes of the last segment (all others are alike).
    pub last_segment_ip_bytes: u64,
}

/// The shape of `frame` (virtio header + IP packet). Anything the emulator cannot read
/// as a super-packet counts as one segment of its own length.
pub fn shape(frame: &[u8]) -> Shape {
    let ip_bytes = frame.len().saturating_sub(VNET_HDR_LEN) as u64;
    let single = Shape {
        segments: 1,
        ip_bytes,
        header_len: 0,
        last_segment_ip_bytes: ip_bytes,
    };
    let Some(hdr) = VnetHdr::parse(frame) else {
        return single;
    };
    if !hdr.is_gso() {
        return single;
    }
    let ip = &frame[VNET_HDR_LEN..];
    let Some(header_len) = headers_len(ip, &hdr) else {
        return single;
    };
    let payload = ip.len().saturating_sub(header_len);
    if payload == 0 {
        return single;
    }
    let mss = usize::from(hdr.gso_size);
    let segments = payload.div_ceil(mss);
    Shape {
        segments: segments as u32,
        ip_bytes: (ip.len() + (segments - 1) * header_len) as u64,
        header_len,
        last_segment_ip_bytes: (header_len + payload - (segments - 1) * mss) as u64,
    }
}

/// IP plus transport header length of a super-packet, read from the packet itself (the
/// header's `hdr_len` is only a hint: the kernel may count more than the headers).
fn headers_len(ip: &[u8], hdr: &VnetHdr) -> Option<usize> {
    let l4 = usize::from(hdr.csum_start);
    match hdr.gso_type & !GSO_ECN {
        GSO_TCPV4 | GSO_TCPV6 => {
            let data_offset = usize::from(*ip.get(l4 + 12)? >> 4) * 4;
            (data_offset >= 20 && l4 + data_offset <= ip.len()).then_some(l4 + data_offset)
        }
        GSO_UDP_L4 | GSO_UDP => (l4 + 8 <= ip.len()).then_some(l4 + 8),
        _ => None,
    }
}

/// Cut a TCP or UDP super-packet into its wire segments, each a frame of its own (virtio
/// header without GSO, IP header with its length, ID and checksum, transport header with
/// its sequence number or length, and a full checksum), as the kernel's GSO would.
/// None when `frame` is not a super-packet this can cut; then it is treated whole.
pub fn split(frame: &[u8]) -> Option<Vec<Vec<u8>>> {
    let count = Cuttable::of(frame)?.count;
    split_runs(frame, &(0..count).map(|k| (k, 1)).collect::<Vec<_>>())
}

/// Cut a super-packet into `runs` (first segment, number of segments), a frame each: a
/// run of one is a plain segment as `split` makes it; a longer run stays a super-packet
/// of its own (IP length, ID and checksum, TCP sequence number and flags as the first of
/// its segments would have them, or the UDP length of the whole run; its checksum left
/// to the receiver as the original's was), which the receiving kernel takes as GRO would
/// have merged those segments (UDP: a socket with `UDP_GRO` takes it whole, any other
/// gets it cut in segments, `udp_rcv_segment`). None when `frame` is not a super-packet
/// this can cut, or a run is empty or reaches past its segments.
pub fn split_runs(frame: &[u8], runs: &[(usize, usize)]) -> Option<Vec<Vec<u8>>> {
    let cut = Cuttable::of(frame)?;
    let fits = |&(first, n): &(usize, usize)| n > 0 && first + n <= cut.count;
    if !runs.iter().all(fits) {
        return None;
    }
    let piece = |&(first, n): &(usize, usize)| {
        if n == 1 {
            cut.segment(frame, first)
        } else {
            cut.run(frame, first, n)
        }
    };
    Some(runs.iter().map(piece).collect())
}

/// A super-packet's layout, as cutting it needs.
struct Cuttable {
    hdr: VnetHdr,
    header_len: usize,
    l4: usize,
    tcp: bool,
    v4: bool,
    mss: usize,
    count: usize,
    first_seq: Option<u32>,
}

impl Cuttable {
    fn of(frame: &[u8]) -> Option<Self> {
        let hdr = VnetHdr::parse(frame)?;
        if !hdr.is_gso() {
            return None;
        }
        let ip = &frame[VNET_HDR_LEN..];
        let header_len = headers_len(ip, &hdr)?;
        let l4 = usize::from(hdr.csum_start);
        let version = ip.first()? >> 4;
        let (tcp, v4) = match hdr.gso_type & !GSO_ECN {
            GSO_TCPV4 => (true, true),
            GSO_TCPV6 => (true, false),
            GSO_UDP_L4 | GSO_UDP => (false, version == 4),
            _ => return None,
        };
        if (v4 && (version != 4 || l4 < 20)) || (!v4 && (version != 6 || l4 < 40)) {
            return None;
        }
        let mss = usize::from(hdr.gso_size);
        let count = (ip.len() - header_len).div_ceil(mss);
        let first_seq = tcp.then(|| u32::from_be_bytes(ip[l4 + 4..l4 + 8].try_into().unwrap()));
        Some(Self {
            hdr,
            header_len,
            l4,
            tcp,
            v4,
            mss,
            count,
            first_seq,
        })
    }

    /// The payload of segments `first..first + n`.
    fn payload<'a>(&self, frame: &'a [u8], first: usize, n: usize) -> &'a [u8] {
        let payload = &frame[VNET_HDR_LEN + self.header_len..];
        let end = ((first + n) * self.mss).min(payload.len());
        &payload[first * self.mss..end]
    }

    /// A packet of the original's headers around `first..first + n`'s payload, with the
    /// IP length and ID and the TCP sequence number and flags of its place: the body
    /// (from the IP header on) of a frame whose virtio header is left zero.
    fn packet(&self, frame: &[u8], first: usize, n: usize) -> Vec<u8> {
        let ip = &frame[VNET_HDR_LEN..];
        let chunk = self.payload(frame, first, n);
        let (header_len, l4) = (self.header_len, self.l4);
        let total = header_len + chunk.len();
        let mut out = vec![0u8; VNET_HDR_LEN + total];
        let body = &mut out[VNET_HDR_LEN..];
        body[..header_len].copy_from_slice(&ip[..header_len]);
        body[header_len..].copy_from_slice(chunk);
        if self.v4 {
            let id = u16::from_be_bytes([body[4], body[5]]).wrapping_add(first as u16);
            body[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            body[4..6].copy_from_slice(&id.to_be_bytes());
            body[10..12].fill(0);
            let sum = !fold(sum_words(&body[..l4], 0));
            body[10..12].copy_from_slice(&sum.to_be_bytes());
        } else {
            body[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        }
        if let Some(seq) = self.first_seq {
            let seq = seq.wrapping_add((first * self.mss) as u32);
            body[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if first > 0 {
                body[l4 + 13] &= !TCP_CWR; // CWR only on the first segment
            }
            if first + n < self.count {
                body[l4 + 13] &= !(TCP_FIN | TCP_PSH); // FIN and PSH only on the last
            }
        } else {
            body[l4 + 4..l4 + 6].copy_from_slice(&((total - l4) as u16).to_be_bytes());
        }
        out
    }

    fn proto(&self) -> u8 {
        if self.tcp { PROTO_TCP } else { PROTO_UDP }
    }

    fn checksum_at(&self) -> usize {
        self.l4 + if self.tcp { 16 } else { 6 }
    }

    /// Segment `index` as a plain packet with a full checksum.
    fn segment(&self, frame: &[u8], index: usize) -> Vec<u8> {
        let mut seg = self.packet(frame, index, 1);
        // The segment's checksum is complete, so the receiver has nothing to do.
        VnetHdr::default().write(&mut seg);
        let body = &mut seg[VNET_HDR_LEN..];
        let at = self.checksum_at();
        body[at..at + 2].fill(0);
        let l4_len = body.len() - self.l4;
        let mut sum = !fold(sum_words(
            &body[self.l4..],
            pseudo_header(body, self.v4, self.proto(), l4_len),
        ));
        if !self.tcp && sum == 0 {
            sum = 0xffff; // UDP sends a computed zero as all ones
        }
        body[at..at + 2].copy_from_slice(&sum.to_be_bytes());
        seg
    }

    /// Segments `first..first + n` as one super-packet, its checksum left partial (the
    /// pseudo-header's sum over the run's transport length, as the kernel leaves it for
    /// offload: its UDP segmentation takes the old length out of that sum and each
    /// segment's in, `__udp_gso_segment` in `net/ipv4/udp_offload.c`).
    fn run(&self, frame: &[u8], first: usize, n: usize) -> Vec<u8> {
        let mut run = self.packet(frame, first, n);
        let mut hdr = self.hdr;
        if first > 0 {
            hdr.gso_type &= !GSO_ECN; // its CWR went with the first segment
        }
        hdr.write(&mut run);
        let body = &mut run[VNET_HDR_LEN..];
        let at = self.checksum_at();
        let l4_len = body.len() - self.l4;
        let partial = fold(pseudo_header(body, self.v4, self.proto(), l4_len));
        body[at..at + 2].copy_from_slice(&partial.to_be_bytes());
        run
    }
}

/// Whether the frame's transport checksum must still be completed by the receiver.
pub fn needs_checksum(frame: &[u8]) -> bool {
    VnetHdr::parse(frame).is_some_and(|h| h.flags & F_NEEDS_CSUM != 0)
}

fn pseudo_header(ip: &[u8], v4: bool, proto: u8, l4_len: usize) -> u64 {
    let addresses = if v4 { &ip[12..20] } else { &ip[8..40] };
    sum_words(addresses, u64::from(proto) + l4_len as u64)
}

/// The one's-complement sum of `bytes` as big-endian 16-bit words, plus `initial`.
pub fn sum_words(bytes: &[u8], initial: u64) -> u64 {
    let mut sum = initial;
    let mut words = bytes.chunks_exact(2);
    for word in &mut words {
        sum += u64::from(u16::from_be_bytes([word[0], word[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A TCP/IPv4 super-packet as the kernel hands it over: `segments` segments of `mss`
    /// bytes (the last `last` bytes), with a partial checksum to be completed.
    pub(crate) fn tcp4_super(mss: u16, segments: usize, last: usize, flags: u8) -> Vec<u8> {
        let payload_len = mss as usize * (segments - 1) + last;
        let header_len = 20 + 32; // TCP with timestamps
        let total = header_len + payload_len;
        let mut frame = vec![0u8; VNET_HDR_LEN + total];
        let gso_type = if segments > 1 { GSO_TCPV4 } else { GSO_NONE };
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: header_len as u16,
            gso_size: if segments > 1 { mss } else { 0 },
            csum_start: 20,
            csum_offset: 16,
        }
        .write(&mut frame);
        let ip = &mut frame[VNET_HDR_LEN..];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = PROTO_TCP;
        ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
        ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
        ip[20..22].copy_from_slice(&5201u16.to_be_bytes());
        ip[22..24].copy_from_slice(&40000u16.to_be_bytes());
        ip[24..28].copy_from_slice(&0xffff_fff0u32.to_be_bytes()); // wraps inside
        ip[32] = 8 << 4;
        ip[33] = flags | 0x10;
        for (i, byte) in ip[header_len..].iter_mut().enumerate() {
            *byte = (i * 7 % 251) as u8;
        }
        frame
    }

    fn udp6_super(mss: u16, segments: usize, last: usize) -> Vec<u8> {
        let payload_len = mss as usize * (segments - 1) + last;
        let total = 40 + 8 + payload_len;
        let mut frame = vec![0u8; VNET_HDR_LEN + total];
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_UDP_L4,
            hdr_len: 48,
            gso_size: mss,
            csum_start: 40,
            csum_offset: 6,
        }
        .write(&mut frame);
        let ip = &mut frame[VNET_HDR_LEN..];
        ip[0] = 0x60;
        ip[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        ip[6] = PROTO_UDP;
        ip[7] = 64;
        ip[8] = 0x20;
        ip[24] = 0x20;
        ip[23] = 1;
        ip[39] = 2;
        ip[44..46].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        for (i, byte) in ip[48..].iter_mut().enumerate() {
            *byte = (i % 253) as u8;
        }
        frame
    }

    fn transport_checksum_ok(seg: &[u8]) -> bool {
        let ip = &seg[VNET_HDR_LEN..];
        let v4 = ip[0] >> 4 == 4;
        let (l4, proto) = if v4 {
            (usize::from(ip[0] & 0xf) * 4, ip[9])
        } else {
            (40, ip[6])
        };
        fold(sum_words(
            &ip[l4..],
            pseudo_header(ip, v4, proto, ip.len() - l4),
        )) == 0xffff
    }

    #[test]
    fn a_plain_packet_is_one_segment_of_its_length() {
        let frame = tcp4_super(1448, 1, 100, 0);
        assert_eq!(
            shape(&frame),
            Shape {
                segments: 1,
                ip_bytes: 152,
                header_len: 0,
                last_segment_ip_bytes: 152,
            }
        );
    }

    #[test]
    fn a_super_packet_counts_the_headers_of_every_segment() {
        let frame = tcp4_super(1448, 45, 1000, 0);
        let s = shape(&frame);
        assert_eq!(s.segments, 45);
        assert_eq!(s.header_len, 52);
        assert_eq!(s.ip_bytes, (44 * (1448 + 52) + 1000 + 52) as u64);
        assert_eq!(s.last_segment_ip_bytes, 1052);
    }

    #[test]
    fn tcp_segments_are_whole_packets_with_valid_checksums() {
        let frame = tcp4_super(1448, 5, 700, TCP_PSH | TCP_FIN | TCP_CWR);
        let segments = split(&frame).unwrap();
        assert_eq!(segments.len(), 5);
        let ip = &frame[VNET_HDR_LEN..];
        let mut data = Vec::new();
        for (i, seg) in segments.iter().enumerate() {
            let body = &seg[VNET_HDR_LEN..];
            assert_eq!(VnetHdr::parse(seg).unwrap(), VnetHdr::default());
            assert_eq!(
                usize::from(u16::from_be_bytes([body[2], body[3]])),
                body.len()
            );
            assert_eq!(u16::from_be_bytes([body[4], body[5]]), 0x1234 + i as u16);
            assert_eq!(
                fold(sum_words(&body[..20], 0)),
                0xffff,
                "IPv4 header checksum"
            );
            assert!(transport_checksum_ok(seg), "TCP checksum of segment {i}");
            let seq = u32::from_be_bytes(body[24..28].try_into().unwrap());
            assert_eq!(seq, 0xffff_fff0u32.wrapping_add(1448 * i as u32));
            let flags = body[33];
            assert_eq!(flags & TCP_CWR != 0, i == 0);
            assert_eq!(flags & (TCP_PSH | TCP_FIN) != 0, i == 4);
            assert_eq!(&body[20..24], &ip[20..24], "ports");
            data.extend_from_slice(&body[52..]);
        }
        assert_eq!(data, &ip[52..], "the payload, in order, unchanged");
        let wire: u64 = segments
            .iter()
            .map(|s| (s.len() - VNET_HDR_LEN) as u64)
            .sum();
        assert_eq!(wire, shape(&frame).ip_bytes);
    }

    #[test]
    fn udp_segments_have_their_own_length_and_checksum() {
        let frame = udp6_super(1200, 4, 33);
        let segments = split(&frame).unwrap();
        assert_eq!(segments.len(), 4);
        for (i, seg) in segments.iter().enumerate() {
            let body = &seg[VNET_HDR_LEN..];
            let size = if i == 3 { 33 } else { 1200 };
            assert_eq!(body.len(), 48 + size);
            assert_eq!(
                usize::from(u16::from_be_bytes([body[4], body[5]])),
                8 + size
            );
            assert_eq!(
                usize::from(u16::from_be_bytes([body[44], body[45]])),
                8 + size
            );
            assert!(transport_checksum_ok(seg));
        }
    }

    #[test]
    fn a_run_of_segments_is_a_super_packet_where_its_first_segment_was() {
        let frame = tcp4_super(1448, 10, 700, TCP_PSH | TCP_FIN | TCP_CWR);
        let pieces = split_runs(&frame, &[(0, 3), (4, 1), (6, 4)]).unwrap();
        assert_eq!(pieces.len(), 3);
        let segments = split(&frame).unwrap();
        // A single segment is the one `split` makes.
        assert_eq!(pieces[1], segments[4]);
        for (piece, first, n) in [(&pieces[0], 0, 3), (&pieces[2], 6, 4)] {
            let hdr = VnetHdr::parse(piece).unwrap();
            assert_eq!(hdr.gso_size, 1448);
            assert_eq!(hdr.flags, F_NEEDS_CSUM);
            let s = shape(piece);
            assert_eq!(s.segments, n as u32);
            let expected: u64 = segments[first..first + n]
                .iter()
                .map(|seg| (seg.len() - VNET_HDR_LEN) as u64)
                .sum();
            assert_eq!(s.ip_bytes, expected, "the wire bytes of its segments");
            let body = &piece[VNET_HDR_LEN..];
            let first_seg = &segments[first][VNET_HDR_LEN..];
            assert_eq!(body[4..6], first_seg[4..6], "IP ID of its first segment");
            assert_eq!(
                body[24..28],
                first_seg[24..28],
                "sequence number of its first segment"
            );
            assert_eq!(
                fold(sum_words(&body[..20], 0)),
                0xffff,
                "IPv4 header checksum"
            );
            assert_eq!(
                usize::from(u16::from_be_bytes([body[2], body[3]])),
                body.len()
            );
            let payload: Vec<u8> = segments[first..first + n]
                .iter()
                .flat_map(|seg| seg[VNET_HDR_LEN + 52..].to_vec())
                .collect();
            assert_eq!(&body[52..], &payload[..]);
            // Left partial, as the kernel leaves it for offload: the pseudo-header's sum.
            let partial = u16::from_be_bytes([body[36], body[37]]);
            let l4_len = body.len() - 20;
            assert_eq!(partial, fold(pseudo_header(body, true, PROTO_TCP, l4_len)));
        }
        let flags = |piece: &Vec<u8>| piece[VNET_HDR_LEN + 33];
        assert_eq!(flags(&pieces[0]) & (TCP_CWR | TCP_PSH | TCP_FIN), TCP_CWR);
        assert_eq!(
            flags(&pieces[2]) & (TCP_CWR | TCP_PSH | TCP_FIN),
            TCP_PSH | TCP_FIN
        );
        assert_eq!(VnetHdr::parse(&pieces[2]).unwrap().gso_type & GSO_ECN, 0);
    }

    #[test]
    fn runs_that_do_not_fit_the_super_packet_are_refused() {
        let frame = tcp4_super(1448, 5, 700, 0);
        assert!(
            split_runs(&frame, &[(3, 3)]).is_none(),
            "past the last segment"
        );
        assert!(split_runs(&frame, &[(1, 0)]).is_none(), "empty");
        assert!(
            split_runs(&udp6_super(1200, 4, 33), &[(2, 3)]).is_none(),
            "past the last UDP segment"
        );
    }

    /// Segment `k` of a UDP super-packet's transport bytes as the kernel's UDP
    /// segmentation makes it (`__udp_gso_segment`, `net/ipv4/udp_offload.c`): the length
    /// set, the partial checksum moved from the old length to the new, then completed
    /// over the segment as checksum offload does.
    fn udp_segment_as_the_kernel_cuts_it(super_packet: &[u8], k: usize) -> Vec<u8> {
        let hdr = VnetHdr::parse(super_packet).unwrap();
        let (l4, mss) = (usize::from(hdr.csum_start), usize::from(hdr.gso_size));
        let udp = &super_packet[VNET_HDR_LEN + l4..];
        let payload = &udp[8..];
        let chunk = &payload[k * mss..((k + 1) * mss).min(payload.len())];
        let old_len = u16::from_be_bytes([udp[4], udp[5]]);
        let new_len = (8 + chunk.len()) as u16;
        let partial = u16::from_be_bytes([udp[6], udp[7]]);
        let moved = fold(u64::from(partial) + u64::from(!old_len) + u64::from(new_len));
        let mut segment = [
            &udp[..4],
            &new_len.to_be_bytes(),
            &moved.to_be_bytes(),
            chunk,
        ]
        .concat();
        let sum = !fold(sum_words(&segment, 0));
        segment[6..8].copy_from_slice(&sum.to_be_bytes());
        segment
    }

    #[test]
    fn a_run_of_udp_segments_is_a_super_packet_the_kernel_cuts_as_it_cut_the_first() {
        let frame = udp6_super(1200, 7, 33);
        let pieces = split_runs(&frame, &[(0, 2), (3, 1), (4, 3)]).unwrap();
        let segments = split(&frame).unwrap();
        assert_eq!(pieces[1], segments[3], "a run of one is a plain segment");
        for (piece, first, n) in [(&pieces[0], 0, 2), (&pieces[2], 4, 3)] {
            let hdr = VnetHdr::parse(piece).unwrap();
            assert_eq!((hdr.gso_type, hdr.gso_size), (GSO_UDP_L4, 1200));
            assert_eq!(shape(piece).segments, n as u32);
            let body = &piece[VNET_HDR_LEN..];
            let l4_len = body.len() - 40;
            assert_eq!(usize::from(u16::from_be_bytes([body[4], body[5]])), l4_len);
            assert_eq!(
                usize::from(u16::from_be_bytes([body[44], body[45]])),
                l4_len
            );
            for k in 0..n {
                assert_eq!(
                    udp_segment_as_the_kernel_cuts_it(piece, k),
                    &segments[first + k][VNET_HDR_LEN + 40..],
                    "segment {} of the original",
                    first + k
                );
            }
        }
    }

    #[test]
    fn tcp_is_told_from_the_ip_header_whether_one_packet_or_many() {
        assert!(carries_tcp(&tcp4_super(1448, 1, 10, 0)));
        assert!(carries_tcp(&tcp4_super(1448, 44, 10, 0)));
        assert!(!carries_tcp(&udp6_super(1200, 4, 33)));
        let mut tcp6 = udp6_super(1200, 1, 33);
        tcp6[VNET_HDR_LEN + 6] = PROTO_TCP;
        assert!(carries_tcp(&tcp6));
        let mut udp4 = tcp4_super(1448, 1, 10, 0);
        udp4[VNET_HDR_LEN + 9] = PROTO_UDP;
        assert!(!carries_tcp(&udp4));
        assert!(!carries_tcp(&[0u8; 4]), "too short");
        assert!(!carries_tcp(&[0u8; VNET_HDR_LEN + 40]), "not IP");
    }

    #[test]
    fn what_is_not_a_super_packet_is_not_cut() {
        assert!(split(&tcp4_super(1448, 1, 10, 0)).is_none());
        assert!(split(&[0u8; 4]).is_none());
        let mut odd = tcp4_super(1448, 3, 10, 0);
        odd[VNET_HDR_LEN] = 0x65; // says IPv6 in a TCPv4 super-packet
        assert!(split(&odd).is_none());
        assert_eq!(shape(&[0u8; 3]).segments, 1);
    }
}
