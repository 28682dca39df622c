//! What the pods that Kueue did not place by topology take on each node: DaemonSets, static
//! pods, jobs outside Kueue or in flavors without a Topology. Topology-aware placement takes
//! it off the nodes' allocatable, as Kueue's non-TAS usage controller does.
//!
//! The stores' watch (and `kuota explain`'s one list) sees only bound pods that are not finished and carry no `kueue.x-k8s.io/tas`
//! label, the same selectors kube-scheduler uses for its assigned pods. Each pod is kept as
//! its node and its requests, and the sums per node are updated pod by pod; a new
//! [`NodeUsage`] is published only when a sum changes, so status churn of running pods costs
//! the scheduler nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher;

use super::model::PODS_RESOURCE;
use crate::api::constants::TAS_LABEL;
use crate::jobs::requests::{Requests, pod_requests};

/// The label selector of the pods counted: all but Kueue's topology-assigned ones.
pub fn label_selector() -> String {
    format!("{TAS_LABEL}!=true")
}

/// The field selector of the pods counted: bound to a node and not finished.
pub const FIELD_SELECTOR: &str = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";

/// Requests of the counted pods summed per node (canonical units, `pods` included).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeUsage {
    by_node: BTreeMap<String, Requests>,
    /// Whether the watch has listed every pod once.
    pub synced: bool,
}

impl NodeUsage {
    /// Nothing counted and nothing to wait for: the usage while no pods are watched
    /// (topology-aware scheduling off), and where a relist's sums start.
    pub fn none() -> Self {
        Self {
            by_node: BTreeMap::new(),
            synced: true,
        }
    }

    /// The usage of `pods` as the watch's initial list would count it.
    pub fn of_pods(pods: Vec<Pod>) -> Self {
        let mut tracker = NodeUsageTracker::default();
        tracker.apply(watcher::Event::Init);
        for pod in pods {
            tracker.apply(watcher::Event::InitApply(pod));
        }
        tracker.apply(watcher::Event::InitDone);
        Arc::unwrap_or_clone(tracker.usage)
    }

    /// What the counted pods on `node` request.
    pub fn on(&self, node: &str) -> Option<&Requests> {
        self.by_node.get(node)
    }

    fn add(&mut self, pod: &Counted) {
        add(
            self.by_node.entry(pod.node.clone()).or_default(),
            &pod.requests,
            1,
        );
    }

    fn subtract(&mut self, pod: &Counted) {
        if let Some(sums) = self.by_node.get_mut(&pod.node) {
            add(sums, &pod.requests, -1);
            sums.retain(|_, value| *value != 0);
            if sums.is_empty() {
                self.by_node.remove(&pod.node);
            }
        }
    }
}

/// A counted pod: where it runs and what it requests.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counted {
    node: String,
    requests: Requests,
}

/// Folds the pod watch into [`NodeUsage`].
#[derive(Debug, Default)]
pub struct NodeUsageTracker {
    pods: HashMap<String, Counted>,
    /// The pods of a relist in progress; they replace `pods` when it is done.
    relisting: Option<HashMap<String, Counted>>,
    /// The usage last published: changed in place when no reader holds it any more.
    usage: Arc<NodeUsage>,
}

impl NodeUsageTracker {
    /// Applies one watch event; returns the usage to publish if it changed.
    pub fn apply(&mut self, event: watcher::Event<Pod>) -> Option<Arc<NodeUsage>> {
        match event {
            watcher::Event::Init => {
                self.relisting = Some(HashMap::new());
                None
            }
            watcher::Event::InitApply(pod) => {
                if let (Some(relisting), Some((uid, counted))) =
                    (self.relisting.as_mut(), counted(&pod))
                {
                    relisting.insert(uid, counted);
                }
                None
            }
            watcher::Event::InitDone => {
                self.pods = self.relisting.take().unwrap_or_default();
                let mut relisted = NodeUsage::none();
                for pod in self.pods.values() {
                    relisted.add(pod);
                }
                if relisted == *self.usage {
                    return None;
                }
                self.usage = Arc::new(relisted);
                Some(Arc::clone(&self.usage))
            }
            watcher::Event::Apply(pod) => {
                let Some((uid, now)) = counted(&pod) else {
                    return self.remove(&pod);
                };
                let before = self.pods.insert(uid, now.clone());
                if before.as_ref() == Some(&now) {
                    return None;
                }
                let usage = Arc::make_mut(&mut self.usage);
                if let Some(before) = before {
                    usage.subtract(&before);
                }
                usage.add(&now);
                Some(Arc::clone(&self.usage))
            }
            watcher::Event::Delete(pod) => self.remove(&pod),
        }
    }

    fn remove(&mut self, pod: &Pod) -> Option<Arc<NodeUsage>> {
        let before = self.pods.remove(pod.metadata.uid.as_deref()?)?;
        Arc::make_mut(&mut self.usage).subtract(&before);
        Some(Arc::clone(&self.usage))
    }
}

/// The pod's UID and what it counts for, if it is bound and its requests can be read (a pod
/// whose quantities do not parse was refused by the API server; it is left out rather than
/// guessed).
fn counted(pod: &Pod) -> Option<(String, Counted)> {
    let uid = pod.metadata.uid.clone()?;
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone().filter(|node| !node.is_empty())?;
    let mut requests = pod_requests(spec, &[]).ok()?;
    requests.insert(PODS_RESOURCE.to_owned(), 1);
    Some((uid, Counted { node, requests }))
}

fn add(sums: &mut Requests, requests: &Requests, sign: i64) {
    for (resource, value) in requests {
        let sum = sums.entry(resource.clone()).or_insert(0);
        *sum = sum.saturating_add(sign.saturating_mul(*value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::objects::bound_pod as pod;

    fn on(usage: &NodeUsage, node: &str) -> Vec<(String, i64)> {
        usage
            .on(node)
            .map(|sums| sums.iter().map(|(r, v)| (r.clone(), *v)).collect())
            .unwrap_or_default()
    }

    fn listed(pods: Vec<Pod>) -> (NodeUsageTracker, Arc<NodeUsage>) {
        let mut tracker = NodeUsageTracker::default();
        assert_eq!(tracker.apply(watcher::Event::Init), None);
        for pod in pods {
            assert_eq!(tracker.apply(watcher::Event::InitApply(pod)), None);
        }
        let usage = tracker.apply(watcher::Event::InitDone).unwrap();
        (tracker, usage)
    }

    #[test]
    fn the_initial_list_sums_requests_and_pods_per_node() {
        let (_, usage) = listed(vec![
            pod("a", "n1", "500m"),
            pod("b", "n1", "1"),
            pod("c", "n2", "250m"),
        ]);
        assert!(usage.synced);
        assert_eq!(
            on(&usage, "n1"),
            [("cpu".to_owned(), 1500), ("pods".to_owned(), 2)]
        );
        assert_eq!(
            on(&usage, "n2"),
            [("cpu".to_owned(), 250), ("pods".to_owned(), 1)]
        );
    }

    #[test]
    fn an_empty_list_is_published_as_synced() {
        let (_, usage) = listed(Vec::new());
        assert_eq!(
            *usage,
            NodeUsage {
                by_node: BTreeMap::new(),
                synced: true
            }
        );
    }

    #[test]
    fn a_pod_that_arrives_moves_or_leaves_changes_its_nodes_sums() {
        let (mut tracker, _) = listed(vec![pod("a", "n1", "500m")]);

        let usage = tracker
            .apply(watcher::Event::Apply(pod("b", "n1", "1")))
            .unwrap();
        assert_eq!(
            on(&usage, "n1"),
            [("cpu".to_owned(), 1500), ("pods".to_owned(), 2)]
        );

        let usage = tracker
            .apply(watcher::Event::Apply(pod("b", "n2", "1")))
            .unwrap();
        assert_eq!(
            on(&usage, "n1"),
            [("cpu".to_owned(), 500), ("pods".to_owned(), 1)]
        );
        assert_eq!(
            on(&usage, "n2"),
            [("cpu".to_owned(), 1000), ("pods".to_owned(), 1)]
        );

        let usage = tracker
            .apply(watcher::Event::Delete(pod("a", "n1", "500m")))
            .unwrap();
        assert_eq!(usage.on("n1"), None);
    }

    #[test]
    fn an_update_that_changes_no_sum_publishes_nothing() {
        let (mut tracker, _) = listed(vec![pod("a", "n1", "500m")]);
        let mut relabelled = pod("a", "n1", "500m");
        relabelled.metadata.labels = Some([("phase".to_owned(), "x".to_owned())].into());
        assert_eq!(tracker.apply(watcher::Event::Apply(relabelled)), None);
        assert_eq!(
            tracker.apply(watcher::Event::Delete(pod("unknown", "n1", "1"))),
            None
        );
    }

    #[test]
    fn a_relist_replaces_what_was_counted() {
        let (mut tracker, _) = listed(vec![pod("a", "n1", "500m"), pod("b", "n2", "1")]);
        tracker.apply(watcher::Event::Init);
        tracker.apply(watcher::Event::InitApply(pod("b", "n2", "1")));
        let usage = tracker.apply(watcher::Event::InitDone).unwrap();
        assert_eq!(usage.on("n1"), None);
        assert_eq!(
            on(&usage, "n2"),
            [("cpu".to_owned(), 1000), ("pods".to_owned(), 1)]
        );
    }

    #[test]
    fn a_pod_not_yet_bound_is_not_counted() {
        let mut unbound = pod("a", "", "500m");
        let (mut tracker, _) = listed(Vec::new());
        assert_eq!(tracker.apply(watcher::Event::Apply(unbound.clone())), None);
        unbound.spec.as_mut().unwrap().node_name = None;
        assert_eq!(tracker.apply(watcher::Event::Apply(unbound)), None);
    }
}
