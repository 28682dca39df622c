//! Kubernetes building blocks with no Kueue semantics: apimachinery's quantities, Go durations,
//! field errors and name rules, conditions, raw-JSON readers and the merge-patch diff, the event
//! recorder, leader election and YAML. Everything above uses these instead of writing its own.

pub mod conditions;
pub mod duration;
pub mod events;
pub mod field;
pub mod finalizers;
pub mod json;
pub mod leader;
pub mod names;
pub mod quantity;
pub mod yaml;
