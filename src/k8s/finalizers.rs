//! Removing one finalizer from every object of a kind: what an uninstall needs once the
//! controller that would have removed it is about to go.

use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

/// `finalizers` without `finalizer`, or `None` when it is not among them.
pub fn without(finalizers: &[String], finalizer: &str) -> Option<Vec<String>> {
    finalizers.iter().any(|f| f == finalizer).then(|| {
        finalizers
            .iter()
            .filter(|f| *f != finalizer)
            .cloned()
            .collect()
    })
}

/// Removes `finalizer` from every object `all` lists, patching each through the Api
/// `scoped` gives for it (its namespace's, for a namespaced kind); returns how many it changed.
/// Each patch is guarded by the object's resourceVersion, so a concurrent change of its
/// finalizers fails the call rather than being overwritten.
pub async fn release<K>(
    all: &Api<K>,
    scoped: impl Fn(&K) -> Api<K>,
    finalizer: &str,
) -> Result<usize, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut released = 0;
    for object in all.list(&ListParams::default()).await? {
        let Some(remaining) = without(object.finalizers(), finalizer) else {
            continue;
        };
        let patch = json!({
            "metadata": {
                "finalizers": remaining,
                "resourceVersion": object.resource_version(),
            }
        });
        scoped(&object)
            .patch(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        released += 1;
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_finalizer_is_removed() {
        let finalizers = [
            "a/keep".to_owned(),
            "kueue.x-k8s.io/resource-in-use".to_owned(),
        ];
        assert_eq!(
            without(&finalizers, "kueue.x-k8s.io/resource-in-use"),
            Some(vec!["a/keep".to_owned()])
        );
        assert_eq!(without(&finalizers, "other"), None);
        assert_eq!(without(&[], "other"), None);
    }
}
