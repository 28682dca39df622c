//! MultiKueueCluster and MultiKueueConfig v1beta1: the cluster's `kubeConfig` and
//! `clusterProfileRef` sit directly in the spec (v1beta2 groups them under `clusterSource`), and
//! MultiKueueConfig has no `quotaManagement`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;
use crate::api::v1beta2::{self, ClusterProfileReference, LocationType};

/// Desired state of a MultiKueueCluster (v1beta1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "MultiKueueCluster",
    plural = "multikueueclusters",
    shortname = "mkc",
    status = "MultiKueueClusterStatus",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
    doc = "A worker cluster MultiKueue may dispatch workloads to."
)]
#[kube(printcolumn(
    name = "Connected",
    type_ = "string",
    description = "Whether the worker cluster is reachable",
    json_path = ".status.conditions[?(@.type=='Active')].status"
))]
#[kube(printcolumn(
    name = "Age",
    type_ = "date",
    description = "Time since the object was created",
    json_path = ".metadata.creationTimestamp"
))]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterSpec {
    /// Kubeconfig of the worker cluster; its location is empty when a ClusterProfile is used.
    pub kube_config: KubeConfig,

    /// A ClusterProfile of the cluster inventory API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<ClusterProfileReference>,
}

/// Location of a kubeconfig (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// Name of the Secret (in Kueue's namespace) or path of the file.
    pub location: String,

    /// Whether `location` names a Secret or a file path.
    #[schemars(extend("default" = "Secret"))]
    pub location_type: LocationType,
}

/// Observed state of a MultiKueueCluster (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterStatus {
    /// Latest observations; the `Active` condition tells whether the cluster is connected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = schema::condition_validations, extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// Desired state of a MultiKueueConfig (v1beta1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "MultiKueueConfig",
    plural = "multikueueconfigs",
    shortname = "mkconf",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    doc = "The set of worker clusters a MultiKueue admission check dispatches to."
)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueConfigSpec {
    /// Names of the MultiKueueClusters to dispatch to.
    #[schemars(length(min = 1, max = 20), extend("x-kubernetes-list-type" = "set"))]
    pub clusters: Vec<String>,
}

// === Conversion ===

impl From<MultiKueueCluster> for v1beta2::MultiKueueCluster {
    /// An empty kubeconfig location means the kubeconfig is not set.
    fn from(cluster: MultiKueueCluster) -> Self {
        let kube_config = cluster.spec.kube_config;
        Self {
            metadata: cluster.metadata,
            spec: v1beta2::MultiKueueClusterSpec {
                cluster_source: v1beta2::ClusterSource {
                    kube_config: (!kube_config.location.is_empty()).then_some(
                        v1beta2::KubeConfig {
                            location: kube_config.location,
                            location_type: kube_config.location_type,
                        },
                    ),
                    cluster_profile_ref: cluster.spec.cluster_profile_ref,
                },
            },
            status: cluster
                .status
                .map(|status| v1beta2::MultiKueueClusterStatus {
                    conditions: status.conditions,
                }),
        }
    }
}

impl From<v1beta2::MultiKueueCluster> for MultiKueueCluster {
    fn from(cluster: v1beta2::MultiKueueCluster) -> Self {
        let source = cluster.spec.cluster_source;
        Self {
            metadata: cluster.metadata,
            spec: MultiKueueClusterSpec {
                kube_config: source
                    .kube_config
                    .map(|kc| KubeConfig {
                        location: kc.location,
                        location_type: kc.location_type,
                    })
                    .unwrap_or_default(),
                cluster_profile_ref: source.cluster_profile_ref,
            },
            status: cluster.status.map(|status| MultiKueueClusterStatus {
                conditions: status.conditions,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::testing::api_versions::{v1beta1_multikueue_cluster, v1beta2_multikueue_cluster};

    #[test]
    fn converts_to_the_equivalent_v1beta2_object() {
        assert_eq!(
            v1beta2::MultiKueueCluster::from(v1beta1_multikueue_cluster()),
            v1beta2_multikueue_cluster()
        );
        assert_eq!(
            MultiKueueCluster::from(v1beta2_multikueue_cluster()),
            v1beta1_multikueue_cluster()
        );
    }

    #[test]
    fn round_trips_through_the_other_version() {
        let v1 = v1beta1_multikueue_cluster();
        assert_eq!(
            MultiKueueCluster::from(v1beta2::MultiKueueCluster::from(v1.clone())),
            v1
        );
        let v2 = v1beta2_multikueue_cluster();
        assert_eq!(
            v1beta2::MultiKueueCluster::from(MultiKueueCluster::from(v2.clone())),
            v2
        );
    }

    #[test]
    fn cluster_profile_source_round_trips_with_an_empty_kubeconfig() {
        let mut v2 = v1beta2_multikueue_cluster();
        v2.spec.cluster_source = v1beta2::ClusterSource {
            kube_config: None,
            cluster_profile_ref: Some(ClusterProfileReference {
                name: "worker-eu".to_owned(),
            }),
        };
        let v1 = MultiKueueCluster::from(v2.clone());
        assert_eq!(
            v1.spec,
            MultiKueueClusterSpec {
                kube_config: KubeConfig {
                    location: String::new(),
                    location_type: LocationType::Secret,
                },
                cluster_profile_ref: Some(ClusterProfileReference {
                    name: "worker-eu".to_owned(),
                }),
            }
        );
        assert_eq!(v1beta2::MultiKueueCluster::from(v1), v2);
    }
}
