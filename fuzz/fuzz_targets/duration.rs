//! Any text as a Go duration: read or refused, and a duration read back as Go writes it.
#![no_main]

use kuota::k8s::duration::GoDuration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(duration) = text.parse::<GoDuration>() {
        assert_eq!(
            duration.to_string().parse::<GoDuration>(),
            Ok(duration),
            "{text:?}"
        );
    }
});
