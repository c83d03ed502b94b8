"""Conformance: every (backend, device, dtype, op) measured against the float64 oracle."""
