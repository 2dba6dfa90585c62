"""Analysis: profiles, DPM, stability, segmented regression, jitter — pure functions on tables."""
