//! Topology: the ordered node labels (block, rack, host) of topology-aware scheduling.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// Desired state of a Topology.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Topology",
    plural = "topologies",
    shortname = "topo",
    derive = "PartialEq",
    derive = "Default",
    doc = "The levels of a datacenter topology, as node labels from the widest to the narrowest."
)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpec {
    /// Levels from the highest (widest) to the lowest (narrowest).
    #[schemars(
        length(min = 1, max = 16),
        extend(
            "x-kubernetes-list-type" = "atomic",
            "x-kubernetes-validations" = [
                {"rule": "self == oldSelf", "message": "field is immutable"},
                {"rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "message": "must be unique"},
                {"rule": "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'", "message": "the kubernetes.io/hostname label can only be used at the lowest level of topology"},
            ]
        )
    )]
    pub levels: Vec<TopologyLevel>,
}

/// One level of a topology.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologyLevel {
    /// Node label whose value names the domain of this level.
    #[schemars(length(min = 1, max = 316), pattern(schema::QUALIFIED_NAME))]
    pub node_label: String,
}
