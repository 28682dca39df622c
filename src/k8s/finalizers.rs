//! Removing one finalizer: from one object, or from every object of a kind (what an uninstall
//! needs once the controller that would have removed it is about to go).

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

/// Removes `finalizer` from `object` through `api`, guarded by the object's resourceVersion,
/// so a concurrent change of its finalizers fails the call (409) rather than being overwritten.
/// Nothing is written when the object does not carry it.
pub async fn remove<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let Some(remaining) = without(object.finalizers(), finalizer) else {
        return Ok(());
    };
    let patch = json!({
        "metadata": {
            "finalizers": remaining,
            "resourceVersion": object.resource_version(),
        }
    });
    api.patch(
        &object.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Removes `finalizer` from every object `all` lists, patching each through the Api
/// `scoped` gives for it (its namespace's, for a namespaced kind); returns how many it changed.
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
        if without(object.finalizers(), finalizer).is_none() {
            continue;
        }
        remove(&scoped(&object), &object, finalizer).await?;
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
