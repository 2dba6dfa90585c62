//! Frames arriving at the link encryptor's far end as an attacker on the line could
//! shape them: first one genuine sealed frame (so an association is held and its replay
//! window in use), then the fuzzer's bytes, split into frames by a length byte. Nothing
//! may panic, and nothing but the genuine frame may open.
#![no_main]

use libfuzzer_sys::fuzz_target;
use longhaul_wan::encryptor::{EncryptorConfig, Opener, Sealer, TRAILER_BYTES};

const CLEAR: usize = 10;

fuzz_target!(|bytes: &[u8]| {
    let config = EncryptorConfig::new(vec![7; 32]);
    let mut sealer = Sealer::new(&config, 1, 0);
    let mut opener = Opener::new(&config);
    let mut genuine = vec![0u8; CLEAR + 64 + TRAILER_BYTES];
    let len = sealer.seal(0, &mut genuine, CLEAR, CLEAR + 64);
    assert!(opener.open(&mut genuine[..len], CLEAR).is_ok());
    let mut rest = bytes;
    while let Some((&n, tail)) = rest.split_first() {
        let n = usize::from(n).min(tail.len());
        let mut frame = tail[..n].to_vec();
        assert!(
            opener.open(&mut frame, CLEAR).is_err(),
            "a forged frame opened"
        );
        rest = &tail[n..];
    }
});
