//! Go `time.Duration` strings such as `"30m"`, `"1h30m"`, `"10s"` or `"500ms"`, the form every
//! duration in Kueue's `Configuration` takes (`metav1.Duration` marshals through Go's
//! `time.ParseDuration` and `Duration.String`). No crate parses exactly this grammar (humantime
//! wants spaces and rejects fractions such as `"1.5h"`), so it is parsed here.

use std::{fmt, str::FromStr, time::Duration};

use serde::{Deserialize, Deserializer, de};

const NANOS_PER_MICROSECOND: u64 = 1_000;
const NANOS_PER_MILLISECOND: u64 = 1_000_000;
const NANOS_PER_SECOND: u64 = 1_000_000_000;
const NANOS_PER_MINUTE: u64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MINUTE;

/// Largest magnitude a Go duration holds: `|i64::MIN|` nanoseconds.
const MAX_MAGNITUDE: u64 = 1 << 63;

/// A signed duration with nanosecond resolution, the value range of Go's `time.Duration`.
///
/// Signed because Kueue decodes negative durations and rejects them in validation with a field
/// error; [`GoDuration::to_std`] gives the `std` duration once the sign is known to be fine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration {
    nanos: i64,
}

impl GoDuration {
    /// The zero duration, `"0s"`.
    pub const ZERO: GoDuration = GoDuration { nanos: 0 };

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        GoDuration { nanos }
    }

    /// A duration of `seconds` whole seconds.
    pub const fn from_secs(seconds: i64) -> Self {
        GoDuration {
            nanos: seconds.saturating_mul(NANOS_PER_SECOND as i64),
        }
    }

    /// A duration of `minutes` whole minutes.
    pub const fn from_mins(minutes: i64) -> Self {
        GoDuration {
            nanos: minutes.saturating_mul(NANOS_PER_MINUTE as i64),
        }
    }

    /// The signed length in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.nanos
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// Whether the duration is exactly zero.
    pub const fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// The same length as a `std` duration, or `None` when negative.
    pub fn to_std(self) -> Option<Duration> {
        u64::try_from(self.nanos).ok().map(Duration::from_nanos)
    }
}

/// Why a string is not a Go duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the form `[-+]<number><unit>...` (or a bare `0`).
    #[error("not a duration")]
    Invalid,
    /// A number without its unit, e.g. `"30"`.
    #[error("missing unit")]
    MissingUnit,
    /// A unit other than `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`.
    #[error("unknown unit {0:?}")]
    UnknownUnit(String),
    /// More than Go's ±292 years.
    #[error("out of range")]
    Overflow,
}

fn nanos_per_unit(unit: &str) -> Option<u64> {
    match unit {
        "ns" => Some(1),
        // Go accepts the ASCII spelling, the micro sign (U+00B5) and the Greek mu (U+03BC).
        "us" | "\u{b5}s" | "\u{3bc}s" => Some(NANOS_PER_MICROSECOND),
        "ms" => Some(NANOS_PER_MILLISECOND),
        "s" => Some(NANOS_PER_SECOND),
        "m" => Some(NANOS_PER_MINUTE),
        "h" => Some(NANOS_PER_HOUR),
        _ => None,
    }
}

fn split_digits(text: &str) -> (&str, &str) {
    let count = text.bytes().take_while(u8::is_ascii_digit).count();
    text.split_at(count)
}

/// Nanoseconds of one `<number><unit>` term: the whole part times the unit plus the fraction of
/// one unit, truncated to whole nanoseconds (as Go does).
fn term_nanos(whole: &str, fraction: &str, per_unit: u64) -> Result<u64, DurationError> {
    let whole_value = whole.bytes().try_fold(0u64, |acc, digit| {
        acc.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    });
    let mut nanos = whole_value
        .and_then(|value| value.checked_mul(per_unit))
        .ok_or(DurationError::Overflow)?;
    // Digits past the 18th cannot change a result truncated to nanoseconds of an hour.
    let fraction = &fraction[..fraction.len().min(18)];
    if !fraction.is_empty() {
        let numerator = fraction
            .bytes()
            .fold(0u128, |acc, digit| acc * 10 + u128::from(digit - b'0'));
        let scale = 10u128.pow(fraction.len() as u32);
        let fraction_nanos = u64::try_from(numerator * u128::from(per_unit) / scale)
            .map_err(|_| DurationError::Overflow)?;
        nanos = nanos
            .checked_add(fraction_nanos)
            .ok_or(DurationError::Overflow)?;
    }
    Ok(nanos)
}

impl FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (negative, mut rest) = if let Some(rest) = text.strip_prefix('-') {
            (true, rest)
        } else {
            (false, text.strip_prefix('+').unwrap_or(text))
        };
        if rest == "0" {
            return Ok(GoDuration::ZERO);
        }
        if rest.is_empty() {
            return Err(DurationError::Invalid);
        }
        let mut magnitude: u64 = 0;
        while !rest.is_empty() {
            let (whole, after_whole) = split_digits(rest);
            let (fraction, after_number) = match after_whole.strip_prefix('.') {
                Some(after_dot) => split_digits(after_dot),
                None => ("", after_whole),
            };
            if whole.is_empty() && fraction.is_empty() {
                return Err(DurationError::Invalid);
            }
            let unit_len = after_number
                .find(|c: char| c == '.' || c.is_ascii_digit())
                .unwrap_or(after_number.len());
            if unit_len == 0 {
                return Err(DurationError::MissingUnit);
            }
            let (unit, after_unit) = after_number.split_at(unit_len);
            let per_unit =
                nanos_per_unit(unit).ok_or_else(|| DurationError::UnknownUnit(unit.to_owned()))?;
            magnitude = magnitude
                .checked_add(term_nanos(whole, fraction, per_unit)?)
                .filter(|total| *total <= MAX_MAGNITUDE)
                .ok_or(DurationError::Overflow)?;
            rest = after_unit;
        }
        let nanos = if negative {
            0i64.checked_sub_unsigned(magnitude)
        } else {
            i64::try_from(magnitude).ok()
        };
        nanos
            .map(GoDuration::from_nanos)
            .ok_or(DurationError::Overflow)
    }
}

/// Writes `value / 10^digits` with the fraction's trailing zeros (and a bare dot) left out.
fn write_scaled(out: &mut fmt::Formatter<'_>, value: u64, digits: u32) -> fmt::Result {
    let scale = 10u64.pow(digits);
    write!(out, "{}", value / scale)?;
    let remainder = value % scale;
    if remainder != 0 {
        let padded = format!("{remainder:0width$}", width = digits as usize);
        write!(out, ".{}", padded.trim_end_matches('0'))?;
    }
    Ok(())
}

/// Go's `Duration.String` form: `"1h30m0s"`, `"5m0s"`, `"1.5s"`, `"500ms"`, `"0s"`.
impl fmt::Display for GoDuration {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let magnitude = self.nanos.unsigned_abs();
        if self.nanos < 0 {
            out.write_str("-")?;
        }
        if magnitude == 0 {
            return out.write_str("0s");
        }
        if magnitude < NANOS_PER_MICROSECOND {
            return write!(out, "{magnitude}ns");
        }
        if magnitude < NANOS_PER_MILLISECOND {
            write_scaled(out, magnitude, 3)?;
            return out.write_str("\u{b5}s");
        }
        if magnitude < NANOS_PER_SECOND {
            write_scaled(out, magnitude, 6)?;
            return out.write_str("ms");
        }
        let hours = magnitude / NANOS_PER_HOUR;
        let minutes = magnitude / NANOS_PER_MINUTE % 60;
        if hours > 0 {
            write!(out, "{hours}h")?;
        }
        if hours > 0 || minutes > 0 {
            write!(out, "{minutes}m")?;
        }
        write_scaled(out, magnitude % NANOS_PER_MINUTE, 9)?;
        out.write_str("s")
    }
}

struct GoDurationVisitor;

impl de::Visitor<'_> for GoDurationVisitor {
    type Value = GoDuration;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a Go duration string such as \"30s\" or \"1h30m\"")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<GoDuration, E> {
        text.parse().map_err(|error: DurationError| {
            E::custom(format!(
                "Invalid value: {text:?}: {error}; expected a Go duration such as \"500ms\", \"30s\", \"5m\" or \"1h30m\""
            ))
        })
    }
}

/// Decodes from a string only, as `metav1.Duration` does; a bare number is a type error.
impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(GoDurationVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_duration_strings() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("+0", 0),
            ("-0", 0),
            ("0s", 0),
            ("30m", 30 * 60 * 1_000_000_000),
            ("1h30m", 90 * 60 * 1_000_000_000),
            ("10s", 10_000_000_000),
            ("500ms", 500_000_000),
            ("1.5h", 90 * 60 * 1_000_000_000),
            (".5s", 500_000_000),
            ("5.s", 5_000_000_000),
            ("1us", 1_000),
            ("1\u{b5}s", 1_000),
            ("1\u{3bc}s", 1_000),
            ("3ns", 3),
            ("-1m", -60_000_000_000),
            ("+2s", 2_000_000_000),
            ("1h0m0s", 3_600_000_000_000),
            (
                "2h45m30.25s",
                ((2 * 60 + 45) * 60) * 1_000_000_000 + 30_250_000_000,
            ),
            ("0.000000001s", 1),
            ("0.0000000009s", 0),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
        ];
        for (text, nanos) in cases {
            assert_eq!(
                text.parse::<GoDuration>(),
                Ok(GoDuration::from_nanos(*nanos)),
                "{text}"
            );
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        let cases: &[(&str, DurationError)] = &[
            ("", DurationError::Invalid),
            ("-", DurationError::Invalid),
            (".", DurationError::Invalid),
            ("s", DurationError::Invalid),
            (" 5s", DurationError::Invalid),
            ("1h-5m", DurationError::UnknownUnit("h-".into())),
            ("1h 5m", DurationError::UnknownUnit("h ".into())),
            ("30", DurationError::MissingUnit),
            ("1h30", DurationError::MissingUnit),
            ("5x", DurationError::UnknownUnit("x".into())),
            ("5 s", DurationError::UnknownUnit(" s".into())),
            ("1d", DurationError::UnknownUnit("d".into())),
            ("9223372036854775808ns", DurationError::Overflow),
            ("3000000h", DurationError::Overflow),
            ("99999999999999999999s", DurationError::Overflow),
        ];
        for (text, error) in cases {
            assert_eq!(text.parse::<GoDuration>(), Err(error.clone()), "{text:?}");
        }
    }

    #[test]
    fn formats_like_go_duration_string() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1\u{b5}s"),
            (2_200_000, "2.2ms"),
            (500_000_000, "500ms"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (30 * 60_000_000_000, "30m0s"),
            (90 * 60_000_000_000, "1h30m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (-60_000_000_000, "-1m0s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(GoDuration::from_nanos(*nanos).to_string(), *text);
        }
    }

    #[test]
    fn converts_to_std_only_when_not_negative() {
        assert_eq!(
            GoDuration::from_mins(5).to_std(),
            Some(Duration::from_secs(300))
        );
        assert_eq!(GoDuration::from_secs(-1).to_std(), None);
    }

    #[test]
    fn deserializes_from_strings_only() {
        let parsed: GoDuration = crate::k8s::yaml::from_str("\"1h30m\"").unwrap();
        assert_eq!(parsed, GoDuration::from_mins(90));
        let error = crate::k8s::yaml::from_str::<GoDuration>("5x").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("Invalid value: \"5x\": unknown unit \"x\"; expected a Go duration"),
            "{error}"
        );
        // A YAML number is not a duration (it reaches us as a parsed YAML value).
        let error = serde_json::from_value::<GoDuration>(serde_json::Value::from(30)).unwrap_err();
        assert!(
            error.to_string().starts_with(
                "invalid type: integer `30`, expected a Go duration string such as \"30s\" or \"1h30m\""
            ),
            "{error}"
        );
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_text_is_read_or_refused(text in "\\PC{0,24}|[+-]?([0-9.]{1,6}(h|m|s|ms|us|µs|ns)){1,4}") {
            let _ = text.parse::<GoDuration>();
        }

        #[test]
        fn a_duration_written_as_go_writes_it_reads_back(nanos in any::<i64>()) {
            let duration = GoDuration { nanos };
            prop_assert_eq!(duration.to_string().parse::<GoDuration>(), Ok(duration));
        }
    }
}
