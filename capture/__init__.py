"""Everything that happens while a model runs: interception, scopes, call-site chains.

Produces a flat, append-only record of what ran; no grouping, no labels. The torch-free
parts (:mod:`torchlens.capture.frames`, :mod:`torchlens.capture.standin`) import without torch.
"""
