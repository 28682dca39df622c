//! Lease-based leader election (`coordination.k8s.io/v1` Lease, client-go semantics), so that
//! only one replica admits while every replica serves the webhook.
//!
//! A candidate reads the Lease every `retryPeriod` and takes it when it is free, released, or
//! not renewed for `leaseDuration` as measured on the candidate's own clock since it last saw
//! the Lease change (clock skew between replicas does not matter). Every write is a replace
//! guarded by `resourceVersion`, so two candidates can never both win. The leader renews every
//! `retryPeriod` and gives up (stops its work) when it has not renewed within `renewDeadline`,
//! which is shorter than `leaseDuration`: it stops before anyone else may take over.
//!
//! Written here rather than taken from a crate: `kube-leader-election` targets kube 4, and
//! `kube-lease-manager` keeps reporting leadership while it cannot reach the API server, which
//! would let two replicas admit at once.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};

/// The `leaderElection` settings (client-go's `LeaderElectionConfiguration`, Lease lock only).
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElection {
    /// Whether to elect a leader (default true); when false this replica always admits.
    pub leader_elect: bool,
    /// Lease name (default `c1f6bfd2.kueue.x-k8s.io`).
    pub resource_name: String,
    /// Lease namespace (Kueue's default: the Configuration's namespace).
    pub resource_namespace: String,
    /// How long a lease is valid (default 15s).
    pub lease_duration: Duration,
    /// How long the leader keeps retrying to renew (default 10s).
    pub renew_deadline: Duration,
    /// Wait between attempts (default 2s).
    pub retry_period: Duration,
}

/// Where the Lease is and how long its terms are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionConfig {
    /// Lease name (`leaderElection.resourceName`).
    pub lease_name: String,
    /// Lease namespace (`leaderElection.resourceNamespace`).
    pub namespace: String,
    /// This candidate's identity, unique among replicas.
    pub identity: String,
    /// How long a Lease is valid after its last renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up.
    pub renew_deadline: Duration,
    /// Wait between attempts.
    pub retry_period: Duration,
}

impl ElectionConfig {
    /// The election the Configuration describes, for the candidate `identity`.
    pub fn new(election: &LeaderElection, identity: String) -> Self {
        Self {
            lease_name: election.resource_name.clone(),
            namespace: election.resource_namespace.clone(),
            identity,
            lease_duration: election.lease_duration,
            renew_deadline: election.renew_deadline,
            retry_period: election.retry_period,
        }
    }
}

/// A unique identity for this process: `<hostname>_<random hex>`, as client-go builds it.
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "kuota".to_owned());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("{host}_{:016x}", hasher.finish())
}

/// What a candidate does after reading the Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It holds the Lease: renew it.
    Renew,
    /// The Lease is free, released or expired: take it.
    Acquire,
    /// Another holder's Lease is still valid: wait.
    Wait,
}

/// Decides what a candidate does with a Lease whose holder and renewal it last saw change at
/// `observed_at` (its own clock).
pub fn next_step(spec: &LeaseSpec, identity: &str, observed_at: Instant, now: Instant) -> Step {
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder == identity {
        return Step::Renew;
    }
    if holder.is_empty() {
        return Step::Acquire;
    }
    let seconds = u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0);
    let valid_until = observed_at + Duration::from_secs(seconds);
    if valid_until > now {
        Step::Wait
    } else {
        Step::Acquire
    }
}

fn whole_seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs().max(1)).unwrap_or(i32::MAX)
}

/// The Lease spec after `identity` acquires or renews `current` at `now`; as in client-go,
/// every acquisition of an existing Lease counts as a transition.
pub fn claimed_spec(
    current: Option<&LeaseSpec>,
    identity: &str,
    lease_duration: Duration,
    now: Timestamp,
) -> LeaseSpec {
    let current = current.cloned().unwrap_or_default();
    let renewing = current.holder_identity.as_deref() == Some(identity);
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(whole_seconds(lease_duration)),
        acquire_time: if renewing {
            current.acquire_time.clone()
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: match (renewing, current.lease_transitions) {
            (true, transitions) => transitions,
            (false, None) => Some(0),
            (false, Some(transitions)) => Some(transitions.saturating_add(1)),
        },
        ..current
    }
}

/// The Lease spec after its holder releases `current` at `now` (client-go `ReleaseOnCancel`).
pub fn released_spec(current: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: current.lease_transitions,
        ..current.clone()
    }
}

/// A candidate for one Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    config: ElectionConfig,
    observed: Option<(LeaseSpec, Instant)>,
}

impl LeaderElector {
    /// A candidate that has not read the Lease yet.
    pub fn new(client: Client, config: ElectionConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    fn observe(&mut self, spec: &LeaseSpec) -> Instant {
        match &self.observed {
            Some((seen, at)) if seen == spec => *at,
            _ => {
                let now = Instant::now();
                self.observed = Some((spec.clone(), now));
                now
            }
        }
    }

    /// One attempt to acquire or renew the Lease; `Ok(true)` when this candidate holds it
    /// afterwards.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let Some(lease) = self.api.get_opt(&self.config.lease_name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.lease_name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(claimed_spec(
                    None,
                    &self.config.identity,
                    self.config.lease_duration,
                    now,
                )),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(&created.spec.unwrap_or_default());
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let observed_at = self.observe(&spec);
        if next_step(&spec, &self.config.identity, observed_at, Instant::now()) == Step::Wait {
            return Ok(false);
        }
        let claimed = Lease {
            spec: Some(claimed_spec(
                Some(&spec),
                &self.config.identity,
                self.config.lease_duration,
                now,
            )),
            ..lease
        };
        match self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &claimed)
            .await
        {
            Ok(written) => {
                self.observe(&written.spec.unwrap_or_default());
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Gives the Lease up if this candidate holds it.
    pub async fn release(&mut self) -> Result<(), kube::Error> {
        let Some(lease) = self.api.get_opt(&self.config.lease_name).await? else {
            return Ok(());
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        let released = Lease {
            spec: Some(released_spec(&spec, Timestamp::now())),
            ..lease
        };
        self.api
            .replace(&self.config.lease_name, &PostParams::default(), &released)
            .await?;
        self.observed = None;
        Ok(())
    }

    /// Waits until this candidate holds the Lease, trying every `retryPeriod`.
    async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => tracing::debug!(%error, "cannot acquire the leader Lease"),
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
    }

    /// Renews every `retryPeriod`; returns when the Lease is lost: another holder has it, or
    /// no renewal succeeded within `renewDeadline`.
    async fn keep_renewing(&mut self) {
        let mut renewed_at = Instant::now();
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let attempt_started = Instant::now();
            let remaining = self
                .config
                .renew_deadline
                .saturating_sub(renewed_at.elapsed());
            match tokio::time::timeout(remaining, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => renewed_at = attempt_started,
                Ok(Ok(false)) => return,
                Ok(Err(error)) => tracing::warn!(%error, "cannot renew the leader Lease"),
                Err(_) => tracing::warn!("renewing the leader Lease timed out"),
            }
            if renewed_at.elapsed() >= self.config.renew_deadline {
                return;
            }
        }
    }
}

/// Runs `work` only while this replica holds the leader Lease, until `shutdown` completes.
///
/// Each time the Lease is acquired a new `work()` future starts; when the Lease is lost that
/// future is dropped (stopping the work) and the replica campaigns again. On shutdown the
/// Lease is released so another replica takes over at once. With `leaderElect: false` the work
/// simply runs until shutdown.
pub async fn lead<W, F>(
    client: Client,
    election: &LeaderElection,
    identity: String,
    shutdown: impl Future<Output = ()>,
    mut work: W,
) where
    W: FnMut() -> F,
    F: Future<Output = ()>,
{
    tokio::pin!(shutdown);
    if !election.leader_elect {
        tokio::select! {
            () = &mut shutdown => {}
            () = work() => {}
        }
        return;
    }
    let mut elector = LeaderElector::new(client, ElectionConfig::new(election, identity));
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            () = elector.acquire() => {}
        }
        tracing::info!(identity = elector.identity(), "acquired the leader Lease");
        let stopped_by_shutdown = {
            let running = work();
            tokio::pin!(running);
            tokio::select! {
                () = &mut shutdown => true,
                () = &mut running => true,
                () = elector.keep_renewing() => false,
            }
        };
        if stopped_by_shutdown {
            if let Err(error) = elector.release().await {
                tracing::warn!(%error, "cannot release the leader Lease");
            }
            return;
        }
        tracing::warn!(
            identity = elector.identity(),
            "lost the leader Lease; stopped admitting"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: Some(seconds),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn next_step_follows_holder_and_local_expiry() {
        let observed = Instant::now();
        let cases = [
            ("own lease", spec(Some("me"), 15), 0, Step::Renew),
            ("released lease", spec(None, 1), 0, Step::Acquire),
            ("empty holder", spec(Some(""), 15), 0, Step::Acquire),
            (
                "other holder, fresh",
                spec(Some("other"), 15),
                14,
                Step::Wait,
            ),
            (
                "other holder, expired",
                spec(Some("other"), 15),
                15,
                Step::Acquire,
            ),
            (
                "other holder, long expired",
                spec(Some("other"), 15),
                60,
                Step::Acquire,
            ),
        ];
        for (name, lease, elapsed, want) in cases {
            let now = observed + Duration::from_secs(elapsed);
            assert_eq!(next_step(&lease, "me", observed, now), want, "{name}");
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn acquiring_a_lease_of_another_holder_counts_a_transition() {
        let current = LeaseSpec {
            holder_identity: Some("other".to_owned()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(at(100))),
            renew_time: Some(MicroTime(at(110))),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        };
        assert_eq!(
            claimed_spec(Some(&current), "me", Duration::from_secs(15), at(200)),
            LeaseSpec {
                holder_identity: Some("me".to_owned()),
                lease_duration_seconds: Some(15),
                acquire_time: Some(MicroTime(at(200))),
                renew_time: Some(MicroTime(at(200))),
                lease_transitions: Some(4),
                ..LeaseSpec::default()
            }
        );
    }

    #[test]
    fn renewing_keeps_acquire_time_and_transitions() {
        let current = LeaseSpec {
            holder_identity: Some("me".to_owned()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(at(100))),
            renew_time: Some(MicroTime(at(110))),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        };
        let renewed = claimed_spec(Some(&current), "me", Duration::from_secs(15), at(120));
        assert_eq!(renewed.acquire_time, Some(MicroTime(at(100))));
        assert_eq!(renewed.renew_time, Some(MicroTime(at(120))));
        assert_eq!(renewed.lease_transitions, Some(3));
    }

    #[test]
    fn a_new_lease_starts_without_transitions_and_retaking_a_released_one_counts() {
        let created = claimed_spec(None, "me", Duration::from_millis(2500), at(50));
        assert_eq!(created.lease_transitions, Some(0));
        assert_eq!(created.lease_duration_seconds, Some(2));
        let released = released_spec(&created, at(60));
        assert_eq!(
            released,
            LeaseSpec {
                holder_identity: None,
                lease_duration_seconds: Some(1),
                acquire_time: Some(MicroTime(at(60))),
                renew_time: Some(MicroTime(at(60))),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }
        );
        let retaken = claimed_spec(Some(&released), "other", Duration::from_secs(15), at(61));
        assert_eq!(retaken.lease_transitions, Some(1));
        assert_eq!(retaken.holder_identity.as_deref(), Some("other"));
    }

    #[test]
    fn identities_differ_between_calls() {
        let first = default_identity();
        let second = default_identity();
        assert_ne!(first, second);
        assert!(first.contains('_'), "{first}");
    }
}
