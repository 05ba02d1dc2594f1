#!/usr/bin/env python3
"""Writes the .npz fixtures of tests/unit/npz_test.cc with numpy (run from this folder).

  savez.npz             np.savez: x float32 [2, 3] = arange(6) / 4, ids int64 [4] = [3, -1, 7, 0]
  savez_compressed.npz  np.savez_compressed of the same arrays plus big float64 [100, 10]
                        = arange(1000) * 0.5 (so deflate really compresses)
  positional.npz        np.savez(arr): one array stored as arr_0
"""
import numpy as np

x = (np.arange(6, dtype=np.float32) / 4).reshape(2, 3)
ids = np.array([3, -1, 7, 0], dtype=np.int64)
big = (np.arange(1000, dtype=np.float64) * 0.5).reshape(100, 10)
np.savez("savez.npz", x=x, ids=ids)
np.savez_compressed("savez_compressed.npz", x=x, ids=ids, big=big)
np.savez("positional.npz", np.array([True, False, True]))
