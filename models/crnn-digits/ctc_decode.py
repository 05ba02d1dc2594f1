"""CTC decoding, greedy and prefix beam search: the numpy twin of src/post/ctc.cc.

Same semantics as the C++ decoder used by `onyx ocr`, so that the decodings written into
the reference set on the PyTorch side can be compared with onyx's string for string.
Needs numpy only.

    greedy_decode(scores, blank)              -> labels
    beam_decode(scores, blank, beam_width)    -> labels
    beam_search(log_probs(scores, blank), blank, beam_width) -> (labels, log probability)
    labels_to_text(labels, alphabet, blank)   -> str

Scores are one sequence [T, C] (frames x classes) of float32 logits unless stated.

Greedy: the arg-max class of every frame (ties to the lowest index, NaN never wins, a
frame of NaNs is a blank), runs of one class collapsed, blanks dropped.

Beam: per-frame log-probabilities (log-softmax of logits in float64, summing in class
order; NaN counts as -inf; +inf scores share the frame equally; a frame with no usable
score is a certain blank), then prefix beam search: each prefix keeps the
log-probabilities of its paths ending in a blank (pb) and in its last label (pnb); per
frame every kept prefix is extended by every class whose log-probability is not -inf (a
repeated label extends the prefix only from pb; from pnb it collapses into the same
prefix), and the `beam_width` prefixes with the highest total log(exp(pb) + exp(pnb)) are
kept. The result is the best kept prefix. Ties (equal floats) go to the shorter prefix,
then to the lexicographically smaller label sequence; prefixes are extended in that order
and classes in increasing index, so sums are formed in the same order as in C++.
"""
import math

import numpy as np

NEG_INF = float("-inf")


def greedy_decode(scores, blank=0):
    """[T, C] scores -> list of class indices."""
    scores = np.asarray(scores, dtype=np.float32)
    out, prev = [], -1
    for row in scores:
        valid = ~np.isnan(row)
        if not valid.any():
            best = blank
        else:
            m = row[valid].max()
            best = int(np.flatnonzero(valid & (row == m))[0])
        if best != blank and best != prev:
            out.append(best)
        prev = best
    return out


def log_probs(scores, blank=0, kind="logits"):
    """[T, C] scores -> float64 [T, C] log-probabilities (kind: "logits" or "probabilities")."""
    scores = np.asarray(scores, dtype=np.float32)
    frames, classes = scores.shape
    if not 0 <= blank < classes:
        raise ValueError(f"blank {blank} is outside the {classes} classes")
    lp = np.empty((frames, classes), dtype=np.float64)
    for t in range(frames):
        row = []
        for c in range(classes):
            x = float(scores[t, c])
            if kind == "probabilities":
                x = NEG_INF if math.isnan(x) or x <= 0 else math.log(x)
            row.append(NEG_INF if math.isnan(x) else x)
        m = max(row)
        if m == NEG_INF:
            row = [0.0 if c == blank else NEG_INF for c in range(classes)]
        elif math.isinf(m):
            k = float(sum(1 for x in row if x == m))
            row = [-math.log(k) if x == m else NEG_INF for x in row]
        elif kind != "probabilities":
            s = 0.0
            for x in row:
                s += math.exp(x - m)
            log_sum = math.log(s)
            row = [x - m - log_sum for x in row]
        lp[t] = row
    return lp


def _log_add(a, b):
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def beam_search(lp, blank=0, beam_width=10):
    """float64 [T, C] log-probabilities -> (labels, log probability of the labelling)."""
    if beam_width < 1:
        raise ValueError(f"the beam width must be at least 1, got {beam_width}")
    lp = np.asarray(lp, dtype=np.float64)
    frames, classes = lp.shape
    if not 0 <= blank < classes:
        raise ValueError(f"blank {blank} is outside the {classes} classes")

    def order(item):  # best first: higher total, shorter, lexicographically smaller
        prefix, (_, _, total) = item
        return (-total, len(prefix), prefix)

    beams = [((), (0.0, NEG_INF, 0.0))]
    for t in range(frames):
        nxt = {}

        def add(prefix, pb, pnb):
            b0, n0 = nxt.get(prefix, (NEG_INF, NEG_INF))
            nxt[prefix] = (_log_add(b0, pb), _log_add(n0, pnb))

        for prefix, (pb, pnb, _) in beams:
            both = _log_add(pb, pnb)
            last = prefix[-1] if prefix else -1
            for c in range(classes):
                p = float(lp[t, c])
                if p == NEG_INF or math.isnan(p):
                    continue
                if c == blank:
                    add(prefix, both + p, NEG_INF)
                elif c == last:
                    add(prefix, NEG_INF, pnb + p)
                    add(prefix + (c,), NEG_INF, pb + p)
                else:
                    add(prefix + (c,), NEG_INF, both + p)
        cands = [(k, (b, n, _log_add(b, n))) for k, (b, n) in nxt.items()]
        cands = [c for c in cands if c[1][2] != NEG_INF]
        if not cands:
            raise ValueError(f"frame {t} gives every prefix probability 0")
        beams = sorted(cands, key=order)[:beam_width]
    prefix, (_, _, total) = beams[0]
    return list(prefix), total


def beam_decode(scores, blank=0, beam_width=10, kind="logits"):
    """[T, C] scores -> list of class indices (beam_search also gives the log-probability)."""
    return beam_search(log_probs(scores, blank, kind), blank, beam_width)[0]


def labels_to_text(labels, alphabet, blank=0, classes=None):
    """Class indices -> text. `alphabet` lists the non-blank classes in order (class k is
    alphabet[k if k < blank else k - 1]), or one entry per class, blank included."""
    symbols = list(alphabet)
    if classes is None:
        classes = len(symbols) + 1
    with_blank = len(symbols) == classes
    if not with_blank and len(symbols) != classes - 1:
        raise ValueError(f"the alphabet has {len(symbols)} symbols but the scores have {classes} classes")
    return "".join(symbols[k if with_blank or k < blank else k - 1] for k in labels)


def decode_batch(logits, alphabet, blank=0, decoder="greedy", beam_width=10):
    """[N, T, C] logits (batch first) -> list of N strings."""
    logits = np.asarray(logits)
    classes = logits.shape[-1]
    out = []
    for seq in logits:
        labels = greedy_decode(seq, blank) if decoder == "greedy" else beam_decode(seq, blank, beam_width)
        out.append(labels_to_text(labels, alphabet, blank, classes))
    return out
