"""One error module at the bottom, all of it public; one wording for refused arguments."""

import inspect

import pytest

from torchlens.analysis import errors
from torchlens.analysis.arguments import check_bool, check_callable, check_choice, check_instance, check_whole
from torchlens.analysis.errors import TorchLensError, TorchLensTypeError, TorchLensValueError


def test_every_error_class_is_listed_and_each_inherits_a_built_in():
    defined = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, TorchLensError)}
    assert defined == set(errors.__all__)
    for name in defined - {"TorchLensError"}:
        bases = getattr(errors, name).__mro__
        assert any(b.__module__ == "builtins" and b not in (Exception, BaseException, object) for b in bases), name


def test_the_public_error_module_reexports_every_error():
    pytest.importorskip("torch")  # tl.errors is the torch side's public face; its import stays torch-free
    import torchlens as tl

    for name in errors.__all__:
        assert getattr(tl.errors, name) is getattr(errors, name)


@pytest.mark.parametrize("check, args, error, message", [
    (check_bool, ("f(flag=...)", "yes"), TorchLensTypeError, "f(flag=...) must be True or False, got 'yes'"),
    (check_bool, ("f(flag=...)", 1), TorchLensTypeError, "must be True or False, got 1"),
    (check_choice, ("f(mode=...)", "edges", ("a", "b")), TorchLensValueError, "must be one of 'a', 'b', got 'edges'"),
    (check_whole, ("f(n=...)", -1), TorchLensValueError, "must be a whole number >= 0, got -1"),
    (check_whole, ("f(n=...)", True), TorchLensTypeError, "must be a whole number >= 0, got True"),
    (check_instance, ("f(x, ...)", 3, str, "a string", "pass a name"), TorchLensTypeError,
     "f(x, ...) must be a string, got int; pass a name"),
    (check_callable, ("f(fn)", 3), TorchLensTypeError, "f(fn) must be callable, got int"),
])
def test_refusals_name_the_argument_the_value_and_what_is_allowed(check, args, error, message):
    with pytest.raises(error) as info:
        check(*args)
    assert message in str(info.value)


def test_accepted_values_come_back():
    assert check_bool("f(flag=...)", False) is False
    assert check_choice("f(mode=...)", False, ("a",), or_false=True) is False
    assert check_choice("f(mode=...)", "a", ("a",)) == "a"
    assert check_whole("f(n=...)", 3, minimum=1) == 3
