"""Measuring connections: tests (what to measure) and the tools that run them (how)."""
