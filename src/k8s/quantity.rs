//! Kubernetes resource quantities as integers, the way Kueue counts them.
//!
//! Canonical unit (Kueue's `resources.ResourceValue`): `cpu` is counted in milli-cores, every other
//! resource in whole base units (bytes for memory, devices for GPUs, ...). Conversions round up
//! (away from zero), like `Quantity.MilliValue()`/`Value()`, and clamp to the `i64` range.
//!
//! No crate fits: `kube_quantity` parses through `f64` (losing precision) and has no milli-value
//! accessor, so the grammar of `k8s.io/apimachinery` `ParseQuantity` is implemented here with
//! exact integer arithmetic.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The resource counted in milli-units; all others are counted in base units.
pub const CPU: &str = "cpu";

/// Nano-units per base unit: the finest precision Kubernetes keeps for a quantity.
const NANO: i128 = 1_000_000_000;

/// A string that is not a Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {value:?}: {reason}")]
pub struct QuantityError {
    /// The rejected text.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Integer value of `quantity` for `resource` in the canonical unit (milli for cpu, else base).
pub fn resource_value(resource: &str, quantity: &Quantity) -> Result<i64, QuantityError> {
    parse_nano(&quantity.0).map(|nano| nano_to_value(resource, nano))
}

/// Converts an exact nano-unit amount to the canonical unit of `resource`, rounding up and clamping.
pub(crate) fn nano_to_value(resource: &str, nano: i128) -> i64 {
    let per_unit = if resource == CPU { NANO / 1000 } else { NANO };
    let magnitude = nano.unsigned_abs().div_ceil(per_unit.unsigned_abs());
    let signed = if nano < 0 {
        -(i128::try_from(magnitude).unwrap_or(i128::MAX))
    } else {
        i128::try_from(magnitude).unwrap_or(i128::MAX)
    };
    i64::try_from(signed).unwrap_or(if signed < 0 { i64::MIN } else { i64::MAX })
}

/// Formats a canonical-unit value back to a Kubernetes quantity, as Kueue's `ResourceQuantity`:
/// cpu as milli decimal ("500m", "2"), memory, ephemeral-storage and hugepages-* in binary units
/// when exact ("1Gi"), everything else in decimal ("4", "1500k").
pub fn format_quantity(resource: &str, value: i64) -> Quantity {
    let text = if resource == CPU {
        format_decimal(i128::from(value), -3)
    } else if resource == "memory"
        || resource == "ephemeral-storage"
        || resource.starts_with("hugepages-")
    {
        format_binary(value)
    } else {
        format_decimal(i128::from(value), 0)
    };
    Quantity(text)
}

/// Canonical DecimalSI text of `mantissa × 10^exponent` (`exponent` a multiple of 3).
fn format_decimal(mut mantissa: i128, mut exponent: i32) -> String {
    if mantissa == 0 {
        return "0".to_string();
    }
    while mantissa % 1000 == 0 && exponent < 18 {
        mantissa /= 1000;
        exponent += 3;
    }
    let suffix = match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    };
    format!("{mantissa}{suffix}")
}

/// Canonical BinarySI text, falling back to decimal when the value is small or not a multiple of 1024.
fn format_binary(value: i64) -> String {
    let mut mantissa = i128::from(value);
    if mantissa.abs() < 1024 || mantissa % 1024 != 0 {
        return format_decimal(mantissa, 0);
    }
    let mut power = 0;
    while mantissa % 1024 == 0 && power < 6 {
        mantissa /= 1024;
        power += 1;
    }
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
    format!("{mantissa}{suffix}")
}

/// Parses a quantity to an exact nano-unit amount (rounded up past nano precision, saturating).
pub(crate) fn parse_nano(text: &str) -> Result<i128, QuantityError> {
    let error = |reason| QuantityError {
        value: text.to_string(),
        reason,
    };
    if text.is_empty() {
        return Err(error("empty string"));
    }
    let bytes = text.as_bytes();
    let mut pos = 0;
    let negative = bytes[0] == b'-';
    if matches!(bytes[0], b'-' | b'+') {
        pos += 1;
    }
    let integer_start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let integer = &text[integer_start..pos];
    let mut fraction = "";
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let fraction_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        fraction = &text[fraction_start..pos];
    }
    let (decimal_exponent, binary_exponent) =
        parse_suffix(&text[pos..]).ok_or_else(|| error("unknown suffix"))?;

    let mut digits = Digits::default();
    for digit in integer.bytes().chain(fraction.bytes()) {
        digits.push(digit - b'0');
    }
    let scale = i64::from(decimal_exponent) + 9 - fraction.len() as i64;
    let magnitude = digits.scaled_ceil(scale, binary_exponent);
    Ok(if negative { -magnitude } else { magnitude })
}

/// Decimal and binary exponents of a suffix: "" | n u m k M G T P E | Ki..Ei | e<int> | E<int>.
fn parse_suffix(suffix: &str) -> Option<(i32, u32)> {
    let decimal = match suffix {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(exponent) = decimal {
        return Some((exponent, 0));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exponent) = binary {
        return Some((0, exponent));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i64 = exponent.parse().ok()?;
    Some((value.clamp(-1_000_000, 1_000_000) as i32, 0))
}

/// An unsigned decimal integer of any length, little-endian base-10^9 limbs.
#[derive(Default)]
struct Digits {
    limbs: Vec<u32>,
    count: usize,
}

const LIMB: u64 = 1_000_000_000;

impl Digits {
    fn push(&mut self, digit: u8) {
        self.count += 1;
        self.mul_add(10, u32::from(digit));
    }

    fn mul_add(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.limbs {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = (product % LIMB) as u32;
            carry = product / LIMB;
        }
        while carry > 0 {
            self.limbs.push((carry % LIMB) as u32);
            carry /= LIMB;
        }
    }

    /// Divides by `divisor`, returning whether the remainder was non-zero.
    fn div(&mut self, divisor: u32) -> bool {
        let mut remainder = 0u64;
        for limb in self.limbs.iter_mut().rev() {
            let current = remainder * LIMB + u64::from(*limb);
            *limb = (current / u64::from(divisor)) as u32;
            remainder = current % u64::from(divisor);
        }
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
        remainder != 0
    }

    fn is_zero(&self) -> bool {
        self.limbs.iter().all(|limb| *limb == 0)
    }

    /// `ceil(self × 10^scale × 2^binary)`, saturating to `i128::MAX`.
    fn scaled_ceil(mut self, scale: i64, binary: u32) -> i128 {
        if self.is_zero() {
            return 0;
        }
        // Bounds keep the loops short for absurd exponents: anything this large saturates,
        // anything this small is a positive amount below one nano-unit.
        if scale > 60 {
            return i128::MAX;
        }
        if scale < -(self.count as i64) - 30 {
            return 1;
        }
        for _ in 0..binary / 10 {
            self.mul_add(1024, 0);
        }
        let mut inexact = false;
        if scale >= 0 {
            for _ in 0..scale {
                self.mul_add(10, 0);
            }
        } else {
            for _ in 0..-scale {
                inexact |= self.div(10);
            }
        }
        let mut value: i128 = 0;
        for limb in self.limbs.iter().rev() {
            value = match value
                .checked_mul(LIMB as i128)
                .and_then(|v| v.checked_add(i128::from(*limb)))
            {
                Some(v) => v,
                None => return i128::MAX,
            };
        }
        if inexact {
            value.saturating_add(1)
        } else {
            value
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity(text.to_string())
    }

    #[test]
    fn values_in_canonical_units() {
        let cases: &[(&str, &str, i64)] = &[
            ("cpu", "500m", 500),
            ("cpu", "1", 1000),
            ("cpu", "2.5", 2500),
            ("cpu", "0.1", 100),
            ("cpu", "100u", 1),
            ("cpu", "1500000n", 2),
            ("cpu", "1e3", 1_000_000),
            ("cpu", "1E-3", 1),
            ("cpu", "+1k", 1_000_000),
            ("cpu", ".5", 500),
            ("cpu", "1.", 1000),
            ("cpu", "-1", -1000),
            ("cpu", "0", 0),
            ("memory", "1Gi", 1_073_741_824),
            ("memory", "1.5Gi", 1_610_612_736),
            ("memory", "128974848", 128_974_848),
            ("memory", "129e6", 129_000_000),
            ("memory", "123Mi", 128_974_848),
            ("memory", "1k", 1000),
            ("memory", "0.5", 1),
            ("memory", "100m", 1),
            ("memory", "8Ei", i64::MAX),
            ("nvidia.com/gpu", "4", 4),
            ("cpu", "9223372036854775807", i64::MAX),
            ("cpu", "0.0000000000000000000000000000001", 1),
        ];
        for (resource, text, expected) in cases {
            assert_eq!(
                resource_value(resource, &q(text)),
                Ok(*expected),
                "{resource} {text}"
            );
        }
    }

    #[test]
    fn rejects_malformed_quantities() {
        for text in ["", "1ki", "1 Gi", "abc", "1e", "1e+", "1Gi2", "1.2.3", "1x"] {
            let error = resource_value("cpu", &q(text)).unwrap_err();
            assert_eq!(error.value, text);
        }
    }

    #[test]
    fn formats_like_kueue() {
        let cases: &[(&str, i64, &str)] = &[
            ("cpu", 500, "500m"),
            ("cpu", 1000, "1"),
            ("cpu", 1500, "1500m"),
            ("cpu", 2_000_000, "2k"),
            ("cpu", 0, "0"),
            ("memory", 1_073_741_824, "1Gi"),
            ("memory", 1_610_612_736, "1536Mi"),
            ("memory", 1_500_000_000, "1500M"),
            ("memory", 1000, "1k"),
            ("memory", 1536, "1536"),
            ("memory", 512, "512"),
            ("hugepages-2Mi", 2_097_152, "2Mi"),
            ("ephemeral-storage", 10_737_418_240, "10Gi"),
            ("nvidia.com/gpu", 4, "4"),
            ("pods", 5000, "5k"),
        ];
        for (resource, value, expected) in cases {
            assert_eq!(
                format_quantity(resource, *value).0,
                *expected,
                "{resource} {value}"
            );
        }
    }

    #[test]
    fn format_then_parse_round_trips() {
        for (resource, value) in [
            ("cpu", 1234),
            ("memory", 3 * 1024 * 1024),
            ("memory", 999_999),
            ("example.com/dev", 7),
        ] {
            let text = format_quantity(resource, value);
            assert_eq!(resource_value(resource, &text), Ok(value), "{}", text.0);
        }
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_text_is_read_or_refused(text in "\\PC{0,24}|[0-9.eE+-]{1,12}(m|k|M|G|Ki|Mi|Gi|Ei|e9)?") {
            let _ = parse_nano(&text);
        }

        #[test]
        fn a_formatted_value_reads_back(
            value in any::<i64>(),
            resource in prop_oneof![Just(CPU), Just("memory"), Just("nvidia.com/gpu")],
        ) {
            prop_assert_eq!(resource_value(resource, &format_quantity(resource, value)), Ok(value));
        }
    }
}
