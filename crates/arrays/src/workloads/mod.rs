//! The paper's workloads.
