"""The JAX backend: ``tl.trace`` of a Flax NNX module, a ``ClosedJaxpr`` or a function of JAX arrays.

Imported only when a JAX value or module is traced (:func:`torchlens.capture.backends.jax_claims`).
The call is traced to a jaxpr (``jax.make_jaxpr``), the jaxpr is evaluated equation by equation
(:mod:`.evaluate`), and each primitive's outputs are recorded with the call-site key read from
the equation's ``source_info.traceback`` (:mod:`.frames`) and the Flax module call it ran in
(:mod:`.modules`). What comes out is the same :class:`~torchlens.capture.record.RawCapture` a
torch capture produces, grouped by the same code.
"""
