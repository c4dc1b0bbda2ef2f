//! Transactional collections, generic over [`TxOps`](crate::TxOps).
