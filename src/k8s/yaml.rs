//! YAML in and out, through serde-saphyr (the YAML crate kube itself uses). Documents are read
//! into JSON values, as the API server reads them; errors are one line for the person who wrote
//! the file, with its line and column, never a source snippet.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a YAML text could not be read, worded for the person who wrote it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl From<serde_saphyr::Error> for Error {
    fn from(error: serde_saphyr::Error) -> Self {
        // The default wording advises the programmer on parser options.
        Error(error.render_with_formatter(&serde_saphyr::UserMessageFormatter))
    }
}

/// Why a value could not be written as YAML.
pub type SerializeError = serde_saphyr::SerializeError;

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { with_snippet: false }
}

/// Reads one YAML document as `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    Ok(serde_saphyr::from_str_with_options(text, options())?)
}

/// Reads the documents of a YAML stream (`---`-separated), leaving out empty ones.
pub fn documents(text: &str) -> Result<Vec<serde_json::Value>, Error> {
    let documents: Vec<serde_json::Value> =
        serde_saphyr::from_multiple_with_options(text, options())?;
    Ok(documents
        .into_iter()
        .filter(|document| !document.is_null())
        .collect())
}

/// Writes `value` as one YAML document. A long string stays on one line (folded at 80
/// characters, every reworded description would rewrap its neighbours in a diff); a string
/// with line breaks is written as a literal block.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, SerializeError> {
    serde_saphyr::to_string_with_options(
        value,
        serde_saphyr::ser_options! { folded_wrap_chars: usize::MAX },
    )
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn documents_are_json_values_without_the_empty_ones() {
        let text = "a: 1\n---\n---\n# a comment only\n---\nb: [x, '2', 3]\n";
        assert_eq!(
            documents(text).unwrap(),
            [json!({"a": 1}), json!({"b": ["x", "2", 3]})]
        );
    }

    #[test]
    fn an_error_is_one_line_with_its_position() {
        let error = from_str::<serde_json::Value>("a: 1\nb: [1\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "unclosed bracket '[' at line 2, column 4"
        );
    }

    #[test]
    fn a_duplicate_key_is_refused() {
        let error = from_str::<serde_json::Value>("a: 1\na: 2\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "duplicate mapping key `a` is not allowed here at line 2, column 1"
        );
    }

    #[test]
    fn what_is_written_reads_back() {
        let value = json!({
            "kind": "X",
            "spec": {"text": "one\ntwo", "list": [{"a": 1}, "b"], "empty": {}, "quoted": "true"},
        });
        let text = to_string(&value).unwrap();
        assert_eq!(from_str::<serde_json::Value>(&text).unwrap(), value);
    }
}
