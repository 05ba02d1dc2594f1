// Small helpers shared by the CLI's subcommands: files, sizes, JSON views of a model.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace onyx::cli {

/// The whole content of `path`; throws onyx::Error (kIo) naming `what` ("meta file")
/// when it cannot be opened.
std::string read_text_file(const std::string& path, const char* what);

/// A byte count for people: "512 B", "1.5 KiB", "3.0 MiB" (1024-based, one decimal).
std::string human_bytes(uint64_t b);

/// `name` as a file name: every character other than letters, digits, '-', '_' and '.'
/// replaced by '_'; an empty name, "." and ".." become "output" (how `onyx run` names
/// its .npy files).
std::string safe_file_name(const std::string& name);

/// A graph input or output as JSON: name, type, dtype (of the innermost element type)
/// and shape (dims as numbers, symbolic dims by name, unknown ones null; null when the
/// value is not a tensor or has no shape).
nlohmann::json value_info_json(const ir::ValueInfo& v);

/// obj[key], or nullptr when the key is missing or null.
const nlohmann::json* member(const nlohmann::json& obj, const char* key);

}  // namespace onyx::cli
