import os

from hypothesis import HealthCheck, settings

# CI runs more examples; a local run stays quick. Both print the seed of any failure.
settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
