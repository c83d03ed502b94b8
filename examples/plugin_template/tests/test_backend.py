"""The backend's own unit tests; certification is `pytest --parity-backend numpy`."""

import numpy as np

from parity.backends import get_backend
from parity.ir import OP_TABLE, GraphBuilder, Kind, f32


def test_found_by_its_entry_point_and_claims_primitives_only():
    backend = get_backend("numpy")
    assert type(backend).__name__ == "NumpyBackend"
    assert {OP_TABLE[op].kind for op in backend.claims()} == {Kind.PRIMITIVE}
    assert backend.claim_status("softmax") == "decomposed"


def test_runs_a_graph():
    b = GraphBuilder()
    x = b.input(f32[3])
    run = get_backend("numpy").compile(b.build([b.exp(x)]), "cpu")
    np.testing.assert_array_equal(run(np.zeros(3, np.float32))[0], np.ones(3, np.float32))
