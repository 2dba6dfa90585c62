"""The tools that run measurements between two hosts of the testbed."""
