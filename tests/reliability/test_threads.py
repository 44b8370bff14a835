"""Issue 15, point 2: other threads and forked children are left alone by a capture."""

from __future__ import annotations

import os
import threading

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.errors import CaptureThreadError


class Waits(nn.Module):
    """A model whose forward pass runs ``during`` (once) while it is being traced."""

    def __init__(self, during) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.during = during

    def forward(self, x):
        self.during()
        return self.lin(x).relu()


def test_an_untraced_model_on_another_thread_runs_untouched_during_a_trace():
    server, x = nn.Sequential(nn.Linear(3, 3), nn.ReLU()), torch.ones(2, 3)
    expected = server(x)
    served, stop, errors, outputs = threading.Event(), threading.Event(), [], []

    def serve():
        while not stop.is_set():
            try:
                outputs.append(torch.equal(server(x) + 0, expected))
                outputs.append(torch.equal(torch.func.vmap(torch.sin)(x), torch.sin(x)))
            except Exception as error:  # any error here is the bug
                errors.append(error)
            served.set()

    worker = threading.Thread(target=serve)
    worker.start()

    def wait_for_the_server():
        served.clear()
        assert served.wait(10)
        served.clear()
        assert served.wait(10)

    try:
        trace = tl.trace(Waits(wait_for_the_server), x)
    finally:
        stop.set()
        worker.join()
    assert errors == [] and all(outputs)
    assert [layer.func_name for layer in trace.layers] == ["input", "linear", "relu", "output"]


def test_the_traced_models_modules_are_still_refused_on_another_thread():
    model_box = []

    def call_lin_on_a_thread():
        errors = []
        worker = threading.Thread(target=lambda: _catching(lambda: model_box[0].lin(torch.ones(3)), errors))
        worker.start()
        worker.join()
        assert isinstance(errors[0], CaptureThreadError)

    model_box.append(Waits(call_lin_on_a_thread))
    with pytest.raises(CaptureThreadError, match="of the traced model was called from a second Python thread"):
        tl.trace(model_box[0], torch.ones(3))


def _catching(call, errors):
    try:
        call()
    except Exception as error:
        errors.append(error)


def test_a_thread_started_during_a_capture_is_refused_only_for_the_capture_and_only_while_it_runs():
    tried, after_capture, results = threading.Event(), threading.Event(), {}
    x = torch.ones(3)

    def worker():
        try:
            results["own tensors"] = (torch.zeros(2) + 1).tolist()  # not the capture's: allowed
            x.sin()  # the capture's input: refused while the capture runs
        except CaptureThreadError as error:
            results["capture tensors"] = error
        tried.set()
        after_capture.wait(10)
        results["after"] = (x.sin() + 1).tolist()  # a torch call and Python calls after the capture
        results["depth after"] = torch._C._len_torch_function_stack()

    thread = threading.Thread(target=worker)

    def start_worker():
        thread.start()
        assert tried.wait(10)

    with pytest.raises(CaptureThreadError, match="started during a capture, reads the traced model's tensors"):
        tl.trace(Waits(start_worker), x)
    after_capture.set()
    thread.join(10)
    assert results["own tensors"] == [1.0, 1.0] and "capture tensors" in results
    assert len(results["after"]) == 3 and results["depth after"] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_captures_starts_clean():
    inside, release = threading.Event(), threading.Event()

    def hold():
        inside.set()
        release.wait(10)

    capturing = threading.Thread(target=lambda: tl.trace(Waits(hold), torch.ones(3)))
    capturing.start()
    assert inside.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: only this thread exists
            code = 1
            try:
                plain = nn.Linear(3, 3)
                plain(torch.ones(3))
                trace = tl.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), torch.ones(3))
                code = 0 if len(trace.layers) == 4 and torch._C._len_torch_function_stack() == 0 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        capturing.join()
    assert os.waitstatus_to_exitcode(status) == 0
