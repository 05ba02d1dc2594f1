#!/usr/bin/env python3
"""Writes a parity dataset from an export script: the inputs and PyTorch's outputs for them,
one np.savez file per sample, in the layout `onyx parity` reads.

    from onyx_parity_ref import save_torch_reference
    save_torch_reference(model, samples, "data/inputs", "data/torch",
                         input_names=["image"], output_names=["logits"])
    # then: onyx parity model.onnx --inputs data/inputs --reference data/torch
    # and, for onnxruntime's outputs of the same inputs:
    #   node tests/models/ort_reference.js model.onnx --inputs data/inputs --output data/ort

`samples` is a list (or dict name -> sample) whose items are a numpy array or torch tensor
(one input), a tuple of them (inputs in `input_names` order) or a dict name -> array. Sample
NAME becomes inputs_dir/NAME.npz (arrays keyed by input name) and reference_dir/NAME.npz
(arrays keyed by output name); reference_dir/reference.json names the source
("torch 1.13.1"). Use the same names as torch.onnx.export's input_names/output_names.

Only numpy is needed to import this module; torch is imported when a model is run.
"""
import json
import os
import re

import numpy as np

__all__ = ["save_sample", "save_torch_reference", "array_key"]


def array_key(name):
    """The array name onyx looks for: characters other than letters, digits, '-', '_' and
    '.' become '_' (the same rule as `onyx run` output files)."""
    s = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return "output" if s in ("", ".", "..") else s


def _to_numpy(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x))


def _as_dict(values, names, what):
    if isinstance(values, dict):
        return {k: _to_numpy(v) for k, v in values.items()}
    if not isinstance(values, (list, tuple)):
        values = (values,)
    if names is None:
        names = [f"{what}_{i}" for i in range(len(values))] if len(values) > 1 else [what]
    if len(names) != len(values):
        raise ValueError(f"{len(values)} {what}s but {len(names)} names ({names})")
    return {n: _to_numpy(v) for n, v in zip(names, values)}


def save_sample(path, arrays, compressed=False):
    """Writes one sample (dict name -> array) as PATH (an .npz file)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    arrays = {array_key(k): _to_numpy(v) for k, v in arrays.items()}
    (np.savez_compressed if compressed else np.savez)(path, **arrays)


def save_torch_reference(model, samples, inputs_dir, reference_dir, input_names=None,
                         output_names=None, compressed=False, source=None):
    """Runs `model` (eval mode, no grad) on every sample and writes the inputs to
    inputs_dir and the outputs to reference_dir, one NAME.npz each. Returns the names."""
    import torch  # only needed here

    if isinstance(samples, dict):
        items = list(samples.items())
    else:
        width = max(3, len(str(len(samples) - 1)))
        items = [(f"sample_{i:0{width}d}", s) for i, s in enumerate(samples)]
    model.eval()
    names = []
    with torch.no_grad():
        for name, sample in items:
            feeds = _as_dict(sample, input_names, "input")
            args = [torch.from_numpy(feeds[n]) for n in (input_names or list(feeds))]
            out = model(*args)
            if isinstance(out, dict):
                out = {k: v for k, v in out.items()}
            outs = _as_dict(out, output_names, "output")
            save_sample(os.path.join(inputs_dir, name + ".npz"), feeds, compressed)
            save_sample(os.path.join(reference_dir, name + ".npz"), outs, compressed)
            names.append(name)
    with open(os.path.join(reference_dir, "reference.json"), "w") as f:
        json.dump({"source": source or f"torch {torch.__version__}", "samples": len(names)}, f, indent=1)
        f.write("\n")
    return names
