# Type stubs of the onyx Python module (onyx._onyx and onyx/__init__.py).
import enum
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

class OnyxError(RuntimeError): ...
class InvalidGraph(OnyxError): ...
class NotImplemented(OnyxError): ...  # noqa: A001 (onnxruntime's name)
class InvalidArgument(OnyxError): ...
class NoSuchFile(OnyxError): ...
class RuntimeException(OnyxError): ...
class LimitExceeded(OnyxError): ...
class Cancelled(OnyxError): ...

InvalidModel = InvalidGraph
Unsupported = NotImplemented
Fail = OnyxError

class GraphOptimizationLevel(enum.Enum):
    ORT_DISABLE_ALL: int
    ORT_ENABLE_BASIC: int
    ORT_ENABLE_EXTENDED: int
    ORT_ENABLE_ALL: int

class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL: int
    ORT_PARALLEL: int

class SessionOptions:
    intra_op_num_threads: int
    inter_op_num_threads: int
    graph_optimization_level: GraphOptimizationLevel
    reference_kernels: bool
    max_tensor_bytes: int
    max_run_bytes: int
    max_loop_iterations: int
    def __init__(self) -> None: ...

class RunOptions:
    terminate: bool
    def __init__(self) -> None: ...

class NodeArg:
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def shape(self) -> List[Union[int, str, None]]: ...

class ModelMetadata:
    @property
    def producer_name(self) -> str: ...
    @property
    def graph_name(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def graph_description(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def custom_metadata_map(self) -> Dict[str, str]: ...

_Feed = Union[np.ndarray, Sequence[np.ndarray], None]

class InferenceSession:
    def __init__(
        self,
        path_or_bytes: Union[str, bytes, os.PathLike],
        sess_options: Optional[SessionOptions] = None,
        providers: Optional[Sequence[Union[str, Tuple[str, Dict[str, Any]]]]] = None,
        provider_options: Optional[Sequence[Dict[str, Any]]] = None,
    ) -> None: ...
    @property
    def model_path(self) -> str: ...
    def get_inputs(self) -> List[NodeArg]: ...
    def get_outputs(self) -> List[NodeArg]: ...
    def get_overridable_initializers(self) -> List[NodeArg]: ...
    def get_modelmeta(self) -> ModelMetadata: ...
    def get_providers(self) -> List[str]: ...
    def get_provider_options(self) -> Dict[str, Dict[str, str]]: ...
    def get_session_options(self) -> SessionOptions: ...
    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, _Feed],
        run_options: Optional[RunOptions] = None,
    ) -> List[Any]: ...

def ctc_decode(
    logits: np.ndarray,
    alphabet: Union[str, Sequence[str]],
    beam_width: int = 1,
    blank: int = 0,
    layout: str = "NTC",
    scores: str = "logits",
) -> List[str]: ...
def decode_boxes(
    output: np.ndarray,
    score_threshold: float = 0.25,
    iou_threshold: float = 0.45,
    max_detections: int = 300,
    format: str = "cxcywh",
) -> List[List[Dict[str, Any]]]: ...
def nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    classes: Optional[np.ndarray] = None,
    iou_threshold: float = 0.45,
    max_detections: int = 0,
) -> List[int]: ...
def preprocess_text_line(
    image: np.ndarray,
    height: int = 32,
    min_width: int = 16,
    scale: float = 1.0 / 255.0,
    mean: float = 0.5,
    std: float = 0.5,
) -> np.ndarray: ...
def get_available_providers() -> List[str]: ...
def get_all_providers() -> List[str]: ...
def get_device() -> str: ...
def get_version_string() -> str: ...
