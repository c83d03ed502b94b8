import numpy as np
import pytest

from parity.backends import (
    Backend,
    BackendNotFound,
    OpClaim,
    backend_names,
    get_backend,
    register_backend,
    unregister_backend,
)
from parity.ir import GraphBuilder, evaluate, f32, primitives


def test_reference_backend_is_found_by_name():
    assert "reference" in backend_names()
    assert get_backend("reference") is get_backend("reference")


def test_unknown_backend_error_lists_known_ones():
    with pytest.raises(BackendNotFound) as info:
        get_backend("no-such-backend")
    message = str(info.value)
    assert "no-such-backend" in message and "reference" in message and "parity.backends" in message


class _PartialBackend(Backend):
    name = "partial-for-test"
    devices = ("cpu",)

    def claims(self):
        return {"add": OpClaim(frozenset()), "exp": OpClaim(frozenset(), extern=True)}

    def compile(self, graph, device):
        return lambda *xs: evaluate(graph, xs)


def test_claim_status_is_derived_from_claims():
    backend = _PartialBackend()
    assert backend.claim_status("add") == "native"
    assert backend.claim_status("exp") == "extern"
    assert backend.claim_status("tanh") == "unsupported"


def test_registered_instance_is_returned_then_removed():
    backend = _PartialBackend()
    register_backend(backend)
    try:
        assert get_backend("partial-for-test") is backend
    finally:
        unregister_backend("partial-for-test")
    with pytest.raises(BackendNotFound):
        get_backend("partial-for-test")


def test_reference_claims_every_primitive_and_runs_a_graph():
    ref = get_backend("reference")
    assert set(ref.claims()) == {op.name for op in primitives()}
    b = GraphBuilder()
    x = b.input(f32[3])
    run = ref.compile(b.build([b.exp(x)]), "cpu")
    (out,) = run(np.array([0.0, 1.0, -np.inf], np.float32))
    assert out.dtype == np.float32
    assert out.tolist() == [1.0, np.float32(np.e), 0.0]


def test_reference_rejects_other_devices_with_advice():
    b = GraphBuilder()
    x = b.input(f32[3])
    with pytest.raises(Exception, match="cpu only.*device='cpu'"):
        get_backend("reference").compile(b.build([x]), "cuda")
