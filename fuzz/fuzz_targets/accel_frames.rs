//! The accelerator's session bytes as a peer could send them: a hello, then frames
//! (header and body), each decoded and, if DATA or REF, handed to the codec's decoder
//! (whose cache a REF reads). Nothing may panic; errors are the peer's.
#![no_main]

use libfuzzer_sys::fuzz_target;
use longhaul_accel::codec::Decoder;
use longhaul_accel::wire::{FRAME_HEADER_BYTES, Frame, HELLO_BYTES, Hello};

fuzz_target!(|bytes: &[u8]| {
    if let Some(hello) = bytes.get(..HELLO_BYTES) {
        let _ = Hello::decode(hello.try_into().expect("HELLO_BYTES"));
    }
    let mut decoder = Decoder::new(1 << 20);
    let mut rest = bytes;
    while let Some(header) = rest.get(..FRAME_HEADER_BYTES) {
        let Ok((kind, stream, len)) = Frame::decode_header(header.try_into().expect("header"))
        else {
            return;
        };
        let Some(body) = rest.get(FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + len) else {
            return;
        };
        rest = &rest[FRAME_HEADER_BYTES + len..];
        let Ok(frame) = Frame::decode_body(kind, stream, body) else {
            continue;
        };
        if matches!(frame, Frame::Data { .. } | Frame::Ref { .. }) && decoder.decode(frame).is_err()
        {
            return; // a session ends at the first bad chunk
        }
    }
});
