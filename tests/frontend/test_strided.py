"""as_strided, as_strided_scatter and unfold (frontend/aten/strided.py): gathers with constant
indices over the input's storage root, checked against eager torch on views, transposes,
offsets and overlapping windows, and refused (never read approximately) where the trace
cannot prove which element a read means."""

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import parity
from parity.frontend.errors import UnsupportedAtenOp
from parity.frontend.tensors import to_array
from parity.frontend.translate import fx_to_ir
from parity.ir import evaluate


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _chunk(t, w=2):
    """Longformer's _chunk: non-overlapping chunks of 2w viewed, then overlapping ones by strides."""
    t = t.view(t.size(0), t.size(1) // (2 * w), 2 * w, t.size(2))
    size, stride = list(t.size()), list(t.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    return t.as_strided(size=size, stride=stride)


def _windows_of_permuted(q):  # the view's root is a permuted, reshaped product (Longformer's query)
    return _chunk((q * 2).transpose(1, 2).reshape(8, 8, 4)) * 3


def _read_a_transpose(y):  # the root keeps the transposed strides (1, 4): storage order is y's, not logical
    return torch.as_strided((y * 2).t(), (2, 3), (1, 4)) + 1


def _read_from_an_offset(y):  # a slice starting at element 3: as_strided counts from the slice's start
    return torch.as_strided((y * 1).flatten()[3:], (2, 2), (1, 3)) * 2


def _offset_within_the_product(y):  # an explicit offset into a tensor the graph made is known exactly
    return torch.as_strided((y * 1)[1:], (3, 2), (2, 1), 5) * 2


def _split_then_windows(y):  # the second half of a split (getitem of a view op) read by windows
    return torch.as_strided(torch.split(y * 1, 2, dim=0)[1], (3, 4), (2, 1)) - 1


def _read_past_a_narrowed_view(y):  # whole rows of the product, though the view keeps two columns of each
    return torch.as_strided((y * 1)[:, :2], (3, 4), (4, 1), 2) * 2


def _overlapping_windows(y):  # unfold: windows of 4 every 2 along the last dim
    return (y * 1).unfold(-1, 4, 2) * 2


def _padded_value_windows(v):  # Longformer's value chunks: a padded tensor read in overlapping windows
    padded = torch.nn.functional.pad(v, (0, 0, 2, 2), value=-1)
    # used, not returned: AOTAutograd's gradient of an overlapping view returned as an output is
    # wrong in torch 2.13 (aot_eager too: 6.5 off on these inputs), before parity sees a graph
    return padded.as_strided((8, 4, 6, 4), (padded.stride(0), 2 * padded.stride(1), *padded.stride()[1:])) * 1


CASES = [
    (_windows_of_permuted, (2, 8, 4, 4)),
    (_read_a_transpose, (3, 4)),
    (_read_from_an_offset, (3, 4)),
    (_offset_within_the_product, (4, 4)),
    (_split_then_windows, (4, 5)),
    (_read_past_a_narrowed_view, (4, 4)),
    (_overlapping_windows, (3, 10)),
    (_padded_value_windows, (8, 8, 4)),
]


def _matches_eager(fn, shape, backend):
    x = torch.randn(*shape)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, expected = parity.compile(fn, backend=backend)(ours), fn(theirs)
    assert torch.equal(got, expected)  # a gather moves values: bit-exact
    weight = torch.randn_like(expected)
    (got * weight).sum().backward()
    (expected * weight).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad)  # overlapping reads sum their gradients


@pytest.mark.parametrize("fn,shape", CASES, ids=[fn.__name__.strip("_") for fn, _ in CASES])
def test_strided_views_match_eager_forward_and_backward(fn, shape):
    _matches_eager(fn, shape, "reference")


@pytest.mark.parametrize("backend", ["xla", "onnx"])
def test_longformer_chunks_match_eager_on_the_backends(backend):
    _matches_eager(_windows_of_permuted, (2, 8, 4, 4), backend)
    _matches_eager(_padded_value_windows, (8, 8, 4), backend)


def test_the_view_is_one_gather_over_the_root():
    graph = fx_to_ir(make_fx(_windows_of_permuted)(torch.randn(2, 8, 4, 4))).graph
    assert graph.op_counts()["gather"] == 1


def test_as_strided_scatter_replaces_the_strided_view_and_refuses_overlapping_writes():
    def scatter(x, s):
        return torch.as_strided_scatter(x * 1, s, (2, 2), (1, 3), 1)

    x, s = torch.arange(8.0), torch.tensor([[10.0, 20.0], [30.0, 40.0]])
    got = parity.compile(scatter, backend="reference")(x, s)
    assert got.tolist() == scatter(x, s).tolist() == [0.0, 10.0, 30.0, 3.0, 20.0, 40.0, 6.0, 7.0]
    _refusal(lambda x, s: torch.as_strided_scatter(x * 1, s, (2, 2), (1, 1), 0), x, s, match="covers an element twice")


def test_as_strided_scatter_of_a_view_keeps_its_offset():
    # torch writes into a copy that keeps the view's storage offset 2: offset 3 is its element 1
    def scatter(y, s):
        return torch.as_strided_scatter((y * 1)[2:], s, (2,), (1,), 3)

    y, s = torch.randn(8), torch.randn(2)
    got = parity.compile(scatter, backend="reference")(y, s)
    assert torch.equal(got, scatter(y, s)) and torch.equal(got[1:3], s)


@pytest.mark.parametrize("offset", [0, 1, 4])
def test_as_strided_scatter_into_repeated_elements_writes_a_plain_copy(offset):
    # a zero stride makes torch copy x contiguously first: rows no longer share storage
    def scatter(y, s):
        return torch.as_strided_scatter((y * 1).expand(2, 3), s, (2,), (1,), offset)

    y, s = torch.randn(3), torch.randn(2)
    assert torch.equal(parity.compile(scatter, backend="reference")(y, s), scatter(y, s))


def _refusal(fn, *args, match):
    with pytest.raises(UnsupportedAtenOp, match=match) as caught:
        parity.compile(fn, backend="reference")(*args)
    return str(caught.value)


def test_an_explicit_offset_into_a_graph_input_is_refused():
    # Dynamo does not guard where an input starts in its storage: traced at base[1:6], called with
    # base[3:8], storage_offset=4 means another element. It was read wrongly before (6, 7 for 4, 5).
    message = _refusal(lambda t: torch.as_strided(t, (2,), (1,), 4) * 1, torch.arange(10.0)[1:6],
                       match="storage_offset=4 reads graph input")
    assert "test_strided.py" in message and "leave storage_offset out" in message
    _refusal(lambda t, s: torch.as_strided_scatter(t, s, (2,), (1,), 1), torch.arange(6.0), torch.ones(2),
             match="storage_offset=1 into a graph input")


def test_without_an_offset_an_input_that_moves_in_its_storage_reads_the_same_elements():
    fn = lambda t: torch.as_strided(t, (2, 2), (1, 2)) * 1  # noqa: E731
    compiled, base = parity.compile(fn, backend="reference"), torch.arange(12.0)
    for start in (1, 3, 0):
        assert torch.equal(compiled(base[start:start + 6]), fn(base[start:start + 6]))


def test_reads_outside_the_root_are_refused():
    # past the end of a slice's root, into the gaps of an input that is a strided slice of a larger tensor
    _refusal(lambda t: torch.as_strided(t, (5,), (1,)) * 1, torch.randn(8)[2:6], match="reads storage that no")
    message = _refusal(lambda t: torch.as_strided(t, (4,), (1,)) * 1, torch.randn(2, 4)[:, ::2],
                       match="reads storage that no element of graph input")
    assert "strides (4, 2)" in message


def test_an_input_whose_elements_overlap_is_refused():
    _refusal(lambda t: torch.as_strided(t, (2, 2), (1, 1)) * 1, torch.randn(1, 3).expand(2, 3),
             match="whose elements overlap in storage")


def test_a_view_that_changes_the_element_size_is_refused():
    _refusal(lambda t: torch.as_strided(torch.view_as_real(t * 1), (2,), (1,)) * 1, torch.randn(4, dtype=torch.cfloat),
             match=r"changes the element size \(torch.complex64 storage read as torch.float32\)")


def test_storage_written_earlier_in_the_graph_is_refused():
    # fx_to_ir takes any aten graph: here an out= write whose buffer is read through the node
    # before the write, so the buffer's IR value is the empty tensor's, not what atan2 wrote
    graph = torch.fx.Graph()
    a, b = graph.placeholder("a"), graph.placeholder("b")
    buffer = graph.call_function(torch.ops.aten.empty.memory_format, ([4],))
    written = graph.call_function(torch.ops.aten.atan2.out, (a, b), {"out": buffer})
    read = graph.call_function(torch.ops.aten.as_strided.default, (buffer, [2], [2]))
    graph.output((written, read))
    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    with pytest.raises(UnsupportedAtenOp, match="aten.atan2.out writes to earlier"):
        fx_to_ir(module, [torch.randn(4), torch.randn(4)])


def test_untraced_graph_through_the_interpreter_equals_eager():
    y = torch.randn(3, 4)
    translation = fx_to_ir(make_fx(_read_a_transpose)(y))
    (got,) = evaluate(translation.graph, [to_array(y)])
    assert torch.equal(torch.from_numpy(got), _read_a_transpose(y))
