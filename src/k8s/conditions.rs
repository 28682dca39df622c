//! Status conditions as apimachinery's `meta.SetStatusCondition` keeps them, and message
//! truncation as Kueue applies it to conditions and events (`pkg/util/api`).

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Longest condition message Kueue writes, in bytes (`api.TruncateConditionMessage`).
pub const MAX_CONDITION_MESSAGE: usize = 32 * 1024;
/// Longest event note Kueue writes, in bytes (`api.TruncateEventMessage`).
pub const MAX_EVENT_MESSAGE: usize = 1024;

/// `message` cut to at most `limit` bytes, ending in `" ..."` when cut, as Kueue's
/// `truncateMessage`; the cut falls on a character boundary, where Go's may split one.
pub fn truncate_message(message: &str, limit: usize) -> String {
    const SUFFIX: &str = " ...";
    if message.len() <= limit {
        return message.to_owned();
    }
    let mut end = limit.saturating_sub(SUFFIX.len());
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{SUFFIX}", &message[..end])
}

/// The condition of this type, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// The condition of this type when its status is `True`.
pub fn find_true<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    find(conditions, type_).filter(|condition| condition.status == "True")
}

/// A condition to set, built fluently and stamped with [`NewCondition::at`].
#[derive(Clone, Debug)]
pub struct NewCondition<'a> {
    type_: &'a str,
    status: bool,
    reason: &'a str,
    message: &'a str,
    generation: Option<i64>,
}

/// A condition of `type_` with `status` and `reason`, no message and no generation.
pub fn new_condition<'a>(type_: &'a str, status: bool, reason: &'a str) -> NewCondition<'a> {
    NewCondition {
        type_,
        status,
        reason,
        message: "",
        generation: None,
    }
}

impl<'a> NewCondition<'a> {
    /// Sets the message.
    pub fn message(mut self, message: &'a str) -> Self {
        self.message = message;
        self
    }

    /// Sets `observedGeneration`.
    pub fn generation(mut self, generation: Option<i64>) -> Self {
        self.generation = generation;
        self
    }

    /// The condition, transitioning at `now`, its message truncated as Kueue truncates it.
    pub fn at(self, now: Timestamp) -> Condition {
        Condition {
            type_: self.type_.to_owned(),
            status: if self.status { "True" } else { "False" }.to_owned(),
            reason: self.reason.to_owned(),
            message: truncate_message(self.message, MAX_CONDITION_MESSAGE),
            observed_generation: self.generation,
            last_transition_time: Time(now),
        }
    }
}

/// Sets a condition as apimachinery's `SetStatusCondition` does: appended when new; otherwise
/// reason, message and generation are replaced and the transition time changes only with the
/// status. Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        conditions.push(new);
        return true;
    };
    let before = existing.clone();
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = new.last_transition_time;
    }
    existing.reason = new.reason;
    existing.message = new.message;
    existing.observed_generation = new.observed_generation;
    *existing != before
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn ts(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("valid timestamp")
    }

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let mut conditions = Vec::new();
        assert!(set_condition(
            &mut conditions,
            new_condition("Active", true, "Ready")
                .message("ok")
                .at(ts(100))
        ));
        assert!(!set_condition(
            &mut conditions,
            new_condition("Active", true, "Ready")
                .message("ok")
                .at(ts(200))
        ));
        assert!(set_condition(
            &mut conditions,
            new_condition("Active", true, "Ready")
                .message("still ok")
                .at(ts(200))
        ));
        assert_eq!(conditions[0].last_transition_time, Time(ts(100)));
        assert!(set_condition(
            &mut conditions,
            new_condition("Active", false, "Stopped").at(ts(300))
        ));
        assert_eq!(conditions[0].last_transition_time, Time(ts(300)));
        assert_eq!(conditions.len(), 1);
    }

    #[test]
    fn long_messages_are_cut_on_character_boundaries_with_kueues_suffix() {
        assert_eq!(truncate_message("short", 10), "short");
        assert_eq!(truncate_message("0123456789", 10), "0123456789");
        assert_eq!(truncate_message("0123456789abc", 10), "012345 ...");
        assert_eq!(truncate_message("ééééé", 7), "é ...");
        let long = "x".repeat(MAX_CONDITION_MESSAGE + 1);
        let cut = new_condition("A", true, "R")
            .message(&long)
            .at(ts(1))
            .message;
        assert_eq!(cut.len(), MAX_CONDITION_MESSAGE);
        assert!(cut.ends_with("x ..."));
    }

    #[test]
    fn finds_conditions_by_type_and_status() {
        let conditions = vec![
            new_condition("Admitted", false, "NoReservation").at(ts(1)),
            new_condition("Finished", true, "Succeeded").at(ts(2)),
        ];
        assert_eq!(
            find(&conditions, "Admitted").map(|c| c.status.as_str()),
            Some("False")
        );
        assert!(find_true(&conditions, "Admitted").is_none());
        assert_eq!(
            find_true(&conditions, "Finished").map(|c| c.reason.as_str()),
            Some("Succeeded")
        );
        assert!(find(&conditions, "Evicted").is_none());
    }
}
