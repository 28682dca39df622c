//! Topology v1beta1: same fields as v1beta2, but the levels are fully immutable.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::v1beta2::TopologyLevel;

/// Desired state of a Topology (v1beta1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "Topology",
    plural = "topologies",
    shortname = "topo",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
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
