"""Static analysis of model source and bytecode (torch-free).

:mod:`torchlens.analysis.sites` holds the call-site key type shared with the runtime capture.
:mod:`torchlens.analysis.predict` predicts a model's layers, labels and passes from its source and
bytecode (:mod:`torchlens.analysis.source` aligns the two; :mod:`torchlens.analysis.interpreter` runs the code
over abstract tensors; :mod:`torchlens.analysis.prediction` groups and labels what it records).
"""
