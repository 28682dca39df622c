//! ResourceFlavor: a kind of node (hardware, pricing, zone) that quotas are given for.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// Desired state of a ResourceFlavor.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ResourceFlavor",
    plural = "resourceflavors",
    shortname = "flavor",
    shortname = "flavors",
    shortname = "rf",
    derive = "PartialEq",
    derive = "Default",
    doc = "A kind of node that quotas are given for, selected by node labels."
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.topologyName) || self.nodeLabels.size() >= 1", "message": "at least one nodeLabel is required when topology is set"},
    {"rule": "!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels) && (!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))", "message": "nodeLabels are immutable when topologyName is set"},
    {"rule": "!has(oldSelf.topologyName) || (has(self.tolerations) == has(oldSelf.tolerations) && (!has(self.tolerations) || self.tolerations == oldSelf.tolerations))", "message": "tolerations are immutable when topologyName is set"},
    {"rule": "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)", "message": "topologyName is immutable when topologyName is set"},
]))]
pub struct ResourceFlavorSpec {
    /// Labels of the nodes of this flavor; added to the node selector of admitted pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 8, "x-kubernetes-map-type" = "atomic"))]
    pub node_labels: BTreeMap<String, String>,

    /// Taints of the nodes of this flavor; a workload must tolerate them to get the flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend(
            "x-kubernetes-list-type" = "atomic",
            "x-kubernetes-validations" = [{
                "rule": "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
                "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
            }]
        )
    )]
    pub node_taints: Vec<Taint>,

    /// Tolerations added to admitted pods that get this flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "atomic", "x-kubernetes-validations" = schema::toleration_rules())
    )]
    pub tolerations: Vec<Toleration>,

    /// Topology of the nodes of this flavor, for topology-aware scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub topology_name: Option<String>,
}
