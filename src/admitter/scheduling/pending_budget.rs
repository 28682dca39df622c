//! A budget for writing why workloads are pending.
//!
//! Kuota evaluates every pending workload a change concerns, not only the head of each queue
//! as Kueue does. With thousands waiting, writing each verdict at once would mean a
//! `QuotaReserved=False` status (and an event, and a pass through the validating webhook) for
//! every new workload that does not fit at once, and a rewrite of thousands of messages whose
//! figures moved ("N more needed") at each release of quota: the API server would spend its
//! time on those instead of on admissions. So pending statuses go out at this budget's pace,
//! the latest one per workload kept, in two lanes: first verdicts (or a changed reason) before
//! refreshes of a message alone, and a workload's message is refreshed at most once per
//! [`REFRESH_INTERVAL`]: a refresh offered sooner waits until then, so the latest message
//! always lands, even for a workload no later pass evaluates again. Admissions and evictions
//! never wait for it.

use std::collections::{BTreeSet, VecDeque};

// foldhash rather than SipHash: every pending workload a pass evaluates is looked up here.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use jiff::{SignedDuration, Timestamp};

use crate::quota::PendingReason;

/// Pending statuses written per second, in the long run.
pub const WRITES_PER_SECOND: u32 = 10;
/// Pending statuses that may go out at once after a quiet spell.
pub const BURST: u32 = 100;
/// Shortest time between two writes of a workload whose reason stays the same.
pub const REFRESH_INTERVAL: SignedDuration = SignedDuration::from_secs(60);

/// What a pending write changes on the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The workload shows no pending verdict yet, or one with another reason.
    Verdict,
    /// Only the message (its figures) changes.
    Message,
}

/// The pending verdict last handled per workload, with the object version it was for. A pass
/// that reaches the same verdict on the same object has nothing new to offer, and skips building
/// and comparing the status: with thousands waiting, a release of quota makes the next pass
/// evaluate all of them again, mostly to the same verdict.
#[derive(Debug, Default)]
pub struct HandledVerdicts {
    last: HashMap<String, Handled>,
}

#[derive(Debug)]
struct Handled {
    resource_version: Option<String>,
    reason: PendingReason,
    message: String,
}

impl HandledVerdicts {
    /// Whether this verdict was handled last for this version of the workload.
    pub fn contains(
        &self,
        key: &str,
        resource_version: Option<&str>,
        reason: PendingReason,
        message: &str,
    ) -> bool {
        self.last.get(key).is_some_and(|last| {
            last.resource_version.as_deref() == resource_version
                && last.reason == reason
                && last.message == message
        })
    }

    /// Notes the verdict handled (offered, or shown already) for this version of the workload.
    pub fn record(
        &mut self,
        key: &str,
        resource_version: Option<&str>,
        reason: PendingReason,
        message: &str,
    ) {
        let handled = Handled {
            resource_version: resource_version.map(str::to_owned),
            reason,
            message: message.to_owned(),
        };
        self.last.insert(key.to_owned(), handled);
    }

    /// Forgets the workload's verdict (it was admitted, or its write failed).
    pub fn forget(&mut self, key: &str) {
        self.last.remove(key);
    }

    /// How many verdicts are held.
    pub fn count(&self) -> usize {
        self.last.len()
    }

    /// Keeps the verdicts of the workloads `keep` keeps.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.last.retain(|key, _| keep(key));
    }
}

/// Pending statuses waiting for the budget, and the budget (a token bucket).
#[derive(Debug)]
pub struct PendingBudget<T> {
    waiting: HashMap<String, T>,
    /// Keys in the order they first waited, per lane; each key once (see `in_order`).
    verdicts: VecDeque<String>,
    refreshes: VecDeque<String>,
    in_order: HashSet<String>,
    /// Refreshes held back until their workload's interval has passed, by when they may go.
    deferred: BTreeSet<(Timestamp, String)>,
    deferred_until: HashMap<String, Timestamp>,
    /// When each workload's status was last handed out, oldest first, for `REFRESH_INTERVAL`.
    written_at: HashMap<String, Timestamp>,
    written_order: VecDeque<(Timestamp, String)>,
    tokens: f64,
    refilled_at: Option<Timestamp>,
}

impl<T> Default for PendingBudget<T> {
    fn default() -> Self {
        Self {
            waiting: HashMap::new(),
            verdicts: VecDeque::new(),
            refreshes: VecDeque::new(),
            in_order: HashSet::new(),
            deferred: BTreeSet::new(),
            deferred_until: HashMap::new(),
            written_at: HashMap::new(),
            written_order: VecDeque::new(),
            tokens: f64::from(BURST),
            refilled_at: None,
        }
    }
}

impl<T> PendingBudget<T> {
    /// Queues `write` for `key`, replacing one already waiting (which keeps its place). A
    /// [`Change::Message`] within [`REFRESH_INTERVAL`] of the workload's last write waits until
    /// the interval has passed.
    pub fn offer(&mut self, key: &str, write: T, change: Change, now: Timestamp) {
        let already_waiting = self.waiting.insert(key.to_owned(), write).is_some();
        if self.in_order.contains(key) {
            return;
        }
        if change == Change::Message {
            if already_waiting && self.deferred_until.contains_key(key) {
                return;
            }
            let held_until = self
                .written_at
                .get(key)
                .and_then(|at| at.checked_add(REFRESH_INTERVAL).ok())
                .filter(|until| *until > now);
            if let Some(until) = held_until {
                self.deferred.insert((until, key.to_owned()));
                self.deferred_until.insert(key.to_owned(), until);
                return;
            }
        }
        // A new reason is not held back by an earlier refresh.
        if let Some(until) = self.deferred_until.remove(key) {
            self.deferred.remove(&(until, key.to_owned()));
        }
        self.in_order.insert(key.to_owned());
        match change {
            Change::Verdict => self.verdicts.push_back(key.to_owned()),
            Change::Message => self.refreshes.push_back(key.to_owned()),
        }
    }

    /// Drops what waits for `key` (it is being admitted, or shows the verdict already).
    pub fn forget(&mut self, key: &str) {
        self.waiting.remove(key);
        if let Some(until) = self.deferred_until.remove(key) {
            self.deferred.remove(&(until, key.to_owned()));
        }
    }

    /// The writes the budget allows at `now`: first verdicts, then refreshes, oldest first.
    pub fn take_due(&mut self, now: Timestamp) -> Vec<(String, T)> {
        self.refill(now);
        self.forget_old_writes(now);
        self.release_deferred(now);
        let mut due = Vec::new();
        while self.tokens >= 1.0 {
            let Some(key) = self
                .verdicts
                .pop_front()
                .or_else(|| self.refreshes.pop_front())
            else {
                break;
            };
            self.in_order.remove(&key);
            // Keys forgotten since they were queued are skipped without spending the budget.
            if let Some(write) = self.waiting.remove(&key) {
                self.tokens -= 1.0;
                self.written_at.insert(key.clone(), now);
                self.written_order.push_back((now, key.clone()));
                due.push((key, write));
            }
        }
        if self.waiting.is_empty() {
            self.verdicts.clear();
            self.refreshes.clear();
            self.in_order.clear();
        }
        due
    }

    /// When the next waiting write may go out, if any waits.
    pub fn next_due(&self, now: Timestamp) -> Option<Timestamp> {
        if self.waiting.is_empty() {
            return None;
        }
        if self.in_order.is_empty() {
            // Only held-back refreshes wait.
            return self.deferred.first().map(|(until, _)| *until);
        }
        let missing = (1.0 - self.tokens).max(0.0);
        let nanos = missing * 1e9 / f64::from(WRITES_PER_SECOND);
        // A whole number of nanoseconds below a second: the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation)]
        let wait = SignedDuration::from_nanos(nanos.ceil() as i64);
        Some(now.checked_add(wait).unwrap_or(now))
    }

    /// Moves the held-back refreshes whose interval has passed to the refresh lane.
    fn release_deferred(&mut self, now: Timestamp) {
        while let Some((until, _)) = self.deferred.first() {
            if *until > now {
                break;
            }
            let Some((_, key)) = self.deferred.pop_first() else {
                break;
            };
            self.deferred_until.remove(&key);
            if self.waiting.contains_key(&key) && self.in_order.insert(key.clone()) {
                self.refreshes.push_back(key);
            }
        }
    }

    fn refill(&mut self, now: Timestamp) {
        if let Some(at) = self.refilled_at {
            let seconds = now.duration_since(at).as_secs_f64().max(0.0);
            self.tokens =
                (self.tokens + seconds * f64::from(WRITES_PER_SECOND)).min(f64::from(BURST));
        }
        self.refilled_at = Some(now);
    }

    /// Keeps write times only as long as they can hold back a refresh, so that workloads
    /// admitted or deleted since cost no memory.
    fn forget_old_writes(&mut self, now: Timestamp) {
        while let Some((at, _)) = self.written_order.front() {
            if now.duration_since(*at) < REFRESH_INTERVAL {
                break;
            }
            let Some((at, key)) = self.written_order.pop_front() else {
                break;
            };
            if self.written_at.get(&key) == Some(&at) {
                self.written_at.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_millisecond(millis).unwrap()
    }

    fn keys(due: Vec<(String, u32)>) -> Vec<String> {
        due.into_iter().map(|(key, _)| key).collect()
    }

    /// A budget with nothing left at time 0.
    fn spent() -> PendingBudget<u32> {
        let mut budget = PendingBudget::default();
        for i in 0..BURST {
            budget.offer(&format!("ns/filler-{i:03}"), 0, Change::Verdict, at(0));
        }
        assert_eq!(budget.take_due(at(0)).len(), 100);
        budget
    }

    #[test]
    fn a_burst_goes_out_then_the_rate_holds() {
        let mut budget = PendingBudget::default();
        for i in 0..110 {
            budget.offer(&format!("ns/wl-{i:03}"), i, Change::Verdict, at(0));
        }
        let first = keys(budget.take_due(at(0)));
        assert_eq!(first.len(), 100);
        assert_eq!(
            (first[0].as_str(), first[99].as_str()),
            ("ns/wl-000", "ns/wl-099")
        );
        // 10 a second: one every 100 ms.
        assert_eq!(budget.next_due(at(0)), Some(at(100)));
        assert_eq!(keys(budget.take_due(at(60))), Vec::<String>::new());
        assert_eq!(keys(budget.take_due(at(210))), ["ns/wl-100", "ns/wl-101"]);
        assert_eq!(budget.take_due(at(10_000)).len(), 8);
        assert_eq!(budget.next_due(at(10_000)), None);
    }

    #[test]
    fn the_latest_write_of_a_workload_keeps_its_place() {
        let mut budget = spent();
        budget.offer("ns/a", 1, Change::Verdict, at(0));
        budget.offer("ns/b", 2, Change::Verdict, at(0));
        budget.offer("ns/a", 3, Change::Verdict, at(0));
        assert_eq!(
            budget.take_due(at(200)),
            [("ns/a".to_owned(), 3), ("ns/b".to_owned(), 2)]
        );
    }

    #[test]
    fn forgotten_writes_cost_nothing() {
        let mut budget = spent();
        budget.offer("ns/admitted", 1, Change::Verdict, at(0));
        budget.offer("ns/waiting", 2, Change::Verdict, at(0));
        budget.forget("ns/admitted");
        assert_eq!(budget.take_due(at(100)), [("ns/waiting".to_owned(), 2)]);
        assert_eq!(budget.next_due(at(100)), None);
    }

    #[test]
    fn first_verdicts_go_out_before_refreshes() {
        let mut budget = spent();
        budget.offer("ns/old", 1, Change::Message, at(0));
        budget.offer("ns/new", 2, Change::Verdict, at(0));
        assert_eq!(keys(budget.take_due(at(100))), ["ns/new"]);
        assert_eq!(keys(budget.take_due(at(200))), ["ns/old"]);
    }

    #[test]
    fn a_message_is_refreshed_at_most_once_per_interval_and_the_latest_lands() {
        let mut budget = PendingBudget::default();
        budget.offer("ns/a", 1, Change::Verdict, at(0));
        assert_eq!(keys(budget.take_due(at(0))), ["ns/a"]);
        // Figures moved soon after: held back until a minute after the last write, the
        // latest of them kept.
        budget.offer("ns/a", 2, Change::Message, at(1_000));
        budget.offer("ns/a", 3, Change::Message, at(2_000));
        assert_eq!(budget.next_due(at(2_000)), Some(at(60_000)));
        assert_eq!(budget.take_due(at(59_999)), []);
        assert_eq!(budget.take_due(at(60_000)), [("ns/a".to_owned(), 3)]);
        assert_eq!(budget.next_due(at(60_000)), None);
        // A changed reason is written whatever the interval, and replaces a held-back refresh.
        budget.offer("ns/a", 4, Change::Message, at(61_000));
        budget.offer("ns/a", 5, Change::Verdict, at(62_000));
        assert_eq!(budget.take_due(at(62_000)), [("ns/a".to_owned(), 5)]);
        assert_eq!(budget.take_due(at(200_000)), []);
        // Once the interval has passed, a refresh goes at once.
        budget.offer("ns/a", 6, Change::Message, at(200_000));
        assert_eq!(budget.take_due(at(200_000)), [("ns/a".to_owned(), 6)]);
    }

    #[test]
    fn a_held_back_refresh_is_forgotten_with_its_workload() {
        let mut budget = PendingBudget::default();
        budget.offer("ns/a", 1, Change::Verdict, at(0));
        assert_eq!(keys(budget.take_due(at(0))), ["ns/a"]);
        budget.offer("ns/a", 2, Change::Message, at(1_000));
        budget.forget("ns/a");
        assert_eq!(budget.next_due(at(1_000)), None);
        assert_eq!(budget.take_due(at(60_000)), []);
        assert_eq!((budget.deferred.len(), budget.deferred_until.len()), (0, 0));
    }

    #[test]
    fn a_verdict_counts_as_handled_for_the_same_version_reason_and_message_only() {
        let mut handled = HandledVerdicts::default();
        let quota = PendingReason::WaitingForQuota;
        handled.record("ns/a", Some("7"), quota, "insufficient quota");
        assert!(handled.contains("ns/a", Some("7"), quota, "insufficient quota"));
        assert!(!handled.contains("ns/a", Some("8"), quota, "insufficient quota"));
        assert!(!handled.contains("ns/a", Some("7"), quota, "2 more needed"));
        assert!(!handled.contains(
            "ns/a",
            Some("7"),
            PendingReason::Misconfigured,
            "insufficient quota"
        ));
        assert!(!handled.contains("ns/b", Some("7"), quota, "insufficient quota"));

        handled.record("ns/b", None, quota, "insufficient quota");
        handled.retain(|key| key != "ns/b");
        assert!(!handled.contains("ns/b", None, quota, "insufficient quota"));
        handled.forget("ns/a");
        assert!(!handled.contains("ns/a", Some("7"), quota, "insufficient quota"));
    }

    #[test]
    fn write_times_are_kept_no_longer_than_they_matter() {
        let mut budget = PendingBudget::default();
        for i in 0..10 {
            budget.offer(&format!("ns/wl-{i}"), i, Change::Verdict, at(0));
        }
        assert_eq!(budget.take_due(at(0)).len(), 10);
        assert_eq!(budget.written_at.len(), 10);
        assert_eq!(budget.take_due(at(60_000)).len(), 0);
        assert_eq!(
            (budget.written_at.len(), budget.written_order.len()),
            (0, 0)
        );
    }
}
