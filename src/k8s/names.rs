//! apimachinery's name rules (`k8s.io/apimachinery/pkg/util/validation`), each returning its
//! exact messages for a value, empty when the value is valid. Callers wrap each message in a
//! [`FieldError`](super::field::FieldError) for the field they check.

const DNS1123_LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_FORMAT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

/// apimachinery `RegexError`: `message`, the examples, and the regex it failed.
pub fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{format}')");
    }
    let quoted: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        quoted.join(" or ")
    )
}

/// apimachinery `MaxLenError`.
pub fn max_length_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Whether `text` matches apimachinery's DNS-1123 label regex (length not checked).
fn matches_dns1123_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            (first.is_ascii_lowercase() || first.is_ascii_digit())
                && (last.is_ascii_lowercase() || last.is_ascii_digit())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        }
        _ => false,
    }
}

/// apimachinery `IsDNS1123Label`.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_length_error(63));
    }
    if !matches_dns1123_label(value) {
        if value.split('.').all(matches_dns1123_label) {
            // A valid subdomain but not a valid label: it has dots.
            errors.push("must not contain dots".to_owned());
        } else {
            errors.push(regex_error(
                DNS1123_LABEL_MESSAGE,
                DNS1123_LABEL_FORMAT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errors
}

/// apimachinery `IsDNS1035Label` (Service names).
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_length_error(63));
    }
    let starts_with_letter = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_with_letter && matches_dns1123_label(value)) {
        errors.push(regex_error(
            DNS1035_LABEL_MESSAGE,
            DNS1035_LABEL_FORMAT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// apimachinery `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_length_error(253));
    }
    if !value.split('.').all(matches_dns1123_label) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["example.com"],
        ));
    }
    errors
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// apimachinery `IsQualifiedName` (label keys, annotation keys, resource names).
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|message| format!("prefix part {message}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MESSAGE,
                    QUALIFIED_NAME_FORMAT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_length_error(63)));
    }
    if !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MESSAGE,
                QUALIFIED_NAME_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// apimachinery `IsValidLabelValue`.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_length_error(63));
    }
    if !(value.is_empty() || is_qualified_name_part(value)) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const DNS1123_LABEL_REGEX_ERROR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn dns_labels_and_subdomains_carry_apimachinerys_messages() {
        let none: Vec<String> = Vec::new();
        assert_eq!(dns1123_label("kueue-system"), none);
        assert_eq!(dns1123_label("Kueue"), vec![DNS1123_LABEL_REGEX_ERROR]);
        assert_eq!(dns1123_label("-a"), vec![DNS1123_LABEL_REGEX_ERROR]);
        assert_eq!(dns1123_label(""), vec![DNS1123_LABEL_REGEX_ERROR]);
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(dns1035_label("kueue-webhook-service"), none);
        assert_eq!(
            dns1035_label("1abc"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(dns1123_subdomain("c1f6bfd2.kueue.x-k8s.io"), none);
        assert_eq!(dns1123_subdomain("a..b").len(), 1);
    }

    #[test]
    fn apimachinery_name_messages() {
        assert_eq!(dns1123_subdomain("team-a.example"), Vec::<String>::new());
        assert_eq!(
            dns1123_subdomain("Team"),
            vec![
                r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_subdomain(&"a".repeat(254))[0],
            "must be no more than 253 characters"
        );
        assert_eq!(qualified_name("example.com/gpu"), Vec::<String>::new());
        assert_eq!(
            qualified_name("-gpu"),
            vec![
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            qualified_name("/gpu"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
    }

    // === ClusterQueue ===
}
