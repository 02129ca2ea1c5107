"""Suite-wide test settings, and the etctl pytest plugin (opt-in: etctl's own suite opts in)."""

from hypothesis import HealthCheck, settings

pytest_plugins = ["etctl.testing.pytest_plugin"]

# Property tests must not fail because a loaded two-core CI machine ran an example slowly: a
# deadline or a too-slow health check is a timing artefact, not a property violation.
settings.register_profile(
    "etctl",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("etctl")
