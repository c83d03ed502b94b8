"""frontend/recompile_limit.py: Dynamo's failed guard in words, and the error without Dynamo's log record."""

import torch
from torch._dynamo.exc import FailOnRecompileLimitHit, Unsupported

from parity.frontend.recompile_limit import explain_guard, recompile_limit_error


def test_a_guard_of_another_kind_is_quoted_without_dynamos_entry_number_and_source_comment():
    why, fix = explain_guard("3/7: tensor 'x' dtype mismatch. expected Float, actual Double   # return x * 2  # m.py:3",
                             "accumulated_recompile_limit")
    assert why == "the last recompile's failed guard: tensor 'x' dtype mismatch. expected Float, actual Double"
    assert fix == ("pass dynamic=True for changing sizes, torch._dynamo.mark_dynamic(x, dim) for one dim, a tensor "
                   "in place of a changing Python number; or raise torch._dynamo.config.accumulated_recompile_limit")


def test_older_torchs_spelling_of_a_local_is_read_as_its_name():
    why, fix = explain_guard("L['scale'] == 0.5")
    assert why.startswith("the Python number scale changed (the last graph was built for scale == 0.5)")
    assert fix.startswith("leave dynamic unset (a number that changes becomes symbolic at the next capture), or pass "
                          "scale as a tensor (torch.tensor(scale))")


def user_step(x):
    return x + 1


def test_without_dynamos_log_record_the_error_names_the_function_and_the_limit_from_the_exception():
    cause = Unsupported("Dynamo recompile limit exceeded\n  Developer debug context: Limit type: recompile_limit")
    err = FailOnRecompileLimitHit("Hard failure due to fullgraph=True")
    err.__cause__ = cause
    error = recompile_limit_error(err, user_step, "onnx")
    first, why, fix = str(error).splitlines()
    code = user_step.__code__
    assert first == (f"parity.compile(fullgraph=True): {code.co_filename}:{code.co_firstlineno} in user_step was "
                     f"compiled {torch._dynamo.config.recompile_limit} times (Dynamo's recompile_limit); one more "
                     "compile would run it in eager torch, not on 'onnx'")
    assert why == "  why: Dynamo logged no reason (TORCH_LOGS=recompiles lists each recompile and its guard)"
    assert fix.startswith("  fix: pass dynamic=True for changing sizes")
    assert error.loc.line == code.co_firstlineno
    assert recompile_limit_error(ValueError("x"), user_step, "onnx") is None
