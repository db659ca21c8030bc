"""Operator methods explain themselves, and a chip behaves as Python expects of attributes."""
import inspect
import pydoc

import numpy as np
import pytest

import dspsim


def test_signature_shows_the_c_arguments_in_order(ft78ne):
    signature = inspect.signature(ft78ne.fp_relu_grad_s)
    assert list(signature.parameters) == ["src0", "src1", "dst", "length", "core_mask", "core",
                                          "numerics", "fidelity"]
    assert signature.parameters["core_mask"].default is None
    assert signature.parameters["core"].kind is inspect.Parameter.KEYWORD_ONLY
    l_relu = inspect.signature(ft78ne.fp_l_relu_grad_s).parameters
    assert l_relu["alpha"].default == 0.01
    private = inspect.signature(ft78ne.fp_smoothl1lossgrad_p)
    assert list(private.parameters)[:6] == ["dy", "dx1", "x1", "x2", "length", "beta"]
    assert "core_mask" not in private.parameters


def test_help_shows_prototype_formula_and_dtypes(mt7004):
    text = pydoc.render_doc(mt7004.hp_relu_grad_s, renderer=pydoc.plaintext)
    assert "void hp_relu_grad_s(half *src0, half *src1, half *dst, int length, int core_mask)" \
        in text
    assert "dst = src0 where src1 > 0, else 0" in text
    assert "fp_relu_grad_s (fp32)" in text and "hp_relu_grad_s (fp16)" in text
    assert "functools" not in text and "partial" not in text
    assert mt7004.hp_relu_grad_s.__name__ == "hp_relu_grad_s"


def test_the_method_runs_the_call(ft78ne):
    ft78ne.write(0xA0000000, np.ones(64, np.float32))
    ft78ne.write(0xA1000000, np.ones(64, np.float32))
    method = ft78ne.fp_relu_grad_s
    result = method(0xA0000000, 0xA1000000, 0xB0000000, 64, core_mask=0x3)
    assert result.cores == (0, 1) and result.cycles > 0
    with pytest.raises(dspsim.ArgumentError, match="missing argument dst, length"):
        method(0xA0000000, 0xA1000000)


@pytest.mark.parametrize("name", ["foo", "_repr_html_", "__array__", "fp_relu_grd_s",
                                  "hp_relu_grad_s"])
def test_hasattr_and_getattr_with_a_default_behave(ft78ne, name):
    assert not hasattr(ft78ne, name)
    assert getattr(ft78ne, name, None) is None


def test_a_misspelt_operator_still_says_what_is_meant(ft78ne):
    with pytest.raises(dspsim.ArgumentError, match="did you mean fp_relu_grad_s"):
        ft78ne.fp_relu_grd_s(0, 0, 0, 0)
    with pytest.raises(AttributeError):
        ft78ne.fp_relu_grd_s  # noqa: B018 - the attribute access is the test
    with pytest.raises(dspsim.DTypeError, match="does not support fp16"):
        ft78ne.hp_relu_grad_s  # noqa: B018
    assert "fp_relu_grad_s" in dir(ft78ne)
