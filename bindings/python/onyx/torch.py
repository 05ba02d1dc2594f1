"""onyx.torch.verify: export a PyTorch model to ONNX and check that onyx runs it as PyTorch does.

One call does the export checklist: eval mode, ``torch.onnx.export``, the checks of
``onyx check --strict`` (``onyx.check_model``), PyTorch against onyx on the example input,
on every dataset sample and, when some axes are dynamic, on an input whose dynamic dims
differ from the example's (a shape the tracer baked into the graph shows up there), then
``parity.json`` and ``MODEL.md`` beside the file. torch is imported when verify is called,
so ``import onyx`` works without it.

onnxruntime is not compared: Debian has no Python onnxruntime. ``onyx parity --reference``
against onnxruntime-node (tests/models/ort_reference.js) does that from the CLI.
"""
import datetime as _datetime
import hashlib as _hashlib
import json as _json
import os as _os
import pathlib as _pathlib
import shutil as _shutil
import subprocess as _subprocess
import tempfile as _tempfile

import numpy as _np

from . import InferenceSession as _InferenceSession
from . import OnyxError as _OnyxError
from . import __version__ as _onyx_version
from . import check_model as _check_model
from . import ctc_decode as _ctc_decode
from . import decode_boxes as _decode_boxes


class ParityError(_OnyxError):
    """onyx's outputs differ from PyTorch's: the message names the first mismatching output
    and sample; ``.report`` is the VerifyReport (parity.json and MODEL.md are written)."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class CheckError(_OnyxError):
    """The exported file fails ``onyx check --strict`` (``.check`` is the onyx.CheckReport)."""

    def __init__(self, message, check=None):
        super().__init__(message)
        self.check = check


class OutputStats:
    """Errors of one output over all compared samples."""

    def __init__(self, name):
        self.name = name
        self.samples = 0
        self.within_tolerance = 0
        self.max_abs_error = 0.0
        self.max_rel_error = 0.0
        self.worst_sample = None
        self.worst_ratio = -1.0

    def as_dict(self):
        return dict(self.__dict__)

    def __repr__(self):
        return (f"<OutputStats {self.name}: {self.within_tolerance}/{self.samples} within tolerance, max abs "
                f"{self.max_abs_error:.3g}, max rel {self.max_rel_error:.3g}, worst sample {self.worst_sample}>")


class VerifyReport:
    """What verify found. ``passed`` is the verdict; ``failures`` lists every mismatch as
    (sample, output, message), the first one being what ParityError names."""

    def __init__(self):
        self.passed = False
        self.path = None
        self.sha256 = None
        self.opset = None
        self.versions = {}
        self.samples = []          # sample names, in the order compared
        self.outputs = {}          # output name -> OutputStats
        self.worst_sample = None   # (sample, output) with the largest error relative to the tolerance
        self.failures = []
        self.warnings = []
        self.check = None          # onyx.CheckReport
        self.decode = None         # {"type": "ctc"|"boxes", ...} summary
        self.parity_json = None
        self.card = None
        self.rtol = self.atol = None

    @property
    def max_abs_error(self):
        return {k: v.max_abs_error for k, v in self.outputs.items()}

    @property
    def max_rel_error(self):
        return {k: v.max_rel_error for k, v in self.outputs.items()}

    def as_dict(self):
        d = {k: v for k, v in self.__dict__.items() if k not in ("outputs", "check")}
        d["outputs"] = {k: v.as_dict() for k, v in self.outputs.items()}
        d["check"] = None if self.check is None else {"valid": self.check.valid, "strict_ok": self.check.strict_ok,
                                                      "lines": list(self.check.lines)}
        return d

    def __repr__(self):
        outs = ", ".join(f"{k} max abs {v.max_abs_error:.3g} rel {v.max_rel_error:.3g}" for k, v in self.outputs.items())
        return (f"<VerifyReport {'PASS' if self.passed else 'FAIL'} {self.path}: {len(self.samples)} samples, {outs}; "
                f"worst {self.worst_sample}; {len(self.warnings)} warnings>")


def _flat_tensors(value, what):
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out += _flat_tensors(v, what)
        return out
    if isinstance(value, dict):
        return _flat_tensors(list(value.values()), what)
    raise TypeError(f"onyx.torch.verify: {what} holds a {type(value).__name__}; expected tensors (or tuples of them)")


def _as_args(sample):
    """A sample as the positional arguments of model(...)."""
    return tuple(sample) if isinstance(sample, (tuple, list)) else (sample,)


def _dynamic_sample(args, input_names, dynamic_axes):
    """The example with every dynamic dim grown by a quarter (at least 1): rows repeated from
    the start of that axis, so the values stay like the example's. Dims that share a
    symbolic name grow alike."""
    import torch

    def axes_of(name):
        spec = dynamic_axes.get(name)
        if spec is None:
            return {}
        return dict(spec) if isinstance(spec, dict) else {int(a): f"{name}_dim{a}" for a in spec}

    sizes = {}
    out = []
    for i, x in enumerate(args):
        name = input_names[i] if i < len(input_names) else None
        if not isinstance(x, torch.Tensor) or name is None:
            out.append(x)
            continue
        for axis, sym in sorted(axes_of(name).items()):
            axis = axis % x.dim()
            n = x.shape[axis]
            new = sizes.setdefault(sym, n + max(1, n // 4))
            while x.shape[axis] < new:
                x = torch.cat([x, x.narrow(axis, 0, min(x.shape[axis], new - x.shape[axis]))], dim=axis)
        out.append(x)
    return tuple(out)


def _active_dropout(model):
    import torch

    kinds = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d, torch.nn.AlphaDropout,
             torch.nn.FeatureAlphaDropout) if hasattr(torch.nn, "Dropout1d") else (torch.nn.modules.dropout._DropoutNd,)
    names = []
    for name, m in model.named_modules():
        if isinstance(m, kinds) and m.training and getattr(m, "p", 0) > 0:
            names.append(name or type(m).__name__)
    mha = [name for name, m in model.named_modules()
           if isinstance(m, torch.nn.MultiheadAttention) and m.training and m.dropout > 0]
    return names + mha


def _compare(got, want, rtol, atol):
    """(within, max_abs, max_rel, ratio, where) of onyx's `got` against PyTorch's `want`, by
    numpy's allclose rule |got - want| <= atol + rtol * |want| (NaN matches NaN)."""
    if got.shape != want.shape:
        return False, float("inf"), float("inf"), float("inf"), f"shape {list(got.shape)}, PyTorch {list(want.shape)}"
    if got.size == 0:
        return True, 0.0, 0.0, 0.0, ""
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        g = got.astype(_np.float64)
        w = want.astype(_np.float64)
        both_nan = _np.isnan(g) & _np.isnan(w)
        diff = _np.where(both_nan, 0.0, _np.abs(g - w))
        diff = _np.where(_np.isnan(diff), _np.inf, diff)
        bound = atol + rtol * _np.abs(w)
        ratio_all = diff / _np.where(bound > 0, bound, _np.finfo(_np.float64).tiny)
        big = _np.abs(w) >= atol
        max_rel = float(_np.max(diff[big] / _np.abs(w[big]))) if big.any() else 0.0
        k = int(_np.argmax(ratio_all))
        at = _np.unravel_index(k, got.shape)
        where = f"at {list(map(int, at))}: onyx {g[at]!r}, PyTorch {w[at]!r}"
        return bool((diff <= bound).all()), float(diff.max()), max_rel, float(ratio_all.max()), where
    same = got == want
    k = int(_np.argmin(same)) if not same.all() else 0
    at = _np.unravel_index(k, got.shape)
    return bool(same.all()), 0.0 if same.all() else float("inf"), 0.0, 0.0 if same.all() else float("inf"), \
        f"at {list(map(int, at))}: onyx {got[at]!r}, PyTorch {want[at]!r}"


def _iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _match_boxes(got, want, min_iou):
    """Greedy match (by PyTorch's score order) of onyx's boxes to PyTorch's, same class.
    Returns (ious of matched pairs, unmatched PyTorch boxes, unmatched onyx boxes)."""
    used = set()
    ious = []
    missed = 0
    for w in want:
        best, best_j = -1.0, None
        for j, g in enumerate(got):
            if j in used or g["class"] != w["class"]:
                continue
            v = _iou(g["box"], w["box"])
            if v > best:
                best, best_j = v, j
        if best_j is not None and best >= min_iou:
            used.add(best_j)
            ious.append(best)
        else:
            missed += 1
    return ious, missed, len(got) - len(used)


def _find_cli(onyx_cli):
    if onyx_cli:
        return _os.path.abspath(onyx_cli) if _os.sep in str(onyx_cli) else onyx_cli
    if _os.environ.get("ONYX_CLI"):
        return _os.path.abspath(_os.environ["ONYX_CLI"])
    beside = _pathlib.Path(__file__).resolve().parents[2] / "onyx"  # build/python/onyx/ -> build/onyx
    if beside.is_file() and _os.access(beside, _os.X_OK):
        return str(beside)
    return _shutil.which("onyx")


def _sha256(path):
    h = _hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_files(report, cli, path, samples, torch_out, input_names, output_names, decode_args, meta, parity_path,
                 card_path):
    """parity.json (`onyx parity --json` on the samples, PyTorch's outputs as the reference)
    and MODEL.md (`onyx card`), made by the onyx tool so they are the CLI's own files."""
    import torch

    with _tempfile.TemporaryDirectory(prefix="onyx-verify-") as tmp:
        # Relative folder names: parity.json and the card name the reference folder.
        ins, ref = "verify-inputs", "verify-pytorch"
        _os.makedirs(_os.path.join(tmp, ins))
        _os.makedirs(_os.path.join(tmp, ref))
        for name, args in samples:
            _np.savez(_os.path.join(tmp, ins, name + ".npz"),
                      **{n: a.detach().cpu().numpy() for n, a in zip(input_names, args)})
            _np.savez(_os.path.join(tmp, ref, name + ".npz"), **dict(zip(output_names, torch_out[name])))
        with open(_os.path.join(tmp, ref, "reference.json"), "w") as f:
            _json.dump({"source": f"PyTorch {torch.__version__} (onyx.torch.verify)"}, f)
        # The model by its file name (a link in tmp), so parity.json names no folder of this machine.
        model_arg = _os.path.basename(path)
        try:
            _os.symlink(_os.path.abspath(path), _os.path.join(tmp, model_arg))
        except OSError:
            model_arg = _os.path.abspath(path)
        cmd = [cli, "parity", model_arg, "--inputs", ins, "--reference", ref, "--rtol", repr(report.rtol), "--atol",
               repr(report.atol), "--json"] + decode_args
        res = _subprocess.run(cmd, stdout=_subprocess.PIPE, stderr=_subprocess.PIPE, text=True, cwd=tmp)
        parity = _json.loads(res.stdout) if res.stdout.strip().startswith("{") else None
        if parity is None:
            raise _OnyxError(f"onyx.torch.verify: `{' '.join(cmd)}` failed: {res.stderr.strip()}")
        with open(parity_path, "w") as f:
            f.write(res.stdout)
        report.parity_json = parity_path
        if parity.get("pass") != report.passed:
            report.warnings.append(f"`onyx parity` says {'pass' if parity.get('pass') else 'fail'}, verify says "
                                   f"{'pass' if report.passed else 'fail'}")
        meta_file = None
        if isinstance(meta, dict):
            meta_file = _os.path.join(tmp, "meta.json")
            with open(meta_file, "w") as f:
                _json.dump(meta, f, indent=2)
        elif meta:
            meta_file = str(meta)
        cmd = [cli, "card", path, "--parity", parity_path, "-o", card_path] + (["--meta", meta_file] if meta_file else [])
        res = _subprocess.run(cmd, stdout=_subprocess.PIPE, stderr=_subprocess.PIPE, text=True)
        if res.returncode != 0:
            raise _OnyxError(f"onyx.torch.verify: `{' '.join(cmd)}` failed: {res.stderr.strip()}")
        report.card = card_path


def verify(model, example_inputs, path, *, input_names, output_names, dynamic_axes=None, opset=17, dataset=None,
           decode=None, rtol=1e-3, atol=1e-4, alphabet=None, blank=0, decode_output=None, score_threshold=0.25,
           iou_threshold=0.45, box_format="cxcywh", match_iou=0.5, dynamic_inputs=None, export_options=None,
           meta=None, write_files=True, parity_path=None, card_path=None, onyx_cli=None):
    """Exports `model` to `path` with torch.onnx.export and checks that onyx runs it as PyTorch does.

    Steps: the model goes to eval mode (a warning in the report when it was in training mode
    or held active dropout); torch.onnx.export(model, example_inputs, path, opset_version=opset,
    input_names, output_names, dynamic_axes, do_constant_folding=True, **export_options);
    onnx.checker (full check) and onyx.check_model, which must pass as `onyx check --strict`
    does (else CheckError); PyTorch and onyx.InferenceSession on example_inputs, on every
    sample of `dataset` and, when dynamic_axes is given, on `dynamic_inputs` (default: the
    example with every dynamic dim grown by a quarter), each output compared elementwise by
    |onyx - torch| <= atol + rtol * |torch|.

    decode="ctc" also compares the greedy CTC strings of `decode_output` (default the first
    output, [N, T, C]) through onyx.ctc_decode with `alphabet` and `blank`; decode="boxes"
    decodes YOLO-style outputs with onyx.decode_boxes (score_threshold, iou_threshold,
    box_format) and needs every PyTorch box matched by an onyx box of its class with
    IoU >= match_iou.

    Samples: example_inputs and each dataset item are a tensor or a tuple of tensors (the
    model's positional arguments); `dataset` may be a dict {sample name: sample}, else
    samples are named 0000, 0001, ... The example is 'example', the dynamic probe 'dynamic'.

    Files (write_files=True): parity.json (`onyx parity --json`, PyTorch's outputs as the
    reference) and MODEL.md (`onyx card`, with `meta`: a dict or a meta.json path) beside
    `path` (or at parity_path, card_path), made by the onyx tool (onyx_cli, $ONYX_CLI, the
    build folder's onyx or PATH); without the tool they are skipped with a warning.

    Returns a VerifyReport (passed, worst_sample, outputs with max abs/rel errors,
    versions of torch/onnx/onyx, opset, sha256, warnings). Raises ParityError naming the
    first mismatching output and sample, after writing the files.
    """
    import torch

    report = VerifyReport()
    report.rtol, report.atol = rtol, atol
    report.path = str(path)
    report.opset = opset
    if decode not in (None, "ctc", "boxes"):
        raise ValueError(f"onyx.torch.verify: decode={decode!r}; expected None, 'ctc' or 'boxes'")
    if decode == "ctc" and alphabet is None:
        raise ValueError("onyx.torch.verify: decode='ctc' needs alphabet= (a str, one symbol per character, or a list)")
    input_names = list(input_names)
    output_names = list(output_names)

    active = _active_dropout(model)
    if model.training:
        report.warnings.append("the model was in training mode; verify put it in eval mode before export"
                               + (f" (active dropout: {', '.join(active)})" if active else ""))
    elif active:
        report.warnings.append(f"the model held active dropout ({', '.join(active)}); verify put it in eval mode")
    model.eval()
    export_options = dict(export_options or {})
    if export_options.get("training") not in (None, torch.onnx.TrainingMode.EVAL):
        report.warnings.append(f"exported with training={export_options['training']}: dropout and batch "
                               "statistics stay as in training, so the graph need not match the eval-mode model")

    args = _as_args(example_inputs)
    export_options.setdefault("do_constant_folding", True)
    torch.onnx.export(model, args, str(path), opset_version=opset, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes, **export_options)
    report.sha256 = _sha256(path)
    report.versions = {"torch": torch.__version__, "onyx": _onyx_version}
    try:
        import onnx

        report.versions["onnx"] = onnx.__version__
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    except ImportError:
        report.warnings.append("onnx is not installed: onnx.checker was not run")
    try:
        import torchvision

        report.versions["torchvision"] = torchvision.__version__
    except ImportError:
        pass
    report.warnings.append("onnxruntime not compared: no Python onnxruntime here (`onyx parity` against "
                           "onnxruntime-node does that from the CLI)")

    report.check = _check_model(str(path), ["cpu"])
    if not report.check.strict_ok:
        raise CheckError(f"onyx.torch.verify: {path} fails `onyx check --strict`:\n  " + "\n  ".join(report.check.lines),
                         report.check)

    samples = [("example", args)]
    if dataset is not None:
        items = dataset.items() if isinstance(dataset, dict) else ((f"{i:04d}", s) for i, s in enumerate(dataset))
        samples += [(str(k), _as_args(s)) for k, s in items]
    if dynamic_axes:
        probe = _as_args(dynamic_inputs) if dynamic_inputs is not None else _dynamic_sample(args, input_names, dynamic_axes)
        samples.append(("dynamic", probe))
    report.samples = [n for n, _ in samples]

    sess = _InferenceSession(str(path))
    declared = [i.name for i in sess.get_inputs()]
    report.outputs = {n: OutputStats(n) for n in output_names}
    dec_out = decode_output or output_names[0]
    boxes_total = {"matched": 0, "missed": 0, "extra": 0, "iou_sum": 0.0}
    ctc_total = {"sequences": 0, "exact": 0}
    torch_out = {}
    for name, sample in samples:
        with torch.no_grad():
            want = [t.detach().cpu().numpy() for t in _flat_tensors(model(*sample), "the model's output")]
        if len(want) != len(output_names):
            raise ValueError(f"onyx.torch.verify: the model returns {len(want)} tensors, output_names names "
                             f"{len(output_names)}")
        torch_out[name] = want
        feeds = {n: t.detach().cpu().numpy() for n, t in zip(input_names, sample) if n in declared}
        try:
            got = sess.run(output_names, feeds)
        except _OnyxError as e:
            shapes = ", ".join(f"{n} {list(a.shape)}" for n, a in feeds.items())
            outs = ", ".join(f"'{o}'" for o in output_names)
            report.failures.append((name, None, f"onyx failed on sample '{name}' ({shapes}), outputs {outs} not "
                                    f"computed: {e}"))
            continue
        for oname, g, w in zip(output_names, got, want):
            st = report.outputs[oname]
            within, mabs, mrel, ratio, where = _compare(g, w, rtol, atol)
            st.samples += 1
            st.within_tolerance += within
            st.max_abs_error = max(st.max_abs_error, mabs)
            st.max_rel_error = max(st.max_rel_error, mrel)
            if ratio > st.worst_ratio:
                st.worst_ratio, st.worst_sample = ratio, name
            if not within:
                report.failures.append((name, oname, f"output '{oname}' differs from PyTorch on sample '{name}' "
                                        f"(rtol {rtol}, atol {atol}): {where}"))
            if oname != dec_out or g.shape != w.shape:
                continue
            if decode == "ctc":
                tg = _ctc_decode(g, alphabet, blank=blank)
                tw = _ctc_decode(w, alphabet, blank=blank)
                ctc_total["sequences"] += len(tw)
                for k, (a, b) in enumerate(zip(tg, tw)):
                    ctc_total["exact"] += a == b
                    if a != b:
                        report.failures.append((name, oname, f"CTC decoding of output '{oname}' differs on sample "
                                                f"'{name}' (sequence {k}): onyx {a!r}, PyTorch {b!r}"))
            elif decode == "boxes":
                opts = dict(score_threshold=score_threshold, iou_threshold=iou_threshold, format=box_format)
                for k, (bg, bw) in enumerate(zip(_decode_boxes(g, **opts), _decode_boxes(w, **opts))):
                    ious, missed, extra = _match_boxes(bg, bw, match_iou)
                    boxes_total["matched"] += len(ious)
                    boxes_total["missed"] += missed
                    boxes_total["extra"] += extra
                    boxes_total["iou_sum"] += sum(ious)
                    if missed or extra:
                        report.failures.append((name, oname, f"boxes of output '{oname}' differ on sample '{name}' "
                                                f"(image {k}): {missed} PyTorch boxes without an onyx box of IoU >= "
                                                f"{match_iou}, {extra} onyx boxes without a PyTorch one"))
    worst = max(report.outputs.values(), key=lambda s: s.worst_ratio, default=None)
    if worst is not None and worst.worst_sample is not None:
        report.worst_sample = (worst.worst_sample, worst.name)
    if decode == "ctc":
        report.decode = {"type": "ctc", "output": dec_out, "sequences": ctc_total["sequences"],
                         "exact_matches": ctc_total["exact"]}
    elif decode == "boxes":
        m = boxes_total["matched"]
        report.decode = {"type": "boxes", "output": dec_out, "matched": m, "missed": boxes_total["missed"],
                         "extra": boxes_total["extra"], "mean_iou": boxes_total["iou_sum"] / m if m else None}
    report.passed = not report.failures

    if write_files:
        cli = _find_cli(onyx_cli)
        folder = _os.path.dirname(_os.path.abspath(str(path)))
        if cli is None:
            report.warnings.append("parity.json and MODEL.md not written: the onyx tool was not found "
                                   "(onyx_cli=, $ONYX_CLI or PATH)")
        else:
            decode_args = []
            if decode == "ctc":
                alpha_dir = _tempfile.mkdtemp(prefix="onyx-verify-alphabet-")
                alpha = _os.path.join(alpha_dir, "alphabet.txt")
                with open(alpha, "w", encoding="utf-8") as f:
                    f.write(("".join(alphabet) if isinstance(alphabet, str) else "\n".join(alphabet)) + "\n")
                decode_args = ["--decode", "ctc", "--alphabet", alpha, "--blank", str(blank), "--decode-output",
                               dec_out]
            elif decode == "boxes":
                decode_args = ["--decode", "boxes", "--decode-output", dec_out, "--score-threshold",
                               repr(score_threshold), "--iou-threshold", repr(iou_threshold), "--box-format",
                               box_format]
            if meta is None:
                meta = {"export": {"exporter": "torch.onnx.export", "opset": opset,
                                   "date": _datetime.date.today().isoformat(), "script": "onyx.torch.verify",
                                   **{k: v for k, v in report.versions.items() if k != "onyx"}},
                        "verification": f"onyx.torch.verify (onyx {_onyx_version}): PyTorch against onyx on "
                                        f"{len(samples)} samples; onnxruntime not compared (no Python onnxruntime "
                                        "here)"}
            try:
                _write_files(report, cli, str(path), samples, torch_out, input_names, output_names, decode_args, meta,
                             parity_path or _os.path.join(folder, "parity.json"),
                             card_path or _os.path.join(folder, "MODEL.md"))
            finally:
                if decode == "ctc":
                    _shutil.rmtree(alpha_dir, ignore_errors=True)
    if report.failures:
        first = report.failures[0][2]
        more = len(report.failures) - 1
        raise ParityError(f"onyx.torch.verify: {path}: {first}" + (f" (and {more} more mismatches)" if more else ""),
                          report)
    return report
