"""The simulator's Python side: scenarios from the topology and campaign parameters
(`scenarios`), running `longhaul-sim` locally or on Dask (`runner`), campaigns with
tool = "sim" (`campaign`), and the validation against ns-3, the kernel and USN
(`validation`, `ns3`)."""
