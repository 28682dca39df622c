//! Any bytes as a ConversionReview body: decoding refuses or yields objects, each converted to
//! the desired version or refused, never a panic.
#![no_main]

use kuota::api::conversion::convert;
use kuota::webhook::review::parse_conversion_review;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = parse_conversion_review(data) else {
        return;
    };
    for object in request.objects {
        let _ = convert(object, &request.desired_api_version);
    }
});
