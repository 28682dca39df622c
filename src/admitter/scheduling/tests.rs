use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::admitter::scheduling::cluster_state::{
    ConversionCache, Holder, convert, convert_cached,
};
use crate::admitter::scheduling::dispatch::Backoff;
use crate::admitter::scheduling::overlay::reflects;
use crate::api::constants::PRIORITY_BOOST_ANNOTATION;
use crate::quota::{RequeueScope, SchedulerConfig};
use crate::testing::objects::{bound_pod, cluster_queue, flavor, one_queue_cluster, ts, workload};

fn state(workloads: Vec<api::Workload>) -> ClusterState {
    one_queue_cluster("2", workloads)
}

fn pending(name: &str, created: i64) -> api::Workload {
    workload("ns", name)
        .queue("lq")
        .created(created)
        .pod_set("main", 1, json!({"cpu": "1"}))
        .build()
}

/// One pass of the shipped planner, without the API: returns the admitted keys, each recorded
/// in the overlay as the loop records an admission it dispatches.
fn pass(state: &ClusterState, planner: &mut Planner, now: i64) -> Vec<String> {
    let plan = planner.plan(state, ts(now));
    let mut admitted = Vec::new();
    for decision in plan.decisions {
        if let Decision::Admit {
            workload,
            admission,
        } = decision
        {
            let uid = format!("uid-{}", workload.trim_start_matches("ns/"));
            planner.overlay.admit(&workload, &uid, admission, ts(now));
            admitted.push(workload);
        }
    }
    admitted
}

#[test]
fn admissions_the_store_has_not_shown_yet_still_use_quota() {
    let lagging = state(vec![pending("a", 1), pending("b", 2), pending("c", 3)]);
    let mut planner = Planner::new(ConversionOptions::default(), SchedulerConfig::default());
    assert_eq!(pass(&lagging, &mut planner, 10), vec!["ns/a", "ns/b"]);
    // The store still shows all three pending: the next cycles admit nothing more.
    assert_eq!(pass(&lagging, &mut planner, 11), Vec::<String>::new());
    planner.queues.requeue_inadmissible(
        &convert(&lagging, &ConversionOptions::default())
            .snapshot(SchedulerConfig::default(), ts(12)),
        RequeueScope::All,
    );
    assert_eq!(pass(&lagging, &mut planner, 12), Vec::<String>::new());

    // The store catches up: the overlay empties and usage comes from the store.
    let admitted = |name: &str, created: i64| {
        workload("ns", name)
            .queue("lq")
            .created(created)
            .pod_set("main", 1, json!({"cpu": "1"}))
            .reserved(
                "cq",
                json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]),
            )
            .build()
    };
    let caught_up = state(vec![admitted("a", 1), admitted("b", 2), pending("c", 3)]);
    assert_eq!(pass(&caught_up, &mut planner, 13), Vec::<String>::new());
    assert!(planner.overlay.is_empty());
}

#[test]
fn admissions_that_finish_before_the_store_shows_them_still_release_their_quota() {
    let mut planner = Planner::new(ConversionOptions::default(), SchedulerConfig::default());
    let all = state(vec![pending("a", 1), pending("b", 2), pending("c", 3)]);
    assert_eq!(pass(&all, &mut planner, 10), vec!["ns/a", "ns/b"]);
    // "a" and "b" ran and finished before the watch showed them admitted: the store (which
    // keeps no finished Workloads) shows only "c", which waited for their quota.
    let rest = state(vec![pending("c", 3)]);
    assert_eq!(pass(&rest, &mut planner, 11), vec!["ns/c"]);
}

#[test]
fn overlay_moves_admitted_workloads_and_marks_evicted_ones() {
    let holder_object = workload("ns", "running")
        .queue("lq")
        .pod_set("main", 1, json!({"cpu": "1"}))
        .reserved(
            "cq",
            json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]),
        )
        .build();
    let state = state(vec![pending("new", 1), holder_object]);
    let mut converted = convert(&state, &ConversionOptions::default());
    converted.local_queue_drains = vec!["ns/running".to_owned()];
    let admission = model::Admission {
        cluster_queue: "cq".to_owned(),
        pod_set_assignments: Vec::new(),
    };
    let mut overlay = Overlay::default();
    overlay.admit("ns/new", "uid-new", admission.clone(), ts(50));
    overlay.evict("ns/running", "uid-running");
    overlay.apply(&mut converted);

    assert_eq!(converted.pending, vec![]);
    assert_eq!(converted.local_queue_drains, Vec::<String>::new());
    let holder = |key: &str| -> &Holder {
        converted
            .holders
            .iter()
            .find(|holder| holder.workload.key == key)
            .expect("holder")
    };
    assert!(holder("ns/running").workload.evicted);
    let new = holder("ns/new");
    assert_eq!(new.workload.admission, Some(admission));
    assert_eq!(new.workload.quota_reserved_at, Some(ts(50)));
    assert!(new.admitted);
    assert_eq!(new.local_queue, Some(LocalQueueRef::new("ns", "lq")));
}

#[test]
fn overlay_entries_end_when_the_store_shows_the_write() {
    let admission = model::Admission {
        cluster_queue: "cq".to_owned(),
        pod_set_assignments: Vec::new(),
    };
    let entry = |overlay: &mut Overlay, written: Option<&str>| {
        overlay.admit("ns/wl", "uid-wl", admission.clone(), ts(1));
        overlay.admission_written("ns/wl", written.map(str::to_owned));
    };
    let plain = workload("ns", "wl").resource_version("10");
    let cases = [
        ("not written, store unchanged", plain.build(), None, false),
        (
            "written, store older",
            workload("ns", "wl").resource_version("10").build(),
            Some("11"),
            false,
        ),
        (
            "written, store caught up",
            workload("ns", "wl").resource_version("11").build(),
            Some("11"),
            true,
        ),
        (
            "written, store newer",
            workload("ns", "wl").resource_version("12").build(),
            Some("11"),
            true,
        ),
        (
            "store shows an admission",
            workload("ns", "wl").reserved("cq", json!([])).build(),
            None,
            true,
        ),
        (
            "finished",
            workload("ns", "wl")
                .condition("Finished", "True", "Succeeded", "", 1)
                .build(),
            None,
            true,
        ),
        ("recreated", workload("ns", "other").build(), None, true),
    ];
    for (name, object, written, gone) in cases {
        let mut overlay = Overlay::default();
        entry(&mut overlay, written);
        let mut objects = foldhash::HashMap::default();
        let mut object = object;
        // "recreated": same key, another UID.
        object.metadata.name = Some("wl".to_owned());
        objects.insert(Arc::from("ns/wl"), Arc::new(object));
        overlay.reconcile(&objects);
        assert_eq!(overlay.is_empty(), gone, "{name}");
    }

    let mut overlay = Overlay::default();
    entry(&mut overlay, None);
    overlay.reconcile(&foldhash::HashMap::default());
    assert!(overlay.is_empty(), "deleted workloads leave the overlay");

    let mut overlay = Overlay::default();
    overlay.evict("ns/wl", "uid-wl");
    let holding = workload("ns", "wl").reserved("cq", json!([])).build();
    let mut objects: foldhash::HashMap<_, _> = [(Arc::from("ns/wl"), Arc::new(holding))]
        .into_iter()
        .collect();
    overlay.reconcile(&objects);
    assert!(!overlay.is_empty(), "eviction not shown yet");
    objects.insert(
        Arc::from("ns/wl"),
        Arc::new(
            workload("ns", "wl")
                .reserved("cq", json!([]))
                .condition("Evicted", "True", "Preempted", "", 1)
                .build(),
        ),
    );
    overlay.reconcile(&objects);
    assert!(overlay.is_empty(), "eviction shown");
}

/// Holds `cpu` of flavor `default` in ClusterQueue `cq`.
fn admitted(name: &str, cpu: &str) -> api::Workload {
    workload("ns", name)
        .queue("lq")
        .pod_set("main", 1, json!({"cpu": cpu}))
        .reserved(
            "cq",
            json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}, "count": 1}]),
        )
        .build()
}

fn observed(converted: &Converted) -> Observed {
    Observed::of(converted)
}

#[test]
fn changes_that_may_free_capacity_requeue_parked_workloads() {
    let base = state(vec![admitted("a", "1"), admitted("b", "1")]);
    let before = observed(&convert(&base, &ConversionOptions::default()));
    let with = |change: &dyn Fn(&mut ClusterState)| {
        let mut changed = base.clone();
        change(&mut changed);
        observed(&convert(&changed, &ConversionOptions::default()))
    };
    let cq = |name: &str| Requeue::ClusterQueue(name.to_owned());

    assert_eq!(before.requeues(&before), BTreeSet::new(), "nothing changed");
    assert_eq!(
        before.requeues(&with(&|s| s.workloads.truncate(1))),
        BTreeSet::from([cq("cq")]),
        "a holder left"
    );
    assert_eq!(
        before.requeues(&with(&|s| s.workloads[1] = Arc::new(admitted("b", "500m")))),
        BTreeSet::from([cq("cq")]),
        "a holder uses less"
    );
    assert_eq!(
        before.requeues(&with(&|s| s.workloads.push(Arc::new(admitted("c", "1"))))),
        BTreeSet::new(),
        "more usage frees nothing"
    );
    assert_eq!(
        before.requeues(&with(&|s| s
            .resource_flavors
            .push(Arc::new(flavor("spot"))))),
        BTreeSet::from([Requeue::All])
    );
    assert_eq!(
        before.requeues(&with(&|s| {
            s.cluster_queues = vec![Arc::new(
                cluster_queue("cq")
                    .cohort("team")
                    .group(&["cpu"], &[("default", &[("cpu", "3")])])
                    .build(),
            )];
        })),
        BTreeSet::from([cq("cq")])
    );
    let cohort: api::Cohort =
        serde_json::from_value(json!({"metadata": {"name": "team"}, "spec": {}})).unwrap();
    assert_eq!(
        before.requeues(&with(&|s| s.cohorts.push(Arc::new(cohort.clone())))),
        BTreeSet::from([Requeue::Cohort("team".to_owned())])
    );
    assert_eq!(
        before.requeues(&with(&|s| {
            s.cluster_queues
                .push(Arc::new(cluster_queue("new").build()));
        })),
        BTreeSet::from([cq("new")])
    );
}

#[test]
fn quota_held_is_compared_by_usage_unless_the_conversion_is_the_same() {
    let options = ConversionOptions::default();
    let one_cpu = state(vec![admitted("a", "1")]);
    let less = state(vec![admitted("a", "500m")]);
    let none = state(Vec::new());
    let cq = BTreeSet::from([Requeue::ClusterQueue("cq".to_owned())]);

    let mut cache = ConversionCache::new();
    let mut observe = |state: &ClusterState| observed(&convert_cached(state, &options, &mut cache));
    let first = observe(&one_cpu);
    assert_eq!(
        first.requeues(&observe(&one_cpu)),
        BTreeSet::new(),
        "the same object"
    );
    assert_eq!(
        first.requeues(&observe(&less)),
        cq,
        "replaced by one using less"
    );

    // What the cycle admitted, before any pass shows it.
    let shown = observed(&convert(&one_cpu, &options));
    let admission = convert(&one_cpu, &options).holders[0]
        .workload
        .admission
        .clone()
        .expect("held");
    let mut noted = observed(&convert(&none, &options));
    noted.note_admissions(&[Decision::Admit {
        workload: "ns/a".to_owned(),
        admission,
    }]);
    assert_eq!(noted.requeues(&shown), BTreeSet::new(), "shown as admitted");
    assert_eq!(noted.requeues(&observed(&convert(&less, &options))), cq);
    assert_eq!(
        noted.requeues(&observed(&convert(&none, &options))),
        cq,
        "finished unseen"
    );
}

#[test]
fn a_change_in_topology_capacity_requeues_parked_workloads() {
    let node = || -> Arc<k8s_openapi::api::core::v1::Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
                "status": {
                    "allocatable": {"cpu": "4"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }))
            .unwrap(),
        )
    };
    let mut state = state(Vec::new());
    state.resource_flavors = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "tas"},
            "spec": {"topologyName": "hosts"},
        }))
        .unwrap(),
    )];
    state.topologies = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "hosts"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        }))
        .unwrap(),
    )];
    state.nodes = vec![node()];
    let options = ConversionOptions {
        topology_aware: true,
        ..ConversionOptions::default()
    };
    let mut cache = ConversionCache::new();
    let mut observe = |state: &ClusterState| observed(&convert_cached(state, &options, &mut cache));
    let first = observe(&state);

    state.nodes = vec![node()];
    let same_node_again = observe(&state);
    assert_eq!(
        first.requeues(&same_node_again),
        BTreeSet::new(),
        "a node written again with nothing placement reads changed (a heartbeat)"
    );

    state.node_usage = Arc::new(crate::quota::node_usage::NodeUsage::of_pods(vec![
        bound_pod("daemon", "n1", "1"),
    ]));
    let taken = observe(&state);
    state.node_usage = Arc::new(crate::quota::node_usage::NodeUsage::of_pods(Vec::new()));
    let freed = observe(&state);
    assert_eq!(
        taken.requeues(&freed),
        BTreeSet::from([Requeue::All]),
        "the pod outside Kueue is gone"
    );
}

#[test]
fn refused_admissions_back_off_exponentially() {
    let mut backoff = Backoff::default();
    backoff.failed("ns/wl", ts(100));
    assert!(backoff.is_waiting("ns/wl", ts(100)));
    assert!(!backoff.is_waiting("ns/wl", ts(101)));
    assert_eq!(backoff.next_retry(ts(100)), Some(ts(101)));
    backoff.failed("ns/wl", ts(101));
    assert_eq!(backoff.next_retry(ts(101)), Some(ts(103)));
    for _ in 0..10 {
        backoff.failed("ns/wl", ts(200));
    }
    assert_eq!(
        backoff.next_retry(ts(200)),
        Some(ts(260)),
        "capped at a minute"
    );
    backoff.succeeded("ns/wl");
    assert!(!backoff.is_waiting("ns/wl", ts(200)));
    assert_eq!(backoff.next_retry(ts(200)), None);
}

#[test]
fn resource_versions_compare_numerically() {
    let at = |version: &str| workload("ns", "wl").resource_version(version).build();
    assert!(reflects(&at("100"), Some("99")));
    assert!(reflects(&at("100"), Some("100")));
    assert!(!reflects(&at("99"), Some("100")));
    assert!(!reflects(&at("99"), None));
    assert!(reflects(&at("opaque"), Some("opaque")));
    assert!(!reflects(&at("opaque"), Some("other")));
}

#[test]
fn a_priority_boost_orders_the_queue_and_preempts_only_under_its_gate() {
    let boosted = |name: &str, created: i64| {
        workload("ns", name)
            .queue("lq")
            .created(created)
            .annotation(PRIORITY_BOOST_ANNOTATION, "5")
            .pod_set("main", 1, json!({"cpu": "1"}))
            .build()
    };
    let gated = ConversionOptions {
        priority_boost: true,
        ..ConversionOptions::default()
    };
    let planner =
        |options: &ConversionOptions| Planner::new(options.clone(), SchedulerConfig::default());

    let waiting = state(vec![pending("a", 1), pending("b", 2), boosted("c", 3)]);
    assert_eq!(
        pass(&waiting, &mut planner(&gated), 10),
        vec!["ns/c", "ns/a"]
    );
    assert_eq!(
        pass(&waiting, &mut planner(&ConversionOptions::default()), 10),
        vec!["ns/a", "ns/b"],
        "the annotation ignored without the gate"
    );

    let mut full = state(vec![admitted("a", "2"), boosted("b", 2)]);
    full.cluster_queues = vec![Arc::new(
        cluster_queue("cq")
            .group(&["cpu"], &[("default", &[("cpu", "2")])])
            .spec("preemption", json!({"withinClusterQueue": "LowerPriority"}))
            .build(),
    )];
    let preemptions = |options: &ConversionOptions| -> Vec<(String, Vec<String>)> {
        planner(options)
            .plan(&full, ts(10))
            .decisions
            .into_iter()
            .filter_map(|decision| match decision {
                Decision::Preempt {
                    workload, victims, ..
                } => Some((
                    workload,
                    victims.into_iter().map(|victim| victim.workload).collect(),
                )),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        preemptions(&gated),
        vec![("ns/b".to_owned(), vec!["ns/a".to_owned()])]
    );
    assert_eq!(
        preemptions(&ConversionOptions::default()),
        Vec::new(),
        "equal priorities without the gate"
    );
}

#[test]
fn a_holder_at_another_priority_requeues_parked_workloads() {
    let gated = ConversionOptions {
        priority_boost: true,
        ..ConversionOptions::default()
    };
    let boosted_holder = |boost: &str| {
        let mut holder = admitted("a", "1");
        holder
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(PRIORITY_BOOST_ANNOTATION.to_owned(), boost.to_owned());
        holder.metadata.resource_version = Some(format!("boost-{boost}"));
        holder
    };
    let observe = |holder: api::Workload, options: &ConversionOptions| {
        observed(&convert(&state(vec![holder]), options))
    };
    let before = observe(boosted_holder("5"), &gated);
    assert_eq!(
        before.requeues(&observe(boosted_holder("-5"), &gated)),
        BTreeSet::from([Requeue::ClusterQueue("cq".to_owned())]),
        "parked workloads of its priority may preempt it now"
    );
    let before = observe(boosted_holder("5"), &ConversionOptions::default());
    assert_eq!(
        before.requeues(&observe(
            boosted_holder("-5"),
            &ConversionOptions::default()
        )),
        BTreeSet::new(),
        "the annotation ignored without the gate"
    );
}
