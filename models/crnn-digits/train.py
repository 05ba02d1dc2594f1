#!/usr/bin/python3
"""Trains the digit reader: a CRNN (conv stack -> BiLSTM -> linear) with CTC loss on
synthetic crops preprocessed exactly as at inference (preprocess.py).

    /usr/bin/python3 models/crnn-digits/train.py               # v1: synth.py, ~17 min on 2 cores
    /usr/bin/python3 models/crnn-digits/train.py --version 2   # v2: synth_v2.py, twice the frames, ~23 min
    /usr/bin/python3 models/crnn-digits/train.py --quick       # a 1-minute smoke run

v1 (CRNN) gives W div 4 frames; v2 (CRNN2) W div 2, so that the narrowest digits (6 px
wide after the resize to height 32) still get 3 frames, enough for CTC's blank between
repeated digits. Writes crnn-digits.pt (v1) or crnn-digits-v2.pt next to this file and
prints the exact-string accuracy on a held-out set of 1,000 crops made with another seed.
"""
import argparse
import functools
import math
import multiprocessing as mp
import os
import sys
import time

# OpenBLAS (Debian's torch does its matrix products, the LSTM's above all, through it)
# starts its own threads, which torch.set_num_threads does not govern: on the 2-core
# machine a v2 step took 0.48 s with them and 0.11 s without. --threads still sets torch's.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import preprocess  # noqa: E402
import synth  # noqa: E402
import synth_v2  # noqa: E402

NUM_CLASSES = 1 + len(synth.ALPHABET)  # blank = 0, digit d = d + 1
BLANK = 0
TRAIN_SEED = 1
HOLDOUT_SEED = 2024


class CRNN(nn.Module):
    """[N, 1, 32, W] -> logits [N, W // 4, 11]."""

    def __init__(self):
        super().__init__()

        def block(cin, cout, pool):
            layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]
            if pool:
                layers.append(nn.MaxPool2d(pool, pool))
            return layers

        self.cnn = nn.Sequential(*block(1, 16, (2, 2)), *block(16, 32, (2, 2)), *block(32, 64, None),
                                 *block(64, 64, (2, 1)), *block(64, 64, (2, 1)))  # H: 32 -> 2
        self.rnn = nn.LSTM(128, 64, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(128, NUM_CLASSES)

    def forward(self, x):
        f = self.cnn(x)                       # [N, 64, 2, T]
        f = f.permute(0, 3, 1, 2).flatten(2)  # [N, T, 128]
        f, _ = self.rnn(f)
        return self.fc(f)                     # [N, T, C]


class CRNN2(nn.Module):
    """v2: [N, 1, 32, W] -> logits [N, W // 2, 11]. Width is halved once only; the height
    is reduced faster than in v1 so that the wider feature maps cost about as much."""

    def __init__(self):
        super().__init__()

        def block(cin, cout, pool):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                    nn.MaxPool2d(pool, pool)]

        self.cnn = nn.Sequential(*block(1, 16, (2, 2)), *block(16, 32, (2, 1)), *block(32, 48, (2, 1)),
                                 *block(48, 64, (2, 1)), nn.Conv2d(64, 64, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(64), nn.ReLU(inplace=True))  # H: 32 -> 2, W: W -> W // 2
        self.rnn = nn.LSTM(128, 64, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(128, NUM_CLASSES)

    def forward(self, x):
        f = self.cnn(x)                       # [N, 64, 2, T]
        f = f.permute(0, 3, 1, 2).flatten(2)  # [N, T, 128]
        f, _ = self.rnn(f)
        return self.fc(f)                     # [N, T, C]


# Per version: the network, its frames per input width, the crop generator, the weights file.
VERSIONS = {
    1: (CRNN, lambda width: width // 4, synth, "crnn-digits.pt"),
    2: (CRNN2, lambda width: width // 2, synth_v2, "crnn-digits-v2.pt"),
}
VERSION = 1


def frames(width):
    return VERSIONS[VERSION][1](width)


_RESIZE_WEIGHTS = preprocess.resize_weights


@functools.lru_cache(maxsize=4096)
def _weights(n, m):
    w = _RESIZE_WEIGHTS(n, m)
    w.flags.writeable = False
    return w


def _make(args):
    seed, start, count, version = args
    gen = VERSIONS[version][2]
    # The same arithmetic as preprocess.preprocess_gray, with the filter matrices cached
    # (most crops share their sizes); the result is the same array.
    preprocess.resize_weights = _weights
    try:
        out = []
        for i in range(start, start + count):
            rng = np.random.default_rng([seed, i])
            img, text = gen.make_crop(rng)
            x = preprocess.preprocess_gray(img)[0, 0]
            out.append((x, text))
    finally:
        preprocess.resize_weights = _RESIZE_WEIGHTS
    return out


def make_set(seed, count, workers):
    """`count` preprocessed crops [32, W] float32 with their strings; crop i depends on (seed, i) only."""
    chunk = 500
    jobs = [(seed, s, min(chunk, count - s), VERSION) for s in range(0, count, chunk)]
    if workers > 1:
        with mp.Pool(workers) as pool:
            parts = pool.map(_make, jobs)
    else:
        parts = [_make(j) for j in jobs]
    return [s for p in parts for s in p]


def batches(samples, batch, rng):
    """Batches of similar widths (less padding), in random order."""
    order = sorted(range(len(samples)), key=lambda i: samples[i][0].shape[1] + rng.random())
    groups = [order[i:i + batch] for i in range(0, len(order), batch)]
    rng.shuffle(groups)
    return groups


def collate(samples, idx):
    w = max(samples[i][0].shape[1] for i in idx)
    x = np.empty((len(idx), 1, preprocess.HEIGHT, w), np.float32)
    for k, i in enumerate(idx):
        s = samples[i][0]
        x[k, 0, :, :s.shape[1]] = s
        x[k, 0, :, s.shape[1]:] = s[:, -1:]  # pad by repeating the last column
    texts = [samples[i][1] for i in idx]
    targets = torch.tensor([synth.ALPHABET.index(c) + 1 for t in texts for c in t], dtype=torch.long)
    tlen = torch.tensor([len(t) for t in texts], dtype=torch.long)
    ilen = torch.tensor([frames(samples[i][0].shape[1]) for i in idx], dtype=torch.long)
    return torch.from_numpy(x), targets, ilen, tlen


def greedy(logits, length):
    best = logits[:length].argmax(-1).tolist()
    out, prev = [], BLANK
    for b in best:
        if b != prev and b != BLANK:
            out.append(synth.ALPHABET[b - 1])
        prev = b
    return "".join(out)


def evaluate(model, samples, batch=64):
    model.eval()
    right = 0
    with torch.no_grad():
        for s in range(0, len(samples), batch):
            idx = list(range(s, min(s + batch, len(samples))))
            x, _, ilen, _ = collate(samples, idx)
            logits = model(x)
            for k, i in enumerate(idx):
                right += greedy(logits[k], int(ilen[k])) == samples[i][1]
    model.train()
    return right / len(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", type=int, choices=sorted(VERSIONS), default=1)
    ap.add_argument("--samples", type=int, default=None, help="synthetic training crops (default 60000, v2 80000)")
    ap.add_argument("--epochs", type=int, default=None, help="default 4")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a busy 2-core machine more threads are far slower)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes that synthesize the data")
    ap.add_argument("--quick", action="store_true", help="tiny run to check the pipeline")
    ap.add_argument("--out", help="the weights file (default crnn-digits.pt, v2 crnn-digits-v2.pt, next to this file)")
    ap.add_argument("--seed", type=int, default=0, help="torch seed: initial weights (the data have their own seeds)")
    a = ap.parse_args()
    global VERSION
    VERSION = a.version
    net, _, _, weights = VERSIONS[a.version]
    a.out = a.out or os.path.join(HERE, weights)
    if a.samples is None:
        a.samples = 60000 if a.version == 1 else 80000
    if a.epochs is None:
        a.epochs = 4
    if a.quick:
        a.samples, a.epochs = 2000, 1
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    t0 = time.time()
    train = make_set(TRAIN_SEED, a.samples, a.workers)
    hold = make_set(HOLDOUT_SEED, 1000 if not a.quick else 200, a.workers)
    print(f"data: {len(train)} training crops, {len(hold)} held-out, {time.time() - t0:.0f} s", flush=True)

    model = net()
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=1e-4)
    steps = a.epochs * math.ceil(len(train) / a.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=steps, pct_start=0.15)
    ctc = nn.CTCLoss(blank=BLANK, zero_infinity=True)
    rng = np.random.default_rng(0)
    step = 0
    for epoch in range(a.epochs):
        total, n = 0.0, 0
        for idx in batches(train, a.batch, rng):
            x, targets, ilen, tlen = collate(train, idx)
            logp = model(x).log_softmax(-1).permute(1, 0, 2)  # [T, N, C]
            loss = ctc(logp, targets, ilen, tlen)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
            total += float(loss)
            n += 1
            step += 1
            if step % 200 == 0:
                print(f"  step {step}/{steps}  loss {total / n:.4f}  {time.time() - t0:.0f} s", flush=True)
        acc = evaluate(model, hold)
        print(f"epoch {epoch + 1}/{a.epochs}: loss {total / max(n, 1):.4f}, held-out exact-string accuracy "
              f"{acc * 100:.1f}%, {time.time() - t0:.0f} s", flush=True)
        torch.save(model.state_dict(), a.out)  # the latest epoch's weights, should a long run be stopped
    torch.save(model.state_dict(), a.out)
    print(f"wrote {a.out} (held-out accuracy {acc * 100:.2f}%, {time.time() - t0:.0f} s in all)")


if __name__ == "__main__":
    main()
