// Shared pieces of the onyx Python module (bindings/python/src).
#pragma once
#include <pybind11/pybind11.h>

#include <vector>

#include "onyx/session.h"

namespace onyx::python {

/// Sets the Python exception of `e`'s ErrorCode (onyx.InvalidArgument, ...).
void raise_onyx_error(const Error& e);

/// A Value for a Python object: None, a numpy array (or what numpy.asarray takes), or,
/// where `sequence` (the input is declared a sequence), a list of arrays. Contiguous arrays
/// are viewed in place and appended to `keep`, which must outlive every use of the value.
/// `want` is the declared element type (kUndefined when unknown): bit-pattern arrays of
/// types numpy lacks take it.
Value to_value(const pybind11::handle& obj, DType want, bool sequence, std::vector<pybind11::object>& keep);

/// A numpy array (sharing the tensor's buffer), a list (sequence) or None.
pybind11::object to_python(Value v);

void bind_session(pybind11::module_& m);
void bind_helpers(pybind11::module_& m);

}  // namespace onyx::python
