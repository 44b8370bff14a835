"""Static analysis of model source and bytecode (torch-free).

:mod:`analysis.sites` holds the call-site key type shared with the runtime capture.
:mod:`analysis.predict` predicts a model's layers, labels and passes from its source and
bytecode (:mod:`analysis.source` aligns the two; :mod:`analysis.interpreter` runs the code
over abstract tensors; :mod:`analysis.prediction` groups and labels what it records).
"""
