//! ResourceFlavor validation (Kueue `resourceflavor_webhook.go`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Taint;

use crate::api::v1beta2::ResourceFlavor;
use crate::k8s::field::{BadValue, FieldError};
use crate::k8s::names;

use super::common::{validate_label_name, validate_labels, validate_tolerations};

/// Kueue `ValidateResourceFlavor` (CREATE and UPDATE).
pub fn validate_resource_flavor(flavor: &ResourceFlavor) -> Vec<FieldError> {
    let spec = &flavor.spec;
    let mut errors: Vec<FieldError> = validate_labels(&spec.node_labels, "spec.nodeLabels");
    errors.extend(validate_node_taints(&spec.node_taints, "spec.nodeTaints"));
    errors.extend(validate_tolerations(&spec.tolerations, "spec.tolerations"));
    errors
}

fn validate_node_taints(taints: &[Taint], field: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (i, taint) in taints.iter().enumerate() {
        let path = format!("{field}[{i}]");
        errors.extend(validate_label_name(&taint.key, &format!("{path}.key")));
        let value = taint.value.as_deref().unwrap_or("");
        let value_errors = names::label_value(value);
        if !value_errors.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.value"),
                value,
                value_errors.join(";"),
            ));
        }
        if !seen.insert((taint.effect.as_str(), taint.key.as_str())) {
            errors.push(
                FieldError::duplicate(path, BadValue::rendered(go_taint(taint)))
                    .with_detail("taints must be unique by key and effect pair".to_owned()),
            );
        }
    }
    errors
}

/// The taint as Go's `%#v` prints a `corev1.Taint`.
fn go_taint(taint: &Taint) -> String {
    let time_added = match &taint.time_added {
        None => "(*v1.Time)(nil)".to_owned(),
        Some(time) => format!("&v1.Time{{Time:{:?}}}", time.0.to_string()),
    };
    format!(
        "v1.Taint{{Key:{:?}, Value:{:?}, Effect:{:?}, TimeAdded:{time_added}}}",
        taint.key,
        taint.value.as_deref().unwrap_or(""),
        taint.effect
    )
}
