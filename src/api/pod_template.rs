//! The pod template of a Workload's PodSet, kept encoded.

use std::fmt;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A pod template kept as its JSON encoding, decoded by [`PodTemplate::decode`] where it is
/// read. Pending Workloads stay in the admitter's store, thousands at a time, for as long as
/// they wait, and a typed `PodTemplateSpec` of one container takes about 4 KB before it holds a
/// single string; the encoding of a usual template takes a few hundred bytes.
///
/// The encoding is canonical (what the typed template serializes to), so two templates are
/// equal exactly when their typed forms are.
#[derive(Clone)]
pub struct PodTemplate(Box<RawValue>);

impl PodTemplate {
    /// Encodes a typed template.
    pub fn new(template: &PodTemplateSpec) -> Self {
        // Serializing a PodTemplateSpec cannot fail: all its maps have string keys.
        Self(serde_json::value::to_raw_value(template).expect("a pod template encodes as JSON"))
    }

    /// The typed template.
    pub fn decode(&self) -> PodTemplateSpec {
        // The encoding was made from a PodTemplateSpec, so it decodes as one.
        serde_json::from_str(self.0.get()).expect("an encoded pod template decodes")
    }
}

impl From<PodTemplateSpec> for PodTemplate {
    fn from(template: PodTemplateSpec) -> Self {
        Self::new(&template)
    }
}

impl Default for PodTemplate {
    fn default() -> Self {
        Self::new(&PodTemplateSpec::default())
    }
}

impl PartialEq for PodTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl fmt::Debug for PodTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PodTemplate").field(&self.0.get()).finish()
    }
}

impl Serialize for PodTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Decodes the typed template first, so that a template of the wrong shape is refused where
/// the Workload is read, and so that the encoding kept is canonical.
impl<'de> Deserialize<'de> for PodTemplate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        PodTemplateSpec::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(value: serde_json::Value) -> PodTemplate {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_template_decodes_to_what_it_was_read_from() {
        let read = json!({
            "metadata": {"labels": {"app": "train"}},
            "spec": {"containers": [{
                "name": "main",
                "image": "trainer:1",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }]},
        });
        let decoded = template(read.clone()).decode();
        assert_eq!(
            decoded,
            serde_json::from_value::<PodTemplateSpec>(read).unwrap()
        );
    }

    #[test]
    fn a_template_serializes_as_the_typed_template_does() {
        let typed: PodTemplateSpec = serde_json::from_value(json!({
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]},
        }))
        .unwrap();
        let encoded = PodTemplate::new(&typed);
        assert_eq!(
            serde_json::to_string(&encoded).unwrap(),
            serde_json::to_string(&typed).unwrap()
        );
        assert_eq!(
            serde_json::to_value(&encoded).unwrap(),
            serde_json::to_value(&typed).unwrap()
        );
    }

    #[test]
    fn templates_are_equal_when_their_typed_forms_are_whatever_the_key_order_read() {
        let a = template(json!({"spec": {"containers": [{"name": "a", "image": "x"}]}}));
        let b = template(json!({"spec": {"containers": [{"image": "x", "name": "a"}]}}));
        let c = template(json!({"spec": {"containers": [{"image": "y", "name": "a"}]}}));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_template_of_the_wrong_shape_is_refused_when_read() {
        let error = serde_json::from_value::<PodTemplate>(json!({"spec": {"containers": 3}}))
            .unwrap_err()
            .to_string();
        assert_eq!(error, "invalid type: integer `3`, expected a sequence");
    }
}
