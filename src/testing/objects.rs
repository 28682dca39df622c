//! Builders of Kueue API objects (and the namespaces and LimitRanges around them), as typed
//! objects built from JSON the way a user writes them.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{LimitRange, Namespace, Pod};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::v1beta2 as api;

/// A label map from pairs.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

/// A timestamp `seconds` after the epoch.
pub fn ts(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("valid test timestamp")
}

/// RFC 3339 text of [`ts`].
pub fn rfc3339(seconds: i64) -> String {
    ts(seconds).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn build<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture matches the API type")
}

/// Sets `value[path...] = new`, creating objects on the way.
fn set(value: &mut Value, path: &[&str], new: Value) {
    let mut target = value;
    for key in path {
        if !target.get(*key).is_some_and(Value::is_object) {
            target[*key] = json!({});
        }
        target = &mut target[*key];
    }
    *target = new;
}

/// A condition as the API shows it.
pub fn condition(type_: &str, status: &str, reason: &str, message: &str, at: i64) -> Value {
    json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": rfc3339(at),
    })
}

pub fn flavor(name: &str) -> api::ResourceFlavor {
    build(json!({"metadata": {"name": name}, "spec": {}}))
}

pub fn flavor_with(name: &str, spec: Value) -> api::ResourceFlavor {
    build(json!({"metadata": {"name": name}, "spec": spec}))
}

pub fn namespace(name: &str, labels: Value) -> Namespace {
    build(json!({"metadata": {"name": name, "labels": labels}}))
}

/// A pod outside Kueue (its name is its UID) bound to `node`, one container asking for `cpu`.
pub fn bound_pod(name: &str, node: &str, cpu: &str) -> Pod {
    build(json!({
        "metadata": {"name": name, "namespace": "kube-system", "uid": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
    }))
}

pub fn limit_range(namespace: &str, limits: Value) -> LimitRange {
    build(
        json!({"metadata": {"name": "limits", "namespace": namespace}, "spec": {"limits": limits}}),
    )
}

pub fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> api::LocalQueue {
    build(json!({
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"clusterQueue": cluster_queue},
    }))
}

pub fn stopped_local_queue(
    namespace: &str,
    name: &str,
    cluster_queue: &str,
    policy: &str,
) -> api::LocalQueue {
    build(json!({
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"clusterQueue": cluster_queue, "stopPolicy": policy},
    }))
}

/// A ClusterQueue selecting every namespace.
pub struct ClusterQueueBuilder(Value);

pub fn cluster_queue(name: &str) -> ClusterQueueBuilder {
    ClusterQueueBuilder(json!({
        "metadata": {"name": name, "generation": 1},
        "spec": {"namespaceSelector": {}, "resourceGroups": []},
    }))
}

impl ClusterQueueBuilder {
    /// Adds a resource group: `covered`, then per flavor its quotas `(resource, nominal)`.
    pub fn group(mut self, covered: &[&str], flavors: &[(&str, &[(&str, &str)])]) -> Self {
        let flavors: Vec<Value> = flavors
            .iter()
            .map(|(name, quotas)| {
                json!({
                    "name": name,
                    "resources": quotas.iter().map(|(resource, nominal)| json!({
                        "name": resource, "nominalQuota": nominal,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        self.0["spec"]["resourceGroups"]
            .as_array_mut()
            .expect("groups")
            .push(json!({"coveredResources": covered, "flavors": flavors}));
        self
    }

    /// Sets a field of the spec.
    pub fn spec(mut self, field: &str, value: Value) -> Self {
        set(&mut self.0, &["spec", field], value);
        self
    }

    pub fn cohort(self, cohort: &str) -> Self {
        self.spec("cohortName", json!(cohort))
    }

    pub fn status(mut self, status: Value) -> Self {
        self.0["status"] = status;
        self
    }

    pub fn deleting(mut self) -> Self {
        set(
            &mut self.0,
            &["metadata", "deletionTimestamp"],
            json!(rfc3339(1)),
        );
        set(&mut self.0, &["metadata", "finalizers"], json!(["x"]));
        self
    }

    pub fn build(self) -> api::ClusterQueue {
        build(self.0)
    }
}

/// A Workload in a namespace.
pub struct WorkloadBuilder(Value);

pub fn workload(namespace: &str, name: &str) -> WorkloadBuilder {
    WorkloadBuilder(json!({
        "metadata": {
            "name": name, "namespace": namespace, "uid": format!("uid-{name}"),
            "generation": 1, "resourceVersion": "10",
            "creationTimestamp": rfc3339(100),
        },
        "spec": {"podSets": []},
    }))
}

impl WorkloadBuilder {
    pub fn queue(mut self, queue: &str) -> Self {
        self.0["spec"]["queueName"] = json!(queue);
        self
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.0["spec"]["priority"] = json!(priority);
        self
    }

    pub fn inactive(mut self) -> Self {
        self.0["spec"]["active"] = json!(false);
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        set(&mut self.0, &["metadata", "labels", key], json!(value));
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        set(&mut self.0, &["metadata", "annotations", key], json!(value));
        self
    }

    /// Sets a field of the spec.
    pub fn spec_field(mut self, field: &str, value: Value) -> Self {
        self.0["spec"][field] = value;
        self
    }

    pub fn created(mut self, at: i64) -> Self {
        self.0["metadata"]["creationTimestamp"] = json!(rfc3339(at));
        self
    }

    pub fn resource_version(mut self, version: &str) -> Self {
        self.0["metadata"]["resourceVersion"] = json!(version);
        self
    }

    /// Adds a PodSet of `count` pods with one container requesting `requests`.
    pub fn pod_set(self, name: &str, count: i32, requests: Value) -> Self {
        self.pod_set_spec(
            name,
            count,
            json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}]}),
        )
    }

    /// Adds a PodSet with this pod spec.
    pub fn pod_set_spec(mut self, name: &str, count: i32, spec: Value) -> Self {
        self.0["spec"]["podSets"]
            .as_array_mut()
            .expect("pod sets")
            .push(json!({"name": name, "count": count, "template": {"spec": spec}}));
        self
    }

    /// Sets a field of the last PodSet.
    pub fn pod_set_field(mut self, field: &str, value: Value) -> Self {
        let pod_sets = self.0["spec"]["podSets"].as_array_mut().expect("pod sets");
        let last = pod_sets.last_mut().expect("a pod set");
        last[field] = value;
        self
    }

    /// Sets `status.admission` with one assignment per `(podset, flavor of every resource, usage, count)`.
    pub fn admission(mut self, cluster_queue: &str, assignments: Value) -> Self {
        set(
            &mut self.0,
            &["status", "admission"],
            json!({"clusterQueue": cluster_queue, "podSetAssignments": assignments}),
        );
        self
    }

    /// Holds quota: [`Self::admission`] and `QuotaReserved=True` (at time 0).
    pub fn reserved(self, cluster_queue: &str, assignments: Value) -> Self {
        let message = format!("Quota reserved in ClusterQueue {cluster_queue}");
        self.admission(cluster_queue, assignments).condition(
            "QuotaReserved",
            "True",
            "QuotaReserved",
            &message,
            0,
        )
    }

    /// Appends a condition.
    pub fn condition(
        mut self,
        type_: &str,
        status: &str,
        reason: &str,
        message: &str,
        at: i64,
    ) -> Self {
        if !self.0["status"]["conditions"].is_array() {
            set(&mut self.0, &["status", "conditions"], json!([]));
        }
        self.0["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(condition(type_, status, reason, message, at));
        self
    }

    /// Sets a field of the status.
    pub fn status(mut self, field: &str, value: Value) -> Self {
        set(&mut self.0, &["status", field], value);
        self
    }

    pub fn build(self) -> api::Workload {
        build(self.0)
    }
}

/// The cluster of one ClusterQueue `cq` with `cpu` of flavor `default`, fed by LocalQueue
/// `ns/lq`, holding `workloads`.
pub fn one_queue_cluster(
    cpu: &str,
    workloads: Vec<api::Workload>,
) -> crate::admitter::scheduling::cluster_state::ClusterState {
    use std::sync::Arc;
    crate::admitter::scheduling::cluster_state::ClusterState {
        resource_flavors: vec![Arc::new(flavor("default"))],
        namespaces: vec![Arc::new(namespace("ns", json!({})))],
        local_queues: vec![Arc::new(local_queue("ns", "lq", "cq"))],
        cluster_queues: vec![Arc::new(
            cluster_queue("cq")
                .group(&["cpu"], &[("default", &[("cpu", cpu)])])
                .build(),
        )],
        workloads: workloads.into_iter().map(Arc::new).collect(),
        ..Default::default()
    }
}
