"""The numerics debugger: which node makes a backend's answer differ (``parity diff``).

Built by issue 14: per-node local error (the node on the backend's own inputs against
the float64 oracle) beside the carried error (distance from the oracle run end to end).
"""
