"""Streaming: values are freed after their last use, so the diff's traced peak stays far
below the activations a mark-all comparison holds (here a chain of 140 nodes on 16 KiB tensors: the peak is a single node's
temporaries, whatever the depth)."""

from parity.debugger import diff_graph

from .graphs import chain


def test_peak_memory_is_bounded_by_the_live_set_not_the_activations():
    graph, arrays = chain(120, 4096)
    report = diff_graph(graph, arrays, backend="reference", keep=2, measure_memory=True)
    assert report.activation_bytes == len(graph.nodes) * 4096 * 4
    assert report.peak_bytes is not None and report.peak_bytes < report.activation_bytes / 2
    assert len(report.kept) == 2
