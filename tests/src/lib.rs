//! Helpers shared by the cross-process tests.
