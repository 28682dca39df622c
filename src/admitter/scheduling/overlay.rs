//! The overlay of writes in flight: an admission being written counts as usage and an
//! eviction being written marks its victim, until the store shows the write or it fails, so the
//! next cycle never admits past quota however far the watch lags.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use kube::ResourceExt;

use crate::admitter::scheduling::cluster_state::Converted;
use crate::api::constants::condition;
use crate::api::v1beta2 as api;
use crate::quota::model::{self};

#[derive(Clone, Debug, PartialEq)]
pub(super) struct InFlightAdmission {
    uid: String,
    admission: model::Admission,
    decided_at: Timestamp,
    resource_version: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct InFlightEviction {
    uid: String,
    resource_version: Option<String>,
}

/// Admissions and evictions written (or being written) that the store may not show yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlay {
    admissions: BTreeMap<String, InFlightAdmission>,
    evictions: BTreeMap<String, InFlightEviction>,
}

/// Whether the store's object is at least as new as the one a write returned.
pub(super) fn reflects(workload: &api::Workload, written: Option<&str>) -> bool {
    let (Some(seen), Some(written)) = (workload.resource_version(), written) else {
        return false;
    };
    match (seen.parse::<u64>(), written.parse::<u64>()) {
        (Ok(seen), Ok(written)) => seen >= written,
        _ => seen == written,
    }
}

impl Overlay {
    /// Records an admission decided at `now` for the workload `key` with `uid`.
    pub fn admit(&mut self, key: &str, uid: &str, admission: model::Admission, now: Timestamp) {
        self.admissions.insert(
            key.to_owned(),
            InFlightAdmission {
                uid: uid.to_owned(),
                admission,
                decided_at: now,
                resource_version: None,
            },
        );
    }

    /// Records an eviction decided for the workload `key` with `uid`.
    pub fn evict(&mut self, key: &str, uid: &str) {
        self.evictions.insert(
            key.to_owned(),
            InFlightEviction {
                uid: uid.to_owned(),
                resource_version: None,
            },
        );
    }

    /// Notes that the admission of `key` was written as `resource_version`.
    pub fn admission_written(&mut self, key: &str, resource_version: Option<String>) {
        if let Some(entry) = self.admissions.get_mut(key) {
            entry.resource_version = resource_version;
        }
    }

    /// Notes that the eviction of `key` was written as `resource_version`.
    pub fn eviction_written(&mut self, key: &str, resource_version: Option<String>) {
        if let Some(entry) = self.evictions.get_mut(key) {
            entry.resource_version = resource_version;
        }
    }

    /// Forgets the admission of `key` (its write failed or does not apply).
    pub fn forget_admission(&mut self, key: &str) {
        self.admissions.remove(key);
    }

    /// Forgets the eviction of `key`.
    pub fn forget_eviction(&mut self, key: &str) {
        self.evictions.remove(key);
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.admissions.is_empty() && self.evictions.is_empty()
    }

    /// Drops the entries the store reflects (or that no longer matter: the workload is gone,
    /// was recreated or finished).
    pub fn reconcile(&mut self, workloads: &foldhash::HashMap<Arc<str>, Arc<api::Workload>>) {
        let current = |key: &str, uid: &str| {
            workloads
                .get(key)
                .filter(|workload| workload.uid().as_deref() == Some(uid))
                .filter(|workload| !workload.is_condition_true(condition::FINISHED))
        };
        self.admissions.retain(|key, entry| {
            current(key, &entry.uid).is_some_and(|workload| {
                let admitted = workload.reservation().is_some();
                !admitted && !reflects(workload, entry.resource_version.as_deref())
            })
        });
        self.evictions.retain(|key, entry| {
            current(key, &entry.uid).is_some_and(|workload| {
                let holds = workload.reservation().is_some();
                holds
                    && !workload.is_condition_true(condition::EVICTED)
                    && !reflects(workload, entry.resource_version.as_deref())
            })
        });
    }

    /// Makes `converted` show the writes in flight: admitted workloads hold quota instead of
    /// pending, evicted ones are marked evicted.
    pub fn apply(&self, converted: &mut Converted) {
        if !self.admissions.is_empty() {
            let mut still_pending = Vec::with_capacity(converted.pending.len());
            for pending in std::mem::take(&mut converted.pending) {
                match self.admissions.get(&pending.workload.key) {
                    Some(entry) => {
                        let mut workload = Arc::unwrap_or_clone(pending.workload);
                        workload.cluster_queue = entry.admission.cluster_queue.clone();
                        workload.admission = Some(entry.admission.clone());
                        workload.quota_reserved_at = Some(entry.decided_at);
                        converted.holders.push(
                            crate::admitter::scheduling::cluster_state::Holder {
                                workload: Arc::new(workload),
                                local_queue: Some(pending.local_queue),
                                admitted: true,
                            },
                        );
                    }
                    None => still_pending.push(pending),
                }
            }
            converted.pending = still_pending;
        }
        if !self.evictions.is_empty() {
            for holder in &mut converted.holders {
                if self.evictions.contains_key(&holder.workload.key) {
                    Arc::make_mut(&mut holder.workload).evicted = true;
                }
            }
            converted
                .local_queue_drains
                .retain(|key| !self.evictions.contains_key(key));
            converted
                .deactivations
                .retain(|key| !self.evictions.contains_key(key));
            converted
                .check_outcomes
                .retain(|(key, _)| !self.evictions.contains_key(key));
        }
    }
}
