//! Helpers shared by the procman tests: the workspace's test support under its old names.
#![allow(unused_imports)]

pub use testsupport::{compile, gone, process_state as state, running_untraced, Child, Sample};
