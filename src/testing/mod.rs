//! Test builders shared by the unit tests and every test binary under `tests/` (which enable
//! the `testing` feature): typed Kueue objects ([`objects`]), the same object in both served
//! versions ([`api_versions`]) and an in-memory cluster for the admission handlers
//! ([`lookup`]). Not part of a release build.

pub mod api_versions;
pub mod lookup;
pub mod objects;
