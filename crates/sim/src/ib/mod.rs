//! InfiniBand in the simulator: the wire (`wire`: link rates, headers, opcodes), the
//! queue pair (`qp`: RC, UC and UD; send, RDMA write and read), perftest-shaped
//! applications (`perftest`), the HCA, range extenders and connection set-up
//! (`devices`), MPI's eager and rendezvous protocols with the OSU
//! benchmarks (`mpi`) and a connection across a wide-area loop between range
//! extenders (`run`).

pub mod devices;
pub mod mpi;
pub mod perftest;
pub mod qp;
pub mod run;
pub mod wire;
