"""The binding uses only onyx's public API (include/onyx) and the shared pre/post-processing
headers (src/post, src/image/preprocess.h), so it cannot reach into the runtime."""
import re

from conftest import SOURCE

ALLOWED = re.compile(r'^(onyx/[a-z_]+\.h|post/(ctc|boxes)\.h|image/preprocess\.h|module\.h)$')


def test_binding_includes_only_public_headers():
    files = sorted((SOURCE / "bindings" / "python" / "src").glob("*"))
    assert files
    for f in files:
        for inc in re.findall(r'^#include "([^"]+)"', f.read_text(), re.M):
            assert ALLOWED.match(inc), f"{f.name} includes {inc}"
