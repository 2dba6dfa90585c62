//! RDMA-capable interconnects on a machine-room LAN, side by side: NetEffect iWARP,
//! Mellanox InfiniBand and Myri-10G (MX over Myrinet and over Ethernet), at the user
//! level and under MPI. `bus` times DMA on PCI Express and PCI-X; `interconnect` holds
//! each adapter, line, switch and MPI library with its sources; `fabric` moves messages
//! through hosts, buses, lines and switch as a network of first-come, first-served
//! servers; `mpi` runs eager and rendezvous over it; `micro` holds the benchmarks;
//! `fit` derives the fitted constants; `report` runs the sweeps.

pub mod bus;
pub mod fabric;
pub mod fit;
pub mod interconnect;
pub mod micro;
pub mod mpi;
pub mod report;
