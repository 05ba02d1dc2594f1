#!/usr/bin/env python3
"""Builds the bundled demo model: a small CNN (random weights, fixed seed) exported
from PyTorch at opset 17, plus one input image as .npy and PyTorch's output for it.

    /usr/bin/python3 models/tiny-cnn/make_model.py [OUT_DIR]

The committed artifact came from this script; rerunning gives the same contract
(input `image` float[N,1,28,28], output `probs` float[N,10])."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(7)


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(16, 10)

    def forward(self, image):
        return torch.softmax(self.head(self.features(image)), dim=1)


model = TinyCnn()
for m in model.modules():  # give BatchNorm non-trivial statistics
    if isinstance(m, nn.BatchNorm2d):
        m.running_mean.uniform_(-0.5, 0.5)
        m.running_var.uniform_(0.5, 2.0)
model.eval()

# A hand-drawn "7" on a 28x28 canvas, scaled to [0, 1].
img = np.zeros((1, 1, 28, 28), dtype=np.float32)
img[0, 0, 5:8, 6:22] = 1.0
for r in range(8, 24):
    c = 21 - (r - 8) // 2
    img[0, 0, r, c - 1:c + 2] = 1.0

path = os.path.join(out, "tiny-cnn-v1-opset17.onnx")
torch.onnx.export(model, torch.from_numpy(img), path, opset_version=17,
                  input_names=["image"], output_names=["probs"],
                  dynamic_axes={"image": {0: "N"}, "probs": {0: "N"}})
np.save(os.path.join(out, "image.npy"), img)
with torch.no_grad():
    np.save(os.path.join(out, "probs.torch.npy"), model(torch.from_numpy(img)).numpy())
print("wrote", path)
