"""A training step through ``parity.compile(..., backend="inductor")``: forward and backward
IR graphs both compiled by Inductor, matching eager torch."""

from __future__ import annotations

import torch

import parity


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 4)

    def forward(self, x):
        return torch.log_softmax(self.down(torch.tanh(self.up(x))), dim=-1)


def test_training_step_matches_eager():
    torch.manual_seed(0)
    eager = _Block()
    model = _Block()
    model.load_state_dict(eager.state_dict())
    compiled = parity.compile(model, backend="inductor")
    x = torch.randn(6, 8)
    target = torch.randint(0, 4, (6,))

    want = torch.nn.functional.nll_loss(eager(x), target)
    want.backward()
    got = torch.nn.functional.nll_loss(compiled(x), target)
    got.backward()

    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)
