//! MultiKueueCluster and MultiKueueConfig: worker clusters that workloads are dispatched to.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// Desired state of a MultiKueueCluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueCluster",
    plural = "multikueueclusters",
    shortname = "mkc",
    status = "MultiKueueClusterStatus",
    derive = "PartialEq",
    derive = "Default",
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
    /// How to connect to the worker cluster.
    pub cluster_source: ClusterSource,
}

/// Where the credentials of a worker cluster come from: exactly one field is set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
    "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
}]))]
pub struct ClusterSource {
    /// A kubeconfig stored in a Secret or a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,

    /// A ClusterProfile of the cluster inventory API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<ClusterProfileReference>,
}

/// Location of a kubeconfig.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// Name of the Secret (in Kueue's namespace) or path of the file.
    #[schemars(length(min = 1, max = 256))]
    pub location: String,

    /// Whether `location` names a Secret or a file path.
    #[serde(default)]
    pub location_type: LocationType,
}

/// Kind of kubeconfig location.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum LocationType {
    /// A Secret whose `kubeconfig` key holds the kubeconfig.
    #[default]
    Secret,
    /// A file path in the controller's filesystem.
    Path,
}

/// Reference to a ClusterProfile.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileReference {
    /// Name of the ClusterProfile.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

/// Observed state of a MultiKueueCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterStatus {
    /// Latest observations; the `Active` condition tells whether the cluster is connected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
        length(max = 16),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Vec<Condition>,
}

/// Desired state of a MultiKueueConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueConfig",
    plural = "multikueueconfigs",
    shortname = "mkconf",
    derive = "PartialEq",
    derive = "Default",
    doc = "The set of worker clusters a MultiKueue admission check dispatches to."
)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueConfigSpec {
    /// Names of the MultiKueueClusters to dispatch to.
    #[schemars(
        length(min = 1, max = 20),
        inner(length(max = 256)),
        extend(
            "x-kubernetes-list-type" = "atomic",
            "x-kubernetes-validations" = [{"rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "message": "must be unique"}]
        )
    )]
    pub clusters: Vec<String>,

    /// Whether the quota of the manager's ClusterQueues is set by hand or from the workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_management: Option<QuotaManagementMode>,
}

/// How the quota of a MultiKueue manager ClusterQueue is maintained.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum QuotaManagementMode {
    /// Quota is set by hand.
    Manual,
    /// Quota follows the worker clusters.
    Automated,
}
