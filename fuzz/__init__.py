"""Fuzzing the grouping rule: hypothesis-generated models checked three ways.

A drawn *spec* (:mod:`torchlens.fuzz.spec`) is rendered to source (:mod:`torchlens.fuzz.render`), imported as an
``nn.Module`` (:mod:`torchlens.fuzz.build`) and given an expectation by the oracle (:mod:`torchlens.fuzz.oracle`),
which applies the spec's grouping rule to the spec alone. The capture, the static prediction
and the untraced model are compared with it (:mod:`torchlens.fuzz.check`); failures shrink
(:mod:`torchlens.fuzz.shrink`) into regression files. ``python -m torchlens.fuzz`` runs a campaign.

For your own tests, ``models()`` is a hypothesis strategy of generated models::

    from hypothesis import given, settings
    from torchlens.fuzz import models

    @settings(max_examples=50, deadline=None)
    @given(models())
    def test_my_tool(generated):
        model, inputs = generated.make(), generated.inputs()
        expected = generated.expected.layers   # label, func, passes, module, params

Importing this package does not import torch; drawing a model does.
"""

from .strategies import models, specs

__all__ = ["models", "specs"]
