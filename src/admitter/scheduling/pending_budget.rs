//! A budget for writing why workloads are pending.
//!
//! Kuota evaluates every pending workload a change concerns, not only the head of each queue
//! as Kueue does. With thousands waiting, writing each verdict at once would mean a
//! `QuotaReserved=False` status (and an event) for every new workload that does not fit at
//! once, and a rewrite of thousands of messages whose figures moved ("N more needed") at each
//! release of quota: the API server would spend its time on those instead of on admissions.
//! So pending statuses go out at this budget's pace, the latest one per workload kept, oldest
//! first; admissions and evictions never wait for it.

use std::collections::{HashMap, HashSet, VecDeque};

use jiff::{SignedDuration, Timestamp};

/// Pending statuses written per second, in the long run.
pub const WRITES_PER_SECOND: u32 = 50;
/// Pending statuses that may go out at once after a quiet spell.
pub const BURST: u32 = 100;

/// Pending statuses waiting for the budget, and the budget (a token bucket).
#[derive(Debug)]
pub struct PendingBudget<T> {
    waiting: HashMap<String, T>,
    /// Keys in the order they first waited; each key once (see `in_order`).
    order: VecDeque<String>,
    in_order: HashSet<String>,
    tokens: f64,
    refilled_at: Option<Timestamp>,
}

impl<T> Default for PendingBudget<T> {
    fn default() -> Self {
        Self {
            waiting: HashMap::new(),
            order: VecDeque::new(),
            in_order: HashSet::new(),
            tokens: f64::from(BURST),
            refilled_at: None,
        }
    }
}

impl<T> PendingBudget<T> {
    /// Queues `write` for `key`, replacing one already waiting (which keeps its place).
    pub fn offer(&mut self, key: &str, write: T) {
        self.waiting.insert(key.to_owned(), write);
        if self.in_order.insert(key.to_owned()) {
            self.order.push_back(key.to_owned());
        }
    }

    /// Drops what waits for `key` (it is being admitted).
    pub fn forget(&mut self, key: &str) {
        self.waiting.remove(key);
    }

    /// The writes the budget allows at `now`, oldest first.
    pub fn take_due(&mut self, now: Timestamp) -> Vec<(String, T)> {
        self.refill(now);
        let mut due = Vec::new();
        while self.tokens >= 1.0 {
            let Some(key) = self.order.pop_front() else {
                break;
            };
            self.in_order.remove(&key);
            // Keys forgotten since they were queued are skipped without spending the budget.
            if let Some(write) = self.waiting.remove(&key) {
                self.tokens -= 1.0;
                due.push((key, write));
            }
        }
        if self.waiting.is_empty() {
            self.order.clear();
            self.in_order.clear();
        }
        due
    }

    /// When the next waiting write may go out, if any waits.
    pub fn next_due(&self, now: Timestamp) -> Option<Timestamp> {
        if self.waiting.is_empty() {
            return None;
        }
        let missing = (1.0 - self.tokens).max(0.0);
        let nanos = missing * 1e9 / f64::from(WRITES_PER_SECOND);
        // A whole number of nanoseconds below a second: the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation)]
        let wait = SignedDuration::from_nanos(nanos.ceil() as i64);
        Some(now.checked_add(wait).unwrap_or(now))
    }

    fn refill(&mut self, now: Timestamp) {
        if let Some(at) = self.refilled_at {
            let seconds = now.duration_since(at).as_secs_f64().max(0.0);
            self.tokens =
                (self.tokens + seconds * f64::from(WRITES_PER_SECOND)).min(f64::from(BURST));
        }
        self.refilled_at = Some(now);
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
            budget.offer(&format!("ns/filler-{i:03}"), 0);
        }
        assert_eq!(budget.take_due(at(0)).len(), 100);
        budget
    }

    #[test]
    fn a_burst_goes_out_then_the_rate_holds() {
        let mut budget = PendingBudget::default();
        for i in 0..110 {
            budget.offer(&format!("ns/wl-{i:03}"), i);
        }
        let first = keys(budget.take_due(at(0)));
        assert_eq!(first.len(), 100);
        assert_eq!(
            (first[0].as_str(), first[99].as_str()),
            ("ns/wl-000", "ns/wl-099")
        );
        // 50 a second: one every 20 ms.
        assert_eq!(budget.next_due(at(0)), Some(at(20)));
        assert_eq!(keys(budget.take_due(at(10))), Vec::<String>::new());
        assert_eq!(keys(budget.take_due(at(50))), ["ns/wl-100", "ns/wl-101"]);
        assert_eq!(budget.take_due(at(10_000)).len(), 8);
        assert_eq!(budget.next_due(at(10_000)), None);
    }

    #[test]
    fn the_latest_write_of_a_workload_keeps_its_place() {
        let mut budget = spent();
        budget.offer("ns/a", 1);
        budget.offer("ns/b", 2);
        budget.offer("ns/a", 3);
        assert_eq!(
            budget.take_due(at(40)),
            [("ns/a".to_owned(), 3), ("ns/b".to_owned(), 2)]
        );
    }

    #[test]
    fn forgotten_writes_cost_nothing() {
        let mut budget = spent();
        budget.offer("ns/admitted", 1);
        budget.offer("ns/waiting", 2);
        budget.forget("ns/admitted");
        assert_eq!(budget.take_due(at(20)), [("ns/waiting".to_owned(), 2)]);
        assert_eq!(budget.next_due(at(20)), None);
    }
}
