//! InfiniBand in the simulator: the wire (`wire`: link rates, headers, opcodes), the
//! queue pair (`qp`: RC, UC and UD; send, RDMA write and read), perftest-shaped
//! applications (`perftest`) and a connection across a wide-area loop between range
//! extenders (`run`).

pub mod perftest;
pub mod qp;
pub mod run;
pub mod wire;
