//! What a controller's logs must never show: key material, bearer tokens and whole objects
//! (which carry Secrets' data and users' environment variables).

/// A secret whose text must not appear in a log, and what to call it in a failure.
pub struct Secret<'a> {
    pub what: &'a str,
    pub text: &'a str,
}

/// The pieces of `pem` worth looking for: each base64 line of its body. A log that shows any of
/// them shows part of the key or certificate.
pub fn pem_lines(pem: &str) -> Vec<&str> {
    pem.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("-----"))
        .collect()
}

/// Signs of a whole object printed: serialized (`"metadata":{`), or Rust's Debug form.
const WHOLE_OBJECT_MARKS: [&str; 3] = ["\"metadata\":{", "ObjectMeta {", "managedFields"];

/// Every line of `log` that shows one of `secrets`, key material or a whole object, as
/// `<log name>:<line>: <what>`.
pub fn leaks(name: &str, log: &str, secrets: &[Secret<'_>]) -> Vec<String> {
    let mut found = Vec::new();
    for (number, line) in log.lines().enumerate() {
        let at = format!("{name}:{}", number + 1);
        for secret in secrets {
            if !secret.text.is_empty() && line.contains(secret.text) {
                found.push(format!("{at}: {}", secret.what));
            }
        }
        if line.contains("PRIVATE KEY") {
            found.push(format!("{at}: a PEM private key"));
        }
        if let Some(mark) = WHOLE_OBJECT_MARKS.iter().find(|mark| line.contains(*mark)) {
            found.push(format!("{at}: a whole object ({mark})"));
        }
    }
    found
}
