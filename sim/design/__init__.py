"""Design-level RTL simulation helpers for tests and benchmarks (not shipped)."""
